//! [`WatchEvent`]: one event of a watch stream, and its exact JSON form.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::meta::TypeMeta;
use crate::status::Status;

/// The annotation on the bookmark that ends the initial events of a watch-list
/// (`sendInitialEvents=true`) stream.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch stream.
///
/// On the wire: `{"type":"ADDED","object":{...}}` with `type` one of `ADDED`, `MODIFIED`,
/// `DELETED`, `BOOKMARK` and `ERROR`. Bookmarks are decoded as [`Bookmark`] (type meta,
/// resourceVersion and annotations only, never as a full object) and errors as [`Status`].
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::{Object, WatchEvent};
///
/// let line = br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"7"}}}"#;
/// let event = WatchEvent::<ConfigMap>::from_json(line).unwrap();
/// let WatchEvent::Added(cm) = &event else { panic!("expected ADDED") };
/// assert_eq!(cm.resource_version(), "7");
/// assert_eq!(event.resource_version(), Some("7"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent<K> {
    /// The object was created, entered the watch's selector, or is part of the initial state.
    Added(K),
    /// The object changed (including gaining a `deletionTimestamp`).
    Modified(K),
    /// The object left storage (final state, deletion resourceVersion) or left the selector.
    Deleted(K),
    /// No event at or below this resourceVersion remains unsent: a valid resume point.
    Bookmark(Bookmark),
    /// The server ended the stream with an error, e.g. 410 Expired for a too-old
    /// resourceVersion. Boxed: errors are rare and a Status is large.
    Error(Box<Status>),
}

/// The object of a `BOOKMARK` event: only its type, `metadata.resourceVersion` and
/// `metadata.annotations` mean anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bookmark {
    /// `apiVersion` and `kind` of the watched resource.
    pub types: TypeMeta,
    /// The resourceVersion to resume from.
    pub resource_version: String,
    /// Annotations; [`INITIAL_EVENTS_END_ANNOTATION`] marks the end of the initial events.
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// Whether this bookmark ends the initial events of a watch-list stream.
    #[must_use]
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|value| value == "true")
    }
}

/// A watch event that could not be decoded. The stream itself may go on: the next line
/// is independent of this one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchDecodeError {
    /// The line is not a JSON watch event, or its object does not decode as the watched
    /// type. `snippet` is the start of the line.
    #[error("malformed watch event; the event starts with: {snippet}")]
    Malformed {
        /// The JSON error.
        #[source]
        source: serde_json::Error,
        /// The first bytes of the offending line, for the log.
        snippet: String,
    },
    /// The event is well formed but its object does not decode as the watched type (a
    /// bad object on the server). Unlike [`Malformed`](Self::Malformed), the stream is
    /// intact: nothing else was lost, so a reader can report this event and go on.
    #[error(
        "the object of a {event_type} watch event does not decode; the object starts with: {snippet}"
    )]
    InvalidObject {
        /// ADDED, MODIFIED or DELETED.
        event_type: &'static str,
        /// Why it does not decode.
        #[source]
        source: crate::ObjectDecodeError,
        /// The first bytes of the object, for the log.
        snippet: String,
    },
    /// `type` is not one of ADDED, MODIFIED, DELETED, BOOKMARK, ERROR.
    #[error(
        "unknown watch event type {0:?} (expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR)"
    )]
    UnknownType(String),
    /// A single event is larger than the decoder's limit; it was skipped. Raise the limit
    /// with `WatchStreamDecoder::with_max_event_len` if objects really are this large.
    #[error(
        "watch event of more than {max} bytes skipped (the limit is set by WatchStreamDecoder::with_max_event_len)"
    )]
    TooLarge {
        /// The limit in bytes.
        max: usize,
    },
    /// A protobuf watch frame (`application/vnd.kubernetes.protobuf;stream=watch`) that
    /// is oversized or does not decode.
    #[error("malformed protobuf watch event")]
    Protobuf(#[source] crate::protobuf::ProtobufError),
}

/// The envelope, decoded without touching the object (which stays raw JSON text borrowed
/// from the input), so the object is decoded exactly once, straight into its type.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    event_type: Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkObject {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

