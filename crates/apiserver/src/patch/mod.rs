//! Patch machinery: JSON patches applied without panics, strategic merge patch for
//! built-in types, and managedFields / server-side apply field ownership.

pub mod json;
pub mod managed_fields;
pub mod strategic_merge;
