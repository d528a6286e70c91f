//! Patch machinery: JSON patches applied without panics, strategic merge patch for
//! built-in types, and managedFields / server-side apply field ownership.

pub(crate) mod json;
pub(crate) mod managed_fields;
pub(crate) mod strategic_merge;