impl<K: DeserializeOwned> WatchEvent<K> {
    /// Decodes one event from its JSON text (one line of a watch body).
    ///
    /// # Errors
    ///
    /// [`WatchDecodeError::Malformed`] for invalid JSON, [`WatchDecodeError::InvalidObject`]
    /// for an object that does not decode as `K`; [`WatchDecodeError::UnknownType`] for an unknown `type`.
    pub fn from_json(line: &[u8]) -> Result<Self, WatchDecodeError> {
        Self::decode(line, false)
    }

    /// As [`from_json`](Self::from_json), dropping the object's `metadata.managedFields`
    /// from its bytes before decoding it (cheaper than decoding then dropping them).
    ///
    /// # Errors
    ///
    /// As [`from_json`](Self::from_json).
    pub fn from_json_stripped(line: &[u8]) -> Result<Self, WatchDecodeError> {
        Self::decode(line, true)
    }

    /// Decodes one event from a protobuf watch frame (the `WatchEvent` message, without its
    /// length prefix; see [`WatchFrameDecoder`](crate::protobuf::WatchFrameDecoder)),
    /// through its JSON form; with `strip_managed_fields`, `metadata.managedFields` are
    /// dropped before the object is decoded.
    ///
    /// # Errors
    ///
    /// [`WatchDecodeError::InvalidObject`] for an ADDED, MODIFIED or DELETED event whose
    /// object does not decode (the stream is intact), [`WatchDecodeError::Protobuf`] for a
    /// frame that is not a watch event, and the errors of [`from_json`](Self::from_json).
    pub fn from_protobuf(frame: &[u8], strip_managed_fields: bool) -> Result<Self, WatchDecodeError>
    where
        K: 'static,
    {
        let (event_type, raw) =
            crate::protobuf::split_watch_event(frame).map_err(WatchDecodeError::Protobuf)?;
        // Objects go straight from the wire into `K`; bookmarks and errors are small and
        // take the JSON form's path.
        let (event_type, wrap): (&'static str, fn(K) -> Self) = match event_type {
            "ADDED" => ("ADDED", WatchEvent::Added),
            "MODIFIED" => ("MODIFIED", WatchEvent::Modified),
            "DELETED" => ("DELETED", WatchEvent::Deleted),
            _ => {
                let event = crate::protobuf::decode_watch_event(frame)
                    .map_err(WatchDecodeError::Protobuf)?;
                let line =
                    serde_json::to_vec(&event).map_err(|source| WatchDecodeError::Malformed {
                        source,
                        snippet: snippet(frame),
                    })?;
                return Self::decode(&line, strip_managed_fields);
            }
        };
        let invalid = |source| WatchDecodeError::InvalidObject {
            event_type,
            source,
            snippet: snippet(raw),
        };
        if !raw.starts_with(crate::protobuf::MAGIC) {
            // A JSON object inside a protobuf frame (the RawExtension holds JSON).
            return crate::decode_object(raw, strip_managed_fields)
                .map(wrap)
                .map_err(invalid);
        }
        crate::protobuf::from_protobuf_with(raw, strip_managed_fields)
            .map(wrap)
            .map_err(|err| {
                invalid(crate::ObjectDecodeError::new(
                    crate::ErrorChain(&err).to_string(),
                ))
            })
    }

