//! Custom resources (kube-apiserver's apiextensions-apiserver): what a
//! CustomResourceDefinition serves ([`crd`]) and which definitions are valid
//! ([`crd_validation`]); how the objects of its resources are checked against their
//! version's schema ([`validate_schema`], with its `format`s in [`schema_formats`] and
//! its `pattern`s compiled once per served version in [`schema_patterns`]), pruned and
//! defaulted ([`structural_schema`]), and stored in one version but served in the one
//! asked for ([`version_conversion`], which also serves `events.k8s.io` Events from their
//! core/v1 storage form), through the CRD's webhook when it names one
//! ([`conversion_webhook`], called by [`webhook_converter`]). The custom resources'
//! strategy is `kinds/custom_resource.rs`, the CRDs' `kinds/custom_resource_definition.rs`;
//! deleting a CRD's objects before it goes is the controllers'
//! (`controllers/crd_cleanup_controller.rs`).

pub(crate) mod conversion_webhook;
pub(super) mod crd;
pub(crate) mod crd_validation;
pub(super) mod schema_formats;
pub(crate) mod schema_patterns;
pub(super) mod structural_schema;
pub(super) mod validate_schema;
pub(crate) mod version_conversion;
pub(crate) mod webhook_converter;
