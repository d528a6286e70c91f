//! Lists decoded as their bytes arrive: the body is split into items by
//! [`ListStreamDecoder`], and batches of items are decoded on worker threads into shared
//! `Arc<K>`s while the rest of the body is still being read. The whole body is never held
//! in memory, nor is any item decoded twice, and one item that does not decode is reported
//! and skipped instead of failing the whole list.

use std::sync::Arc;

use hyper::body::Incoming;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kubeclient_machinery::decode_object;
use kubeclient_machinery::list::{ItemBatch, ItemMeta, ListStreamDecoder, peek_item_meta};
use serde::de::DeserializeOwned;

use super::gzip::{Inflater, next_chunk};
use super::list_assembly::{ListAssembly, list_meta, skipped_item_error};
use super::{Client, Request};
use crate::error::{Error, Result};
use http::header::CONTENT_ENCODING;

/// Finds an object the caller already holds at the same version, so it is shared instead
/// of decoded again (a relist of a mostly unchanged cache then costs little time and no
/// second copy of the objects).
pub type ReuseFn<K> = Arc<dyn Fn(&ItemMeta) -> Option<Arc<K>> + Send + Sync>;

/// Where a list hands its decoded items, part by part and in list order, as they are
/// decoded, instead of gathering them all in [`SharedList::items`]. Each send waits for
/// room, so a slow receiver slows the reading of the body down (and the memory of the
/// decoded objects stays bounded by the channel and the receiver).
pub type ItemSink<K> = tokio::sync::mpsc::Sender<Vec<Arc<K>>>;

/// How the items of a list (or the objects of watch events) are decoded.
#[must_use]
pub struct DecodeOptions<K> {
    /// Drop `metadata.managedFields` from each object's bytes before decoding it.
    pub strip_managed_fields: bool,
    /// Share an object already held at the same key and resourceVersion instead of
    /// decoding the item (lists only).
    pub reuse: Option<ReuseFn<K>>,
    /// Lists only: send the decoded items here as they are decoded; the
    /// [`SharedList`] then comes back with its metadata and skipped items only.
    pub item_sink: Option<ItemSink<K>>,
}

impl<K> Clone for DecodeOptions<K> {
    fn clone(&self) -> Self {
        DecodeOptions {
            strip_managed_fields: self.strip_managed_fields,
            reuse: self.reuse.clone(),
            item_sink: self.item_sink.clone(),
        }
    }
}

impl<K> Default for DecodeOptions<K> {
    fn default() -> Self {
        DecodeOptions {
            strip_managed_fields: false,
            reuse: None,
            item_sink: None,
        }
    }
}

impl<K> std::fmt::Debug for DecodeOptions<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeOptions")
            .field("strip_managed_fields", &self.strip_managed_fields)
            .field("reuse", &self.reuse.is_some())
            .field("item_sink", &self.item_sink.is_some())
            .finish()
    }
}

/// A page of a list whose items are shared `Arc`s.
#[derive(Debug)]
pub struct SharedList<K> {
    /// `resourceVersion`, `continue`, `remainingItemCount`.
    pub metadata: ListMeta,
    /// The objects that decoded, in list order.
    pub items: Vec<Arc<K>>,
    /// One [`Error::Decode`] per item that did not decode (it is left out of `items`).
    pub skipped: Vec<Error>,
}

impl<K> SharedList<K> {
    /// The continue token, if there are more pages.
    #[must_use]
    pub fn continue_token(&self) -> Option<&str> {
        self.metadata.continue_.as_deref().filter(|t| !t.is_empty())
    }
}

impl Client {
    /// Sends a list request and decodes the answer as it arrives (see the module docs):
    /// items become shared `Arc<K>`s, decoded on worker threads; an item that does not
    /// decode is reported in [`SharedList::skipped`] and left out.
    ///
    /// # Errors
    ///
    /// As [`send`](Client::send); [`Error::Decode`] when the body is not a list;
    /// [`Error::Timeout`] past the client's timeout.
    pub async fn list_shared<K>(
        &self,
        request: Request,
        options: &DecodeOptions<K>,
    ) -> Result<SharedList<K>>
    where
        K: DeserializeOwned + Send + Sync + 'static,
    {
        let url = format!("{}{}", self.base_url(), request.path);
        self.within_timeout(&request, async {
            let response = self.send(&request).await?;
            let content_type = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            let protobuf = super::is_protobuf(content_type);
            let gzip = response
                .headers()
                .get(CONTENT_ENCODING)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
            if protobuf {
                return super::protobuf_list::decode_protobuf_list_body(
                    response.into_body(),
                    gzip,
                    &url,
                    options,
                )
                .await;
            }
            decode_list_body(response.into_body(), gzip, &url, options).await
        })
        .await
    }
}

/// Start a worker batch once this many bytes of complete items are buffered (JSON and
/// protobuf lists alike).
pub(super) const BATCH_BYTES: usize = 256 * 1024;

/// Decodes a list body as it arrives.
pub(crate) async fn decode_list_body<K>(
    mut body: Incoming,
    gzip: bool,
    url: &str,
    options: &DecodeOptions<K>,
) -> Result<SharedList<K>>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    let malformed = |err: kubeclient_machinery::list::ListDecodeError| Error::Decode {
        url: url.to_owned(),
        expected: std::any::type_name::<K>(),
        message: err.to_string(),
    };
    let mut splitter = ListStreamDecoder::new();
    let mut inflater = gzip.then(Inflater::new);
    let mut assembly = ListAssembly::new(url, options.item_sink.clone());
    let mut ended = false;
    while !ended {
        let (chunk, end) = next_chunk(&mut body, &mut inflater, url).await?;
        ended = end;
        splitter.push(&chunk);
        if (ended || splitter.ready_len().map_err(malformed)? >= BATCH_BYTES)
            && let Some(batch) = splitter.next_batch().map_err(malformed)?
        {
            let (batch_url, options) = (url.to_owned(), options.clone());
            assembly.submit(batch.bytes.len(), batch.len(), move |first| {
                decode_batch(&batch, first, &batch_url, &options)
            });
        }
        assembly.collect(ended).await;
    }
    let metadata = match splitter.finish().map_err(malformed)? {
        Some(metadata) => Some(list_meta(url, serde_json::from_slice(&metadata))?),
        None => None,
    };
    Ok(assembly.finish(metadata))
}

/// Decodes the items of one batch (on a worker thread); `first` is the list index of the
/// batch's first item, for error messages.
fn decode_batch<K: DeserializeOwned>(
    batch: &ItemBatch,
    first: usize,
    url: &str,
    options: &DecodeOptions<K>,
) -> Vec<Result<Arc<K>>> {
    batch
        .items()
        .enumerate()
        .map(|(offset, item)| {
            if let Some(reuse) = &options.reuse
                && let Some(existing) = peek_item_meta(item).and_then(|meta| reuse(&meta))
            {
                return Ok(existing);
            }
            decode_object(item, options.strip_managed_fields)
                .map(Arc::new)
                .map_err(|err| {
                    skipped_item_error::<K>(url, first + offset, peek_item_meta(item), &err)
                })
        })
        .collect()
}