    fn decode(line: &[u8], strip: bool) -> Result<Self, WatchDecodeError> {
        if let Some((event_type, object)) = canonical_envelope(line)
            && let Ok(event) = Self::from_parts(line, event_type, object, strip)
        {
            return Ok(event);
        }
        let malformed = |source| WatchDecodeError::Malformed {
            source,
            snippet: snippet(line),
        };
        // The envelope is found by a byte scan (the object is validated by its decoder);
        // anything unusual goes through serde_json, which also words the errors.
        let (event_type, object) = match scan_envelope(line) {
            Some(found) => found,
            None => {
                let envelope: Envelope<'_> = serde_json::from_slice(line).map_err(malformed)?;
                let event_type = match envelope.event_type {
                    Cow::Borrowed(text) => text,
                    // Escapes in the type: compare the unescaped text.
                    Cow::Owned(text) => ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]
                        .into_iter()
                        .find(|known| *known == text)
                        .ok_or(WatchDecodeError::UnknownType(text))?,
                };
                (event_type, envelope.object.get().as_bytes())
            }
        };
        Self::from_parts(line, event_type, object, strip)
    }

    /// The event of type `event_type` with this object (`line` is the whole event, for
    /// error snippets).
    fn from_parts(
        line: &[u8],
        event_type: &str,
        object: &[u8],
        strip: bool,
    ) -> Result<Self, WatchDecodeError> {
        let malformed = |source| WatchDecodeError::Malformed {
            source,
            snippet: snippet(line),
        };
        let decode = |event_type: &'static str| {
            crate::decode_object::<K>(object, strip).map_err(|source| {
                WatchDecodeError::InvalidObject {
                    event_type,
                    source,
                    snippet: snippet(object),
                }
            })
        };
        Ok(match event_type {
            "ADDED" => WatchEvent::Added(decode("ADDED")?),
            "MODIFIED" => WatchEvent::Modified(decode("MODIFIED")?),
            "DELETED" => WatchEvent::Deleted(decode("DELETED")?),
            "BOOKMARK" => {
                let raw: BookmarkObject = serde_json::from_slice(object).map_err(malformed)?;
                WatchEvent::Bookmark(Bookmark {
                    types: TypeMeta {
                        api_version: raw.api_version,
                        kind: raw.kind,
                    },
                    resource_version: raw.metadata.resource_version.unwrap_or_default(),
                    annotations: raw.metadata.annotations.unwrap_or_default(),
                })
            }
            "ERROR" => {
                WatchEvent::Error(Box::new(serde_json::from_slice(object).map_err(malformed)?))
            }
            other => return Err(WatchDecodeError::UnknownType(other.to_owned())),
        })
    }
}

/// The event's type and its object's bytes, found without decoding anything; `None` when
/// the line is not a plain `{"type":"...","object":{...}}` (the caller then lets serde_json
/// decide and word the error).
fn scan_envelope(line: &[u8]) -> Option<(&str, &[u8])> {
    use crate::list::json_scan::{object_members, skip_whitespace, value_end};
    let start = skip_whitespace(line, 0);
    let end = value_end(line, start)?;
    if skip_whitespace(line, end) != line.len() {
        return None;
    }
    let members = object_members(line, start)?;
    let value_of = |name: &[u8]| {
        let mut found = members
            .iter()
            .filter(|member| &line[member.key.0..member.key.1] == name);
        let member = found.next()?;
        // A repeated key is left for serde_json to refuse.
        found
            .next()
            .is_none()
            .then(|| &line[member.value.0..member.value.1])
    };
    let event_type = value_of(b"type")?;
    let event_type = event_type.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if event_type.contains(&b'\\') {
        return None;
    }
    let object = value_of(b"object")?;
    if object.first() != Some(&b'{') {
        return None;
    }
    Some((std::str::from_utf8(event_type).ok()?, object))
}

/// The envelope as every API server writes it, `{"type":"T","object":{...}}` and nothing
/// else: type and object found without scanning the object (the scan of a 6 KB object
/// costs about a tenth of decoding it). The object's decoder refuses anything after the
/// object's own end (another member, a second value), so a line of any other shape fails
/// to decode here and takes the scanning path, which words the error.
fn canonical_envelope(line: &[u8]) -> Option<(&str, &[u8])> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let quote = memchr::memchr(b'"', rest)?;
    let event_type = &rest[..quote];
    if event_type.contains(&b'\\') {
        return None;
    }
    let object = rest[quote + 1..].strip_prefix(b",\"object\":")?;
    let object = object.trim_ascii_end().strip_suffix(b"}")?;
    if object.first() != Some(&b'{') {
        return None;
    }
    Some((std::str::from_utf8(event_type).ok()?, object))
}

impl<K> WatchEvent<K> {
    /// The wire name of the event type, e.g. `ADDED`.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }

