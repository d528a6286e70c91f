//! [`EtcdBackend`]: objects in etcd v3, as kube-apiserver stores them — the same keys
//! (see [`keys`]), the same encoding (see [`codec`]), resourceVersion = the key's mod
//! revision, writes as transactions that compare it, watches as etcd watches with the
//! previous values, and etcd's compaction answered as 410 Gone. Several servers over one
//! etcd therefore stay consistent: a conditional write has exactly one winner.

mod codec;
mod config;
mod keyspace;
mod members;
pub(crate) mod test_etcd;
#[cfg(test)]
mod tests;
mod watch;

use std::future::Future;
use std::sync::Arc;

use etcd_client::{
    CompactionOptions, Compare, CompareOp, DeleteOptions, GetOptions, KeyValue, Txn, TxnOp,
    TxnOpResponse, TxnResponse,
};
use futures_util::FutureExt;
use kubeclient_machinery::GroupResource;
use serde_json::Value;

pub use config::EtcdConfig;
use members::{Members, Resend};

use super::{
    Backend, BackendError, BackendFuture, ChangeStream, ListOptions, ListPage, StoredObject, keys,
};

/// What etcd answers for a read at a compacted revision.
const COMPACTED: &str = "required revision has been compacted";
/// How etcd's server errors begin (`etcdserver: request timed out`).
const ETCD_SERVER_ERROR: &str = "etcdserver: ";
/// What etcd answers for a read at a revision it has not reached.
const FUTURE: &str = "required revision is a future revision";

/// A [`Backend`] on an etcd v3 cluster.
///
/// ```no_run
/// use kubeclient_apiserver::storage::{Backend, EtcdBackend, EtcdConfig};
///
/// # async fn run() -> Result<(), kubeclient_apiserver::storage::BackendError> {
/// let etcd = EtcdBackend::connect(EtcdConfig::new(["http://127.0.0.1:2379"])).await?;
/// println!("etcd is at revision {}", etcd.revision().await?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct EtcdBackend {
    members: Members,
    config: EtcdConfig,
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdBackend")
            .field("servers", &self.config.servers)
            .field("prefix", &self.config.prefix)
            .finish_non_exhaustive()
    }
}

impl EtcdBackend {
    /// Connects to the cluster and checks that it answers.
    ///
    /// # Errors
    ///
    /// [`BackendError::Config`] for unreadable TLS files; [`BackendError::Unavailable`]
    /// (naming the endpoints) when no member answers within the connect timeout.
    pub async fn connect(config: EtcdConfig) -> Result<Self, BackendError> {
        let context = format!("connecting to etcd at {}", config.servers.join(","));
        let options = config.connect_options()?;
        let connect = Members::connect(&config.servers, &options);
        let members = match tokio::time::timeout(config.connect_timeout, connect).await {
            Ok(Ok(members)) => members,
            Ok(Err(error)) => return Err(unavailable(&context, error)),
            Err(_) => return Err(not_in_time(&context, config.connect_timeout)),
        };
        let backend = EtcdBackend { members, config };
        let prefix = backend.config.prefix.clone();
        let probe = backend.members.run(Resend::Safe, |mut client| {
            let prefix = prefix.clone();
            async move {
                client
                    .get(prefix, Some(GetOptions::new().with_count_only()))
                    .await
            }
        });
        match tokio::time::timeout(backend.config.connect_timeout, probe).await {
            Ok(Ok(_)) => Ok(backend),
            Ok(Err(error)) => Err(unavailable(&context, error)),
            Err(_) => Err(not_in_time(&context, backend.config.connect_timeout)),
        }
    }

    /// The configuration it was connected with.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// The key of everything of one resource (`/registry/pods/`).
    fn root(&self, resource: &GroupResource) -> String {
        keys::resource_root(&self.config.prefix, resource)
    }

    /// Runs one request on the members (see [`Members::run`]) within the request
    /// timeout: etcd's own error, or `Timeout`.
    async fn attempt<T, F>(
        &self,
        resend: Resend,
        request: impl Fn(etcd_client::Client) -> F,
    ) -> Result<Result<T, etcd_client::Error>, BackendError>
    where
        F: Future<Output = Result<T, etcd_client::Error>>,
    {
        tokio::time::timeout(
            self.config.request_timeout,
            self.members.run(resend, request),
        )
        .await
        .map_err(|_| BackendError::Timeout(self.config.request_timeout))
    }

