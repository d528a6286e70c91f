//! [`PortForwardAllowlist`]: the host addresses a Pod's port-forward may reach.
//!
//! A simulated Pod has no network of its own: its port-forward dials the host address its
//! `port-forward.kubeclient.dev/<port>` annotation names. Without a rule, anyone who may
//! create a Pod could reach any service on the server's host (an etcd on 127.0.0.1:2379,
//! a database, the server's own port). So only the addresses the operator allows
//! (`kubeclient serve --port-forward-allow HOST:PORT,...`,
//! `ApiServerBuilder::port_forward_allow`, `ApiServer::allow_port_forward`) are dialled;
//! none by default.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use crate::sync::{read, write};

/// The addresses port-forward may dial; empty by default (nothing is reachable).
///
#[derive(Debug, Default)]
pub(crate) struct PortForwardAllowlist {
    addresses: std::sync::RwLock<BTreeSet<SocketAddr>>,
}

impl PortForwardAllowlist {
    /// Lets port-forward dial `address` from now on.
    pub(crate) fn allow(&self, address: SocketAddr) {
        write(&self.addresses).insert(address);
    }

    /// Whether port-forward may dial `address`.
    pub(crate) fn allows(&self, address: &SocketAddr) -> bool {
        read(&self.addresses).contains(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_addresses_are_allowed() {
        let allowlist = PortForwardAllowlist::default();
        let database: SocketAddr = "127.0.0.1:5432".parse().expect("address");
        assert!(!allowlist.allows(&database), "nothing by default");
        allowlist.allow(database);
        assert!(allowlist.allows(&database));
        assert!(!allowlist.allows(&"127.0.0.1:5433".parse().expect("address")));
        assert!(!allowlist.allows(&"[::1]:5432".parse().expect("address")));
    }
}
