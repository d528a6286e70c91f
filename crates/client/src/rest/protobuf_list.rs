//! Protobuf list bodies (`application/vnd.kubernetes.protobuf`) decoded into a
//! [`SharedList`] as they arrive: the body is split into item bytes (each item is
//! length-prefixed), and batches of items are decoded on worker threads, straight into
//! `K`, while the rest is read, as JSON lists are. An item that does not decode is reported
//! and skipped.

use std::sync::Arc;

use hyper::body::Incoming;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kubeclient_machinery::ErrorChain;
use kubeclient_machinery::protobuf::{self, ListStreamSplitter};
use serde::de::DeserializeOwned;

use super::gzip::{Inflater, next_chunk};
use super::list_stream::{BATCH_BYTES, DecodeOptions, SharedList};
use super::ordered_decode::OrderedDecoder;
use crate::error::{Error, Result};

/// Decodes a protobuf list body as it arrives: complete items are gathered into batches
/// and decoded on worker threads while the rest of the body is read.
pub(crate) async fn decode_protobuf_list_body<K>(
    mut body: Incoming,
    gzip: bool,
    url: &str,
    options: &DecodeOptions<K>,
) -> Result<SharedList<K>>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    let malformed = |err: protobuf::ProtobufError| Error::Decode {
        url: url.to_owned(),
        expected: std::any::type_name::<K>(),
        message: ErrorChain(&err).to_string(),
    };
    let mut splitter = ListStreamSplitter::new();
    let mut inflater = gzip.then(Inflater::new);
    let mut decoding = OrderedDecoder::new();
    let mut list = SharedList {
        metadata: ListMeta::default(),
        items: Vec::new(),
        skipped: Vec::new(),
    };
    let mut batch = Batch::default();
    let mut first = 0usize;
    let mut ended = false;
    while !ended {
        let (chunk, end) = next_chunk(&mut body, &mut inflater, url).await?;
        ended = end;
        splitter.push(&chunk);
        while let Some(item) = splitter.next_item().map_err(malformed)? {
            batch.add(item);
        }
        if batch.bytes.len() >= BATCH_BYTES || (ended && !batch.ranges.is_empty()) {
            let (api_version, list_kind) = splitter.type_meta().unwrap_or_default();
            let kind = Arc::new((
                api_version.to_owned(),
                list_kind
                    .strip_suffix("List")
                    .unwrap_or(list_kind)
                    .to_owned(),
            ));
            let items = std::mem::take(&mut batch);
            let (options, batch_url, panic_url) = (options.clone(), url.to_owned(), url.to_owned());
            let start = first;
            first += items.ranges.len();
            decoding.submit(
                items.bytes.len(),
                move || {
                    items
                        .items()
                        .enumerate()
                        .map(|(offset, item)| {
                            decode_item(&kind, item, &options).map_err(|message| {
                                item_error::<K>(&batch_url, start + offset, item, &message)
                            })
                        })
                        .collect()
                },
                move |message| {
                    Err(Error::Decode {
                        url: panic_url,
                        expected: std::any::type_name::<K>(),
                        message,
                    })
                },
            );
        }
        while decoding.is_full() || (ended && !decoding.is_empty()) {
            drain(&mut decoding, &mut list).await;
        }
    }
    splitter.finish().map_err(malformed)?;
    if let Some(metadata) = splitter.metadata() {
        list.metadata = serde_json::from_value(metadata.clone()).map_err(|err| Error::Decode {
            url: url.to_owned(),
            expected: "ListMeta",
            message: err.to_string(),
        })?;
    }
    Ok(list)
}

/// Items copied out of the splitter so they can go to a worker.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    ranges: Vec<std::ops::Range<usize>>,
}

impl Batch {
    fn add(&mut self, item: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(item);
        self.ranges.push(start..self.bytes.len());
    }

    fn items(&self) -> impl Iterator<Item = &[u8]> {
        self.ranges
            .iter()
            .filter_map(|range| self.bytes.get(range.clone()))
    }
}

async fn drain<K: Send + Sync + 'static>(
    decoding: &mut OrderedDecoder<Result<Arc<K>>>,
    list: &mut SharedList<K>,
) {
    for result in decoding.next().await.unwrap_or_default() {
        match result {
            Ok(item) => list.items.push(item),
            Err(err) => list.skipped.push(err),
        }
    }
}

/// One item: shared from the caller's cache when its key and resourceVersion match, else
/// decoded straight from the wire into `K`, without `managedFields` if asked.
fn decode_item<K: DeserializeOwned>(
    kind: &(String, String),
    item: &[u8],
    options: &DecodeOptions<K>,
) -> std::result::Result<Arc<K>, String> {
    if let Some(reuse) = &options.reuse
        && let Some(existing) = protobuf::peek_item_meta(item).and_then(|meta| reuse(&meta))
    {
        return Ok(existing);
    }
    protobuf::item_from_protobuf(&kind.0, &kind.1, item, options.strip_managed_fields)
        .map(Arc::new)
        .map_err(|err| ErrorChain(&err).to_string())
}

fn item_error<K>(url: &str, index: usize, item: &[u8], message: &str) -> Error {
    let which = match protobuf::peek_item_meta(item) {
        Some(meta) if !meta.name.is_empty() => format!("item {index} ({})", meta.key()),
        _ => format!("item {index}"),
    };
    Error::Decode {
        url: url.to_owned(),
        expected: std::any::type_name::<K>(),
        message: format!("{which} of the list was skipped: {message}"),
    }
}
