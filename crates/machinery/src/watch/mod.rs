//! Watch events and their wire form: one JSON object per line,
//! `{"type":"ADDED","object":{...}}` (see `apiserver-semantics.md` §5.2-5.6).
//!
//! [`WatchStreamDecoder`] turns the chunks of a watch response body into events, however the
//! body was split: one event across many chunks, or many events in one chunk.

mod decoder;
mod event;

pub use decoder::WatchStreamDecoder;
pub use event::{Bookmark, INITIAL_EVENTS_END_ANNOTATION, WatchDecodeError, WatchEvent};