    /// The object of an ADDED, MODIFIED or DELETED event.
    #[must_use]
    pub fn object(&self) -> Option<&K> {
        match self {
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) => {
                Some(obj)
            }
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => None,
        }
    }
}

impl<K: crate::Object> WatchEvent<K> {
    /// The resourceVersion this event moves the watch to (objects and bookmarks), if any.
    #[must_use]
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            WatchEvent::Bookmark(bookmark) => Some(bookmark.resource_version.as_str()),
            WatchEvent::Error(_) => None,
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) => {
                Some(obj.resource_version())
            }
        }
    }
}

impl<K: Serialize> Serialize for WatchEvent<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", self.type_name())?;
        match self {
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) => {
                map.serialize_entry("object", obj)?;
            }
            WatchEvent::Bookmark(bookmark) => {
                map.serialize_entry("object", &BookmarkWire(bookmark))?
            }
            WatchEvent::Error(status) => map.serialize_entry("object", status)?,
        }
        map.end()
    }
}

/// A bookmark's wire form: `{"kind":..,"apiVersion":..,"metadata":{"resourceVersion":..}}`.
struct BookmarkWire<'a>(&'a Bookmark);

impl Serialize for BookmarkWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Meta<'a> {
            resource_version: &'a str,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            annotations: &'a BTreeMap<String, String>,
        }
        let bookmark = self.0;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("kind", &bookmark.types.kind)?;
        map.serialize_entry("apiVersion", &bookmark.types.api_version)?;
        map.serialize_entry(
            "metadata",
            &Meta {
                resource_version: &bookmark.resource_version,
                annotations: &bookmark.annotations,
            },
        )?;
        map.end()
    }
}