    /// Runs one request within the request timeout, mapping etcd's errors.
    async fn call<T, F>(
        &self,
        what: &str,
        resend: Resend,
        request: impl Fn(etcd_client::Client) -> F,
    ) -> Result<T, BackendError>
    where
        F: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.attempt(resend, request)
            .await?
            .map_err(|error| unavailable(what, error))
    }

    /// The current revision of the whole cluster.
    async fn current_revision(&self) -> Result<u64, BackendError> {
        let prefix = &self.config.prefix;
        let response = self
            .call("reading etcd's revision", Resend::Safe, |mut client| {
                let options = GetOptions::new().with_count_only();
                async move { client.get(prefix.clone(), Some(options)).await }
            })
            .await?;
        Ok(response.header().map_or(0, |h| revision(h.revision())))
    }

    /// A read at revision `at`: etcd's answers for compacted and future revisions become
    /// 410 and 504.
    async fn read_at(
        &self,
        key: String,
        options: GetOptions,
        at: Option<u64>,
    ) -> Result<etcd_client::GetResponse, BackendError> {
        let options = match at {
            Some(at) if at > 0 => options.with_revision(to_etcd(at)),
            _ => options,
        };
        let what = format!("reading {key}");
        let answer = self
            .attempt(Resend::Safe, |mut client| {
                let (key, options) = (key.clone(), options.clone());
                async move { client.get(key, Some(options)).await }
            })
            .await?;
        match answer {
            Ok(response) => Ok(response),
            Err(error) => {
                let requested = at.unwrap_or(0);
                match status_message(&error) {
                    Some(message) if message.contains(COMPACTED) => Err(BackendError::Expired {
                        requested,
                        oldest: None,
                    }),
                    Some(message) if message.contains(FUTURE) => Err(BackendError::TooLarge {
                        requested,
                        current: self.current_revision().await?,
                    }),
                    _ => Err(unavailable(&what, error)),
                }
            }
        }
    }

    async fn txn(&self, what: &str, txn: Txn) -> Result<TxnResponse, BackendError> {
        self.call(what, Resend::OnlyUnsent, |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        })
        .await
    }

    async fn get_impl(
        &self,
        resource: &GroupResource,
        key: &str,
    ) -> Result<Option<Arc<StoredObject>>, BackendError> {
        let full = format!("{}{key}", self.root(resource));
        let response = self.read_at(full.clone(), GetOptions::new(), None).await?;
        response
            .kvs()
            .first()
            .map(|kv| stored(&full, kv.value(), kv.mod_revision()))
            .transpose()
    }

    async fn list_impl(
        &self,
        resource: &GroupResource,
        options: ListOptions<'_>,
    ) -> Result<ListPage, BackendError> {
        let root = self.root(resource);
        let from = format!("{root}{}", options.prefix);
        let start = match options.start_after {
            Some(after) if after >= options.prefix => format!("{root}{after}\0"),
            _ => from.clone(),
        };
        let mut get = GetOptions::new().with_range(keys::prefix_end(from.as_bytes()));
        if options.limit > 0 {
            get = get.with_limit(i64::try_from(options.limit).unwrap_or(i64::MAX));
        }
        let response = self.read_at(start, get, options.at).await?;
        let at_revision = response.header().map_or(0, |h| revision(h.revision()));
        let mut items = Vec::with_capacity(response.kvs().len());
        for kv in response.kvs() {
            match stored(
                &String::from_utf8_lossy(kv.key()),
                kv.value(),
                kv.mod_revision(),
            ) {
                Ok(object) => items.push(object),
                // kube-apiserver reports and skips what it cannot decode, so one bad
                // value does not make a whole resource unlistable.
                Err(error) => tracing::warn!(error = %error, "skipping a stored object"),
            }
        }
        let continue_after = if response.more() {
            response
                .kvs()
                .last()
                .and_then(|kv| kv.key_str().ok())
                .and_then(|key| key.strip_prefix(&root))
                .map(str::to_owned)
        } else {
            None
        };
        let remaining = if continue_after.is_some() {
            u64::try_from(response.count())
                .unwrap_or(0)
                .saturating_sub(response.kvs().len() as u64)
        } else {
            0
        };
        Ok(ListPage {
            revision: options.at.filter(|at| *at > 0).unwrap_or(at_revision),
            items,
            continue_after,
            remaining,
        })
    }

    async fn create_impl(
        &self,
        resource: &GroupResource,
        key: &str,
        object: Value,
    ) -> Result<Arc<StoredObject>, BackendError> {
        let full = format!("{}{key}", self.root(resource));
        let bytes = encode(&full, &resource.group, object)?;
        let txn = Txn::new()
            .when([Compare::create_revision(full.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(full.clone(), bytes.clone(), None)]);
        let response = self.txn(&format!("creating {full}"), txn).await?;
        if !response.succeeded() {
            return Err(BackendError::AlreadyExists {
                key: key.to_owned(),
            });
        }
        let written = response.header().map_or(0, |h| h.revision());
        stored(&full, &bytes, written)
    }

    async fn update_impl(
        &self,
        resource: &GroupResource,
        key: &str,
        object: Value,
        expected: u64,
    ) -> Result<Arc<StoredObject>, BackendError> {
        let full = format!("{}{key}", self.root(resource));
        let current = self.read_at(full.clone(), GetOptions::new(), None).await?;
        let Some(current) = current.kvs().first() else {
            return Err(not_found(key));
        };
        if revision(current.mod_revision()) != expected {
            return Err(conflict(key, expected, current));
        }
        let bytes = encode(&full, &resource.group, object)?;
        if bytes == current.value() {
            // Nothing changes: kube-apiserver writes nothing and keeps the revision.
            return stored(&full, current.value(), current.mod_revision());
        }
        let txn = Txn::new()
            .when([Compare::mod_revision(
                full.clone(),
                CompareOp::Equal,
                to_etcd(expected),
            )])
            .and_then([TxnOp::put(full.clone(), bytes.clone(), None)])
            .or_else([TxnOp::get(full.clone(), None)]);
        let response = self.txn(&format!("updating {full}"), txn).await?;
        if !response.succeeded() {
            return Err(lost_race(key, expected, &response));
        }
        let written = response.header().map_or(0, |h| h.revision());
        stored(&full, &bytes, written)
    }

    async fn delete_impl(
        &self,
        resource: &GroupResource,
        key: &str,
        expected: Option<u64>,
    ) -> Result<Arc<StoredObject>, BackendError> {
        let full = format!("{}{key}", self.root(resource));
        let compare = match expected {
            Some(expected) => {
                Compare::mod_revision(full.clone(), CompareOp::Equal, to_etcd(expected))
            }
            None => Compare::create_revision(full.clone(), CompareOp::Greater, 0),
        };
        let txn = Txn::new()
            .when([compare])
            .and_then([TxnOp::delete(
                full.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(full.clone(), None)]);
        let response = self.txn(&format!("deleting {full}"), txn).await?;
        if !response.succeeded() {
            return Err(lost_race(key, expected.unwrap_or(0), &response));
        }
        let previous = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(deleted) => deleted.prev_kvs().first().cloned(),
            _ => None,
        });
        let previous = previous.ok_or_else(|| not_found(key))?;
        stored(&full, previous.value(), previous.mod_revision())
    }

    async fn compact_impl(&self) -> Result<u64, BackendError> {
        let current = self.current_revision().await?;
        let answer = self
            .attempt(Resend::Safe, |mut client| async move {
                let options = CompactionOptions::new().with_physical();
                client.compact(to_etcd(current), Some(options)).await
            })
            .await?;
        match answer {
            Ok(_) => Ok(current),
            // Already compacted there: the history is gone either way.
            Err(error) if status_message(&error).is_some_and(|m| m.contains(COMPACTED)) => {
                Ok(current)
            }
            Err(error) => Err(unavailable("compacting etcd", error)),
        }
    }
}

