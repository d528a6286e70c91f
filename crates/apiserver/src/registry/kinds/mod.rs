//! What the server does for particular kinds, one file per kind (kube-apiserver's
//! `pkg/registry/<group>/<kind>/`): each holds the kind's [`Strategy`](super::strategy::Strategy)
//! and what else belongs to it. A kind not named here gets the generic strategy
//! ([`strategy_for`](super::strategy::strategy_for) says which kind has which).

pub(crate) mod component_status;
pub(crate) mod config_map;
pub(crate) mod custom_resource;
pub(crate) mod custom_resource_definition;
pub(crate) mod event;
pub(crate) mod job;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod persistent_volume;
pub(crate) mod pod;
pub(crate) mod pod_template;
pub(crate) mod secret;
pub(crate) mod service;
pub(crate) mod service_account;
pub(crate) mod simple;
pub(crate) mod workloads;
