//! Custom resources (kube-apiserver's apiextensions-apiserver): what a
//! CustomResourceDefinition serves ([`crd`]) and which definitions are valid
//! ([`crd_validation`]); how the objects of its resources are checked against their
//! version's schema ([`validate_schema`], with its `format`s in [`schema_formats`] and
//! its `pattern`s compiled once per served version in [`schema_patterns`]), pruned and
//! defaulted ([`structural_schema`]), checked against its `x-kubernetes-validations` CEL
//! rules (compiled once per served version in [`cel_rules`], their field selections checked
//! by [`cel_fields`], evaluated by
//! [`cel_validation`] with the Kubernetes libraries of [`cel_library`], [`cel_net`],
//! [`cel_quantity`] and [`cel_format`] (their
//! argument helpers in [`cel_args`]), bounded by [`cel_cost`], on a large stack of [`cel_stack`]), and stored in one version but served in the one
//! asked for ([`version_conversion`], which also serves `events.k8s.io` Events from their
//! core/v1 storage form), through the CRD's webhook when it names one
//! ([`conversion_webhook`], called by [`webhook_converter`]). The custom resources'
//! strategy is `kinds/custom_resource.rs`, the CRDs' `kinds/custom_resource_definition.rs`;
//! deleting a CRD's objects before it goes is the controllers'
//! (`controllers/crd_cleanup_controller.rs`).

pub(super) mod cel_args;
pub(super) mod cel_cost;
pub(super) mod cel_fields;
pub(super) mod cel_format;
pub(super) mod cel_library;
pub(super) mod cel_net;
pub(super) mod cel_quantity;
pub(crate) mod cel_rules;
pub(super) mod cel_stack;
pub(super) mod cel_validation;
pub(super) mod cel_value;
pub(crate) mod conversion_webhook;
pub(super) mod crd;
pub(crate) mod crd_validation;
pub(crate) mod local_validation;
pub(super) mod schema_formats;
pub(crate) mod schema_patterns;
pub(super) mod structural_schema;
pub(super) mod validate_schema;
pub(crate) mod version_conversion;
pub(crate) mod webhook_converter;
