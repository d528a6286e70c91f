//! What the server does for particular kinds, one file per kind (kube-apiserver's
//! `pkg/registry/<group>/<kind>/`): each holds the kind's [`Strategy`](super::strategy::Strategy)
//! and what else belongs to it.

pub(crate) mod pod;
pub(crate) mod pod_binding;
pub(crate) mod service;
pub(crate) mod service_account;
