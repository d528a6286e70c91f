//! What JSON and protobuf list bodies share once their bytes are split into items: batches
//! of items go to worker threads, and the decoded objects come back into a [`SharedList`]
//! in list order, with the items that did not decode reported instead of failing the list.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kubeclient_machinery::list::ItemMeta;

use super::list_stream::{ItemSink, SharedList};
use super::ordered_decode::OrderedDecoder;
use crate::error::{Error, Result};

/// Gathers the decoded items of one list body, in order.
pub(super) struct ListAssembly<K> {
    url: String,
    decoding: OrderedDecoder<Result<Arc<K>>>,
    list: SharedList<K>,
    next_index: usize,
    /// Where decoded items go instead of `list.items`, if set.
    sink: Option<ItemSink<K>>,
}

impl<K: Send + Sync + 'static> ListAssembly<K> {
    /// An empty list read from `url` (named in every error); decoded items go to `sink`
    /// when one is given (see [`DecodeOptions::item_sink`](super::DecodeOptions::item_sink)).
    pub(super) fn new(url: &str, sink: Option<ItemSink<K>>) -> Self {
        ListAssembly {
            url: url.to_owned(),
            decoding: OrderedDecoder::new(),
            list: SharedList {
                metadata: ListMeta::default(),
                items: Vec::new(),
                skipped: Vec::new(),
            },
            next_index: 0,
            sink,
        }
    }

    /// Queues a batch of `count` items (`bytes` long) for decoding; `decode` is given the
    /// list index of the batch's first item. A panicking decode becomes a skipped item.
    pub(super) fn submit(
        &mut self,
        bytes: usize,
        count: usize,
        decode: impl FnOnce(usize) -> Vec<Result<Arc<K>>> + Send + 'static,
    ) {
        let first = self.next_index;
        self.next_index += count;
        let url = self.url.clone();
        self.decoding.submit(
            bytes,
            move || decode(first),
            move |message| {
                Err(Error::Decode {
                    url,
                    expected: std::any::type_name::<K>(),
                    message,
                })
            },
        );
    }

    /// Takes decoded batches while too many are in flight, or, once the body has `ended`,
    /// until none is left.
    pub(super) async fn collect(&mut self, ended: bool) {
        while self.decoding.is_full() || (ended && !self.decoding.is_empty()) {
            let start = self.list.items.len();
            for result in self.decoding.next().await.unwrap_or_default() {
                match result {
                    Ok(item) => self.list.items.push(item),
                    Err(err) => self.list.skipped.push(err),
                }
            }
            if let Some(sink) = &self.sink {
                let part = self.list.items.split_off(start);
                // A receiver that is gone has given the list up: the items go with it.
                let _ = sink.send(part).await;
            }
        }
    }

    /// The list, with the metadata read from the body's end.
    pub(super) fn finish(mut self, metadata: Option<ListMeta>) -> SharedList<K> {
        if let Some(metadata) = metadata {
            self.list.metadata = metadata;
        }
        self.list
    }
}

/// A clear error for one item that did not decode: which item, which object, why.
pub(super) fn skipped_item_error<K>(
    url: &str,
    index: usize,
    meta: Option<ItemMeta>,
    why: &dyn std::fmt::Display,
) -> Error {
    let which = match meta {
        Some(meta) if !meta.name.is_empty() => format!("item {index} ({})", meta.key()),
        _ => format!("item {index}"),
    };
    Error::Decode {
        url: url.to_owned(),
        expected: std::any::type_name::<K>(),
        message: format!("{which} of the list was skipped: {why}"),
    }
}

/// The list metadata, decoded from `metadata` (JSON bytes or a JSON value).
pub(super) fn list_meta(url: &str, decoded: serde_json::Result<ListMeta>) -> Result<ListMeta> {
    decoded.map_err(|err| Error::Decode {
        url: url.to_owned(),
        expected: "ListMeta",
        message: err.to_string(),
    })
}
