//! [`ListPage`]: one page of a list, as every store answers it.

use std::sync::Arc;

use super::StoredObject;

/// One page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// The revision the list was served at.
    pub revision: u64,
    /// The matching objects, in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// Set when the limit cut the list short: the last key scanned, to continue after.
    pub continue_after: Option<String>,
    /// How many objects (matching or not) are after `continue_after`.
    pub remaining: u64,
}
