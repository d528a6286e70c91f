//! WATCH: a long-running streamed response of newline-delimited JSON events
//! (apiserver-semantics §5).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use kubeclient_machinery::protobuf;
use kubeclient_machinery::{ErrorChain, Status};
use serde_json::json;
use tokio::sync::mpsc;

use super::call::Call;
use super::negotiate::{Encoding, Output, Target};
use super::object::ObjectFilter;
use super::read::{list_options_invalid, parse_rv};
use super::table::{self, IncludeObject};
use crate::registry::ResourceDef;
use crate::registry::apiextensions::version_conversion;
use crate::response::{Body, HandlerResult, fail, streaming, with_body};
use crate::state::State;
use crate::storage::{
    Change, ChangeKind, StorageError, StoredObject, WatchFrom, WatchSubscription, event_line,
};

/// How long a watch-list waits for a resourceVersion newer than the store.
const TOO_LARGE_RV_WAIT: Duration = Duration::from_secs(3);
/// Buffered event lines per watch before the writer waits for the client. Small: the
/// store's bounded per-watcher queue ([`WatcherLimits`](crate::storage::WatcherLimits))
/// does the buffering, and ends the watch of a client that falls too far behind.
const WATCH_BUFFER: usize = 32;

/// A 200 response whose body is one ERROR event, then the end (how real servers report
/// storage errors after a watch has been accepted).
pub(crate) fn error_stream(status: Status) -> Response<Body> {
    error_stream_in(status, Encoding::Json)
}

/// [`error_stream`] in the negotiated encoding.
fn error_stream_in(status: Status, encoding: Encoding) -> Response<Body> {
    let (sender, receiver) = mpsc::channel(1);
    let line = error_event(&status, encoding);
    // The channel has room for this one line; the body ends when `sender` drops.
    let _ = sender.try_send(line);
    with_body(StatusCode::OK, content_type(encoding), streaming(receiver))
}

/// The ERROR event of `status` in `encoding`.
fn error_event(status: &Status, encoding: Encoding) -> Bytes {
    match encoding {
        Encoding::Json => error_line(status),
        Encoding::Protobuf => serde_json::to_value(status)
            .ok()
            .and_then(|status| protobuf::encode_watch_event("ERROR", &status).ok())
            .map_or_else(|| error_line(status), Bytes::from),
    }
}

fn content_type(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Json => "application/json",
        Encoding::Protobuf => protobuf::WATCH_MEDIA_TYPE,
    }
}

fn error_line(status: &Status) -> Bytes {
    let object = serde_json::to_vec(status).unwrap_or_default();
    event_line("ERROR", &object)
}

