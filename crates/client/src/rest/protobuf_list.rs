//! Protobuf list bodies (`application/vnd.kubernetes.protobuf`) decoded into a
//! [`SharedList`]: the body is split into item bytes (the envelope and the list message
//! give each item's length), and batches of items are decoded on worker threads, as JSON
//! lists are. Unlike a JSON list the whole body is read first; an item that does not decode
//! is reported and skipped.

use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use kubeclient_machinery::ErrorChain;
use kubeclient_machinery::protobuf;
use serde::de::DeserializeOwned;

use super::client::collect;
use super::list_stream::{DecodeOptions, SharedList};
use super::ordered_decode::OrderedDecoder;
use crate::error::{Error, Result};

/// Start a worker batch once this many bytes of items are gathered.
const BATCH_BYTES: usize = 256 * 1024;

/// Reads a protobuf list body and decodes its items.
pub(crate) async fn decode_protobuf_list_body<K>(
    body: Incoming,
    headers: &http::HeaderMap,
    url: &str,
    options: &DecodeOptions<K>,
) -> Result<SharedList<K>>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    let malformed = |message: String| Error::Decode {
        url: url.to_owned(),
        expected: std::any::type_name::<K>(),
        message,
    };
    let bytes = collect(body, headers)
        .await
        .map_err(|cause| Error::transport(url, cause))?;
    let split =
        protobuf::split_list(&bytes).map_err(|err| malformed(ErrorChain(&err).to_string()))?;
    let metadata = serde_json::from_value(split.metadata.clone()).map_err(|err| Error::Decode {
        url: url.to_owned(),
        expected: "ListMeta",
        message: err.to_string(),
    })?;
    let kind: Arc<(String, String)> =
        Arc::new((split.api_version.to_owned(), split.item_kind().to_owned()));
    let mut list = SharedList {
        metadata,
        items: Vec::with_capacity(split.items.len()),
        skipped: Vec::new(),
    };
    let mut decoding = OrderedDecoder::new();
    let mut batch: Vec<Bytes> = Vec::new();
    let mut batch_bytes = 0usize;
    let mut first = 0usize;
    let count = split.items.len();
    for (index, item) in split.items.iter().enumerate() {
        batch_bytes += item.len();
        batch.push(bytes.slice_ref(item));
        if batch_bytes < BATCH_BYTES && index + 1 < count {
            continue;
        }
        let items = std::mem::take(&mut batch);
        let (kind, options, batch_url, panic_url) = (
            kind.clone(),
            options.clone(),
            url.to_owned(),
            url.to_owned(),
        );
        let start = first;
        first += items.len();
        decoding.submit(
            std::mem::take(&mut batch_bytes),
            move || {
                items
                    .iter()
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
        while decoding.is_full() {
            drain(&mut decoding, &mut list).await;
        }
    }
    while !decoding.is_empty() {
        drain(&mut decoding, &mut list).await;
    }
    Ok(list)
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