impl Backend for EtcdBackend {
    fn revision(&self) -> BackendFuture<'_, u64> {
        self.current_revision().boxed()
    }

    fn get<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
    ) -> BackendFuture<'a, Option<Arc<StoredObject>>> {
        self.get_impl(resource, key).boxed()
    }

    fn list<'a>(
        &'a self,
        resource: &'a GroupResource,
        options: ListOptions<'a>,
    ) -> BackendFuture<'a, ListPage> {
        self.list_impl(resource, options).boxed()
    }

    fn create<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        self.create_impl(resource, key, object).boxed()
    }

    fn update<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
        expected_revision: u64,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        self.update_impl(resource, key, object, expected_revision)
            .boxed()
    }

    fn delete<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        expected_revision: Option<u64>,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        self.delete_impl(resource, key, expected_revision).boxed()
    }

    fn watch<'a>(
        &'a self,
        resource: &'a GroupResource,
        prefix: &'a str,
        after: u64,
    ) -> BackendFuture<'a, ChangeStream> {
        watch::open(self, resource, prefix, after).boxed()
    }

    fn compact(&self) -> BackendFuture<'_, u64> {
        self.compact_impl().boxed()
    }

    fn list_everything<'a>(
        &'a self,
        at: Option<u64>,
        start_after: Option<&'a str>,
        limit: usize,
    ) -> BackendFuture<'a, super::Everything> {
        self.list_everything_impl(at, start_after, limit).boxed()
    }

    fn watch_everything(&self, after: u64) -> BackendFuture<'_, super::EventStream> {
        self.watch_everything_impl(after).boxed()
    }
}