/// The first 120 bytes of a line, lossily as text, for error messages.
fn snippet(line: &[u8]) -> String {
    let end = line.len().min(120);
    let mut text = String::from_utf8_lossy(&line[..end]).into_owned();
    if line.len() > end {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DynamicObject, Object};
    use k8s_openapi::api::core::v1::ConfigMap;

    const ADDED: &str = r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"app-config","namespace":"default","uid":"6f0e5c0e-9d1c-4f3e-9a57-2f7c3b1f0a11","resourceVersion":"48190","creationTimestamp":"2024-05-01T10:00:00Z"},"data":{"mode":"fast"}}}"#;
    const BOOKMARK: &str = r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"48213","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
    const ERROR: &str = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1200 (1350)","reason":"Expired","code":410}}"#;

    #[test]
    fn events_round_trip_their_exact_wire_form() {
        // Bookmarks and errors come back byte for byte.
        for line in [BOOKMARK, ERROR] {
            let event = WatchEvent::<DynamicObject>::from_json(line.as_bytes()).unwrap();
            assert_eq!(serde_json::to_string(&event).unwrap(), line);
        }
        // Objects keep every field; k8s-openapi writes metadata keys alphabetically.
        let event = WatchEvent::<DynamicObject>::from_json(ADDED.as_bytes()).unwrap();
        let written: serde_json::Value = serde_json::to_value(&event).unwrap();
        let original: serde_json::Value = serde_json::from_str(ADDED).unwrap();
        assert_eq!(written, original);
        assert!(serde_json::to_string(&event).unwrap().starts_with(
            r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":"#
        ));
    }

    #[test]
    fn typed_objects_decode_straight_into_their_type() {
        let event = WatchEvent::<ConfigMap>::from_json(ADDED.as_bytes()).unwrap();
        let WatchEvent::Added(cm) = event else {
            panic!("expected ADDED")
        };
        assert_eq!(cm.name(), "app-config");
        assert_eq!(cm.data.unwrap()["mode"], "fast");
    }

    #[test]
    fn bookmarks_decode_without_the_full_object() {
        // A 1.31 Pod bookmark carries zero-valued required fields; they are ignored.
        let pod_bookmark = br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"48302","creationTimestamp":null},"spec":{"containers":null},"status":{}}}"#;
        let event = WatchEvent::<ConfigMap>::from_json(pod_bookmark).unwrap();
        let WatchEvent::Bookmark(bookmark) = &event else {
            panic!("expected BOOKMARK")
        };
        assert_eq!(bookmark.resource_version, "48302");
        assert!(!bookmark.is_initial_events_end());
        assert_eq!(event.resource_version(), Some("48302"));

        let WatchEvent::Bookmark(end) =
            WatchEvent::<ConfigMap>::from_json(BOOKMARK.as_bytes()).unwrap()
        else {
            panic!("expected BOOKMARK")
        };
        assert!(end.is_initial_events_end());
    }

    #[test]
    fn error_events_carry_the_status() {
        let WatchEvent::Error(status) =
            WatchEvent::<ConfigMap>::from_json(ERROR.as_bytes()).unwrap()
        else {
            panic!("expected ERROR")
        };
        assert_eq!(status.code, 410);
        assert_eq!(status.reason, "Expired");
    }

    #[test]
    fn lines_that_only_look_canonical_decode_as_the_scanning_path_says() {
        // Something after the object: a repeated member is refused, as serde_json does,
        // never decoded as the first type.
        for line in [
            &br#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"type":"DELETED"}"#[..],
            br#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"object":{"metadata":{"name":"b"}}}"#,
            br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}{}}"#,
            br#"{"type":"ADDED","object":{"metadata":{"name":"a"}},}"#,
        ] {
            let text = String::from_utf8_lossy(line);
            assert!(
                WatchEvent::<ConfigMap>::from_json(line).is_err(),
                "{text} is not one event"
            );
            assert!(
                WatchEvent::<DynamicObject>::from_json(line).is_err(),
                "{text} is not one event (dynamic)"
            );
        }
        // Another member after the object is fine, and so is trailing whitespace.
        for line in [
            &br#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"extra":1}"#[..],
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}  \r",
        ] {
            let event = WatchEvent::<ConfigMap>::from_json(line).unwrap();
            assert_eq!(event.object().map(Object::name), Some("a"));
        }
        // An object that does not fit the type is reported as such.
        let bad = br#"{"type":"MODIFIED","object":{"metadata":{"name":5}}}"#;
        assert!(matches!(
            WatchEvent::<ConfigMap>::from_json(bad),
            Err(WatchDecodeError::InvalidObject {
                event_type: "MODIFIED",
                ..
            })
        ));
    }

    #[test]
    fn escaped_or_spaced_envelopes_decode_like_plain_ones() {
        let plain: WatchEvent<ConfigMap> =
            WatchEvent::from_json(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#)
                .unwrap();
        for line in [
            &br#" { "object" : {"metadata":{"name":"a"}} , "type" : "ADDED" } "#[..],
            br#"{"type":"ADD\u0045D","object":{"metadata":{"name":"a"}}}"#,
        ] {
            assert_eq!(WatchEvent::<ConfigMap>::from_json(line).unwrap(), plain);
        }
        assert!(
            WatchEvent::<ConfigMap>::from_json(br#"{"type":"ADDED","type":"DELETED","object":{}}"#)
                .is_err()
        );
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        let cases: &[&[u8]] = &[
            b"",
            b"{",
            b"null",
            br#"{"type":"ADDED"}"#,
            br#"{"object":{}}"#,
            br#"{"type":"ADDED","object":{}} trailing"#,
            b"\xff\xfe",
        ];
        for line in cases {
            let err = WatchEvent::<ConfigMap>::from_json(line).unwrap_err();
            assert!(matches!(err, WatchDecodeError::Malformed { .. }), "{err}");
        }
        // A sound event whose object is not a ConfigMap: the stream itself is intact.
        let err = WatchEvent::<ConfigMap>::from_json(
            br#"{"type":"MODIFIED","object":{"metadata":{"name":5}}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                WatchDecodeError::InvalidObject {
                    event_type: "MODIFIED",
                    ..
                }
            ),
            "{err}"
        );
        let err =
            WatchEvent::<ConfigMap>::from_json(br#"{"type":"SNAPSHOT","object":{}}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"unknown watch event type "SNAPSHOT" (expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR)"#
        );
    }
}
