//! Lists and their wire form: `{"kind":"PodList","metadata":{...},"items":[...]}`
//! (see `apiserver-semantics.md` §4).
//!
//! [`ListStreamDecoder`] splits a list body into items as its bytes arrive, so the client
//! never holds a whole list twice (raw and decoded) and can decode items on several
//! threads. [`strip_managed_fields`] and [`peek_item_meta`] work on one item's bytes
//! before decoding: dropping what a cache does not need, or finding out that the cache
//! already holds this exact version.

mod decoder;
mod item;
pub(crate) mod json_scan;

pub use decoder::{ItemBatch, ListDecodeError, ListStreamDecoder};
pub use item::{ItemMeta, peek_item_meta, strip_managed_fields};