/// Serves a watch.
pub(crate) async fn watch(call: Call) -> HandlerResult<Response<Body>> {
    let (output, encoding) = call.negotiate(Target::Watch)?;
    let error_stream = |status| error_stream_in(status, encoding);
    let send_initial = call
        .query
        .get("sendInitialEvents")
        .map(|_| call.query.flag("sendInitialEvents"));
    let rv_match = call.query.get("resourceVersionMatch").unwrap_or("");
    match (send_initial, rv_match) {
        (None, m) if !m.is_empty() => {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        (Some(_), m) if m != "NotOlderThan" => {
            return Err(list_options_invalid(
                "sendInitialEvents",
                "FieldValueForbidden",
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        _ => {}
    }
    let requested_rv = parse_rv(call.query.get("resourceVersion"))?;
    let mut filter = call.selector_filter()?;
    if call.path.watch_prefix
        && let Some(name) = call.path.name.as_deref()
    {
        if filter.exact_name().is_some_and(|pinned| pinned != name) {
            return Err(fail(Status::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            )));
        }
        filter = filter.with_name(name);
    }
    let include =
        IncludeObject::parse(call.query.get("includeObject")).unwrap_or(IncludeObject::Metadata);
    let bookmarks = call.query.flag("allowWatchBookmarks");
    let timeout = watch_timeout(call.query.int64("timeoutSeconds")?);
    let store = &call.state.store;
    let (from, initial_events_end) = match (send_initial, requested_rv) {
        (Some(true), rv) => {
            if let Some(rv) = rv.filter(|rv| *rv > 0)
                && store.revision() < rv
                && !store.wait_for_revision(rv, TOO_LARGE_RV_WAIT).await
            {
                return Ok(error_stream(Status::resource_version_too_large(
                    &rv.to_string(),
                    &store.revision().to_string(),
                )));
            }
            (WatchFrom::Now { initial: true }, bookmarks)
        }
        (Some(false), None | Some(0)) => (WatchFrom::Now { initial: false }, false),
        // Like 1.34+ servers: a plain watch from "" or "0" gets the initial state, then
        // (when bookmarks are allowed) the initial-events-end bookmark.
        (None, None | Some(0)) => (WatchFrom::Now { initial: true }, bookmarks),
        // A resourceVersion the store has not reached is no error: as from kube-apiserver's
        // watch cache (apiserver-semantics §5.4), the watch starts and delivers the changes
        // after it, once there are any (only a watch-list waits for it, above).
        (_, Some(rv)) => (WatchFrom::After(rv), false),
    };
    let prefix = call.namespace_prefix();
    let subscription = match store.watch(&call.storage(), &prefix, from) {
        Ok(subscription) => subscription,
        Err(StorageError::Expired { requested, oldest }) => {
            return Ok(error_stream(Status::expired(format!(
                "too old resource version: {requested} ({oldest})"
            ))));
        }
        Err(StorageError::TooLarge { requested, current }) => {
            return Ok(error_stream(Status::resource_version_too_large(
                &requested.to_string(),
                &current.to_string(),
            )));
        }
        Err(StorageError::Backend(status)) => return Ok(error_stream(*status)),
    };
    let (sender, receiver) = mpsc::channel(WATCH_BUFFER);
    if call.state.faults.take_malformed_watch_event() {
        let _ = sender.try_send(Bytes::from_static(
            b"{\"type\":\"ADDED\",\"object\":{this is not JSON\n",
        ));
    }
    let stream = WatchStream {
        state: call.state.clone(),
        filter,
        encoder: Encoder {
            output,
            encoding,
            include,
            resource: call.resource.clone(),
            columns_sent: false,
        },
        sender,
        bookmarks,
        initial_events_end,
        timeout,
    };
    tokio::spawn(stream.run(subscription));
    Ok(with_body(
        StatusCode::OK,
        content_type(encoding),
        streaming(receiver),
    ))
}

/// The longest watch: larger `timeoutSeconds` are clamped to it, so the deadline never
/// overflows the clock (the API server accepts any int64 and overflows instead).
pub(crate) const MAX_WATCH_TIMEOUT: Duration = Duration::from_secs(366 * 24 * 3600);

/// How long a watch runs for its `timeoutSeconds`: absent or 0 picks the API server's
/// default ([min-request-timeout, 2x) with 1800 s), a negative value ends the stream at
/// once (as upstream's timer does), larger values are clamped to [`MAX_WATCH_TIMEOUT`].
fn watch_timeout(seconds: Option<i64>) -> Duration {
    match seconds {
        None | Some(0) => Duration::from_secs(1800 + fastrand::u64(0..1800)),
        Some(negative) if negative < 0 => Duration::ZERO,
        Some(seconds) => Duration::from_secs(seconds.unsigned_abs()).min(MAX_WATCH_TIMEOUT),
    }
}

/// Turns objects into event lines in the negotiated representation.
struct Encoder {
    output: Output,
    /// Protobuf frames (plain objects only) or JSON lines.
    encoding: Encoding,
    include: IncludeObject,
    resource: Arc<ResourceDef>,
    /// Tables carry `columnDefinitions` in the first event only.
    columns_sent: bool,
}

impl Encoder {
    /// The line for an event of an object in the version served (see
    /// [`WatchStream::emit`]); `shared` is the pre-encoded JSON line, used when the
    /// representation is plain JSON so every watcher shares one encoding.
    fn encoded_line(
        &mut self,
        event_type: &str,
        object: &StoredObject,
        shared: Option<Bytes>,
    ) -> Bytes {
        match self.output {
            Output::Json if self.encoding == Encoding::Protobuf => {
                protobuf_frame(event_type, &object.value)
                    .unwrap_or_else(|| event_line(event_type, &object.bytes))
            }
            Output::Json => shared.unwrap_or_else(|| event_line(event_type, &object.bytes)),
            Output::PartialObjectMetadata | Output::PartialObjectMetadataList => {
                let converted = table::partial_object_metadata(&object.value);
                if self.encoding == Encoding::Protobuf
                    && let Some(frame) = protobuf_frame(event_type, &converted)
                {
                    return frame;
                }
                event_line(
                    event_type,
                    &serde_json::to_vec(&converted).unwrap_or_default(),
                )
            }
            Output::Table => {
                let with_columns = !self.columns_sent;
                self.columns_sent = true;
                let metadata = json!({"resourceVersion": object.rv.to_string()});
                let converted = table::table(
                    &self.resource,
                    std::iter::once(&object.value),
                    self.include,
                    metadata,
                    with_columns,
                );
                event_line(
                    event_type,
                    &serde_json::to_vec(&converted).unwrap_or_default(),
                )
            }
        }
    }

    /// A bookmark line, or `None` for Tables (kubectl never asks for bookmarks).
    fn bookmark(&self, revision: u64, initial_events_end: bool) -> Option<Bytes> {
        let (kind, api_version) = match self.output {
            Output::Json => (self.resource.kind.clone(), self.resource.api_version()),
            Output::PartialObjectMetadata | Output::PartialObjectMetadataList => (
                "PartialObjectMetadata".to_owned(),
                "meta.k8s.io/v1".to_owned(),
            ),
            Output::Table => return None,
        };
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
        if self.encoding == Encoding::Protobuf
            && let Some(frame) = protobuf_frame("BOOKMARK", &object)
        {
            return Some(frame);
        }
        Some(event_line(
            "BOOKMARK",
            &serde_json::to_vec(&object).unwrap_or_default(),
        ))
    }
}

/// A protobuf watch frame, or `None` (logged) for an object that does not fit its schema.
fn protobuf_frame(event_type: &str, object: &serde_json::Value) -> Option<Bytes> {
    match protobuf::encode_watch_event(event_type, object) {
        Ok(frame) => Some(Bytes::from(frame)),
        Err(err) => {
            tracing::warn!(error = %ErrorChain(&err), "a watched object has no protobuf form; sent as JSON");
            None
        }
    }
}

/// One running watch: reads changes, writes lines, until the client leaves, the timeout
/// passes or the server drops the watch.
struct WatchStream {
    state: Arc<State>,
    filter: ObjectFilter,
    encoder: Encoder,
    sender: mpsc::Sender<Bytes>,
    bookmarks: bool,
    initial_events_end: bool,
    timeout: Duration,
}

impl WatchStream {
    async fn send(&self, line: Bytes) -> bool {
        self.sender.send(line).await.is_ok()
    }

    /// The event a change means for this watch's selectors, if any: its type, the
    /// stored object and the shared JSON line.
    fn event_for(
        &self,
        change: &Change,
    ) -> Option<(&'static str, Arc<StoredObject>, Option<Bytes>)> {
        let matches =
            |object: Option<&Arc<StoredObject>>| object.is_some_and(|o| self.filter.matches(o));
        let (was, is) = (matches(change.prev.as_ref()), matches(change.new.as_ref()));
        match (change.kind, was, is) {
            (ChangeKind::Created, _, true) | (ChangeKind::Updated, false, true) => {
                Some(("ADDED", change.new.clone()?, change.added_line()))
            }
            (ChangeKind::Updated, true, true) => {
                Some(("MODIFIED", change.new.clone()?, change.modified_line()))
            }
            (ChangeKind::Updated | ChangeKind::Deleted, true, false) => Some((
                "DELETED",
                change.prev_at_rv()?.clone(),
                change.deleted_line(),
            )),
            _ => None,
        }
    }

    /// Sends the event of a change, if it means one; `false` when the watch ends.
    async fn emit_change(&mut self, change: &Change) -> bool {
        match self.event_for(change) {
            Some((event_type, object, shared)) => self.emit(event_type, &object, shared).await,
            None => true,
        }
    }

    /// Sends the event of a stored object in the version the watch serves (converted
    /// first, through the CRD's conversion webhook if it names one); `false` when the
    /// watch ends: the client left, or the conversion failed (its ERROR event sent, as
    /// a watch whose storage fails ends).
    async fn emit(
        &mut self,
        event_type: &str,
        object: &Arc<StoredObject>,
        shared: Option<Bytes>,
    ) -> bool {
        let presented = version_conversion::present(
            &self.encoder.resource,
            vec![object.clone()],
            false,
            self.state.config.webhooks,
        )
        .await;
        let served = match presented.map(|mut served| served.pop()) {
            Ok(Some(served)) => served,
            Ok(None) => return true,
            Err(status) => {
                let _ = self.send(error_event(&status, self.encoder.encoding)).await;
                return false;
            }
        };
        // Stored in another form: the shared line does not fit.
        let shared = shared.filter(|_| Arc::ptr_eq(&served, object));
        let line = self.encoder.encoded_line(event_type, &served, shared);
        self.send(line).await
    }

    async fn run(mut self, mut subscription: WatchSubscription) {
        let now = tokio::time::Instant::now();
        let deadline = now.checked_add(self.timeout).unwrap_or(now);
        let initial = std::mem::take(&mut subscription.initial);
        for object in &initial {
            if self.filter.matches(object) && !self.emit("ADDED", object, None).await {
                return;
            }
        }
        if self.initial_events_end
            && let Some(line) = self.encoder.bookmark(subscription.revision, true)
            && !self.send(line).await
        {
            return;
        }
        let after = subscription.after;
        for change in std::mem::take(&mut subscription.backlog) {
            if change.rv > after && !self.emit_change(&change).await {
                return;
            }
        }
        let interval = self.state.config.bookmark_interval;
        let mut bookmark_tick =
            tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                change = subscription.changes.recv() => {
                    let Some(change) = change else { return };
                    if change.rv > after && !self.emit_change(&change).await {
                        return;
                    }
                }
                () = tokio::time::sleep_until(deadline) => return,
                _ = bookmark_tick.tick(), if self.bookmarks => {
                    // Every change up to this revision has already been queued to us
                    // (fan-out happens before the revision is published): drain, then
                    // the bookmark is a valid resume point.
                    let revision = self.state.store.revision();
                    while let Some(change) = subscription.changes.try_recv() {
                        if change.rv > after && !self.emit_change(&change).await {
                            return;
                        }
                    }
                    if let Some(line) = self.encoder.bookmark(revision.max(after), false)
                        && !self.send(line).await
                    {
                        return;
                    }
                }
                () = self.sender.closed() => return,
            }
        }
    }
}
