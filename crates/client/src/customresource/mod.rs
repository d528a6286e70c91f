//! Typed custom resources: [`CustomResourceExt`] (what `#[derive(CustomResource)]`
//! implements), the CustomResourceDefinition it builds, with a structural OpenAPI v3
//! schema generated from the Rust types by schemars, and [`install_crd`] to create or
//! update it and wait until the server serves it; [`merge_crds`] makes one CRD of several
//! versions' types.
//!
//! The derive itself is [`CustomResource`](crate::CustomResource); its documentation lists
//! the attributes.

mod crd;
mod install;
mod merge_crds;
mod structural_schema;

pub use crd::{
    CrdDescription, CustomResourceExt, PrinterColumnDescription, ScaleDescription,
    ValidationRuleDescription, build_crd,
};
pub use install::{CrdError, install_crd};
pub use merge_crds::{MergeCrdsError, merge_crds};
pub use structural_schema::{make_structural, structural_schema};
