//! What the server does for particular kinds, one file per kind (kube-apiserver's
//! `pkg/registry/<group>/<kind>/`).

pub(crate) mod service_account;
