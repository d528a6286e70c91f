//! Protobuf list bodies (`application/vnd.kubernetes.protobuf`) decoded into a
//! [`SharedList`] as they arrive: the body is split into item bytes (each item is
//! length-prefixed), and batches of items are decoded on worker threads, straight into
//! `K`, while the rest is read, as JSON lists are. An item that does not decode is reported
//! and skipped.

use std::sync::Arc;

use hyper::body::Incoming;
use kubeclient_machinery::ErrorChain;
use kubeclient_machinery::protobuf::{self, ListStreamSplitter};
use serde::de::DeserializeOwned;

use super::gzip::{Inflater, next_chunk};
use super::list_assembly::{ListAssembly, list_meta, skipped_item_error};
use super::list_stream::{BATCH_BYTES, DecodeOptions, SharedList};
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
    let mut assembly = ListAssembly::new(url, options.item_sink.clone());
    let mut batch = Batch::default();
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
            let (options, batch_url) = (options.clone(), url.to_owned());
            assembly.submit(items.bytes.len(), items.ranges.len(), move |first| {
                items
                    .items()
                    .enumerate()
                    .map(|(offset, item)| {
                        decode_item(&kind, item, &options).map_err(|message| {
                            let meta = protobuf::peek_item_meta(item);
                            skipped_item_error::<K>(&batch_url, first + offset, meta, &message)
                        })
                    })
                    .collect()
            });
        }
        assembly.collect(ended).await;
    }
    splitter.finish().map_err(malformed)?;
    let metadata = match splitter.metadata() {
        Some(metadata) => Some(list_meta(url, serde_json::from_value(metadata.clone()))?),
        None => None,
    };
    Ok(assembly.finish(metadata))
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

/// One item: shared from the caller's cache when its key and resourceVersion match, else
/// decoded straight from the wire into `K`, without `managedFields` if asked.
fn decode_item<K: DeserializeOwned + 'static>(
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