/// The object stored as `bytes` at `mod_revision`.
fn stored(
    full_key: &str,
    bytes: &[u8],
    mod_revision: i64,
) -> Result<Arc<StoredObject>, BackendError> {
    let value = codec::decode(bytes).map_err(|source| BackendError::Decode {
        key: full_key.to_owned(),
        source,
    })?;
    Ok(Arc::new(StoredObject::new(value, revision(mod_revision))))
}

fn encode(full_key: &str, group: &str, object: Value) -> Result<Vec<u8>, BackendError> {
    codec::encode(group, object).map_err(|source| BackendError::Encode {
        key: full_key.to_owned(),
        source,
    })
}

/// Why a conditional write's transaction failed: the key is gone, or at another
/// revision (the `or_else` branch read it).
fn lost_race(key: &str, expected: u64, response: &TxnResponse) -> BackendError {
    let current = response.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(get) => get.kvs().first().cloned(),
        _ => None,
    });
    match current {
        Some(current) => conflict(key, expected, &current),
        None => not_found(key),
    }
}

fn conflict(key: &str, expected: u64, current: &KeyValue) -> BackendError {
    BackendError::Conflict {
        key: key.to_owned(),
        expected,
        found: revision(current.mod_revision()),
    }
}

fn not_found(key: &str) -> BackendError {
    BackendError::NotFound {
        key: key.to_owned(),
    }
}

/// A failed request: etcd's own errors (`etcdserver: ...`, what kube-apiserver passes
/// on as they are) as [`BackendError::Refused`], the rest (an endpoint that cannot be
/// reached, a broken stream) as [`BackendError::Unavailable`].
fn unavailable(context: &str, error: etcd_client::Error) -> BackendError {
    match status_message(&error) {
        Some(message) if message.starts_with(ETCD_SERVER_ERROR) => BackendError::Refused {
            context: context.to_owned(),
            message: message.to_owned(),
        },
        _ => BackendError::Unavailable {
            context: context.to_owned(),
            source: Box::new(error),
        },
    }
}

fn not_in_time(context: &str, timeout: std::time::Duration) -> BackendError {
    BackendError::Unavailable {
        context: context.to_owned(),
        source: format!("no answer within {timeout:?}").into(),
    }
}

/// The gRPC status message of an etcd error, if it is one.
fn status_message(error: &etcd_client::Error) -> Option<&str> {
    match error {
        etcd_client::Error::GRpcStatus(status) => Some(status.message()),
        _ => None,
    }
}

/// An etcd revision (never negative) as ours.
fn revision(etcd: i64) -> u64 {
    u64::try_from(etcd).unwrap_or(0)
}

/// Our revision as etcd's.
fn to_etcd(revision: u64) -> i64 {
    i64::try_from(revision).unwrap_or(i64::MAX)
}
