//! Lists in protobuf: the envelope names the list kind, the list message has `metadata`
//! (ListMeta) as field 1 and each item as a field 2. Splitting first lets the items be
//! decoded one by one (on worker threads), and an item's key and resourceVersion be read
//! without decoding it.

use serde_json::Value;

use super::schema::schema;
use super::special::utf8;
use super::wire::{Reader, WireValue, put_len};
use super::{ProtobufError, envelope, from_json, to_json};
use crate::list::ItemMeta;

/// A protobuf list body split into its metadata and the bytes of each item.
#[derive(Debug)]
pub struct ProtobufList<'a> {
    /// The list's apiVersion, e.g. `v1`.
    pub api_version: &'a str,
    /// The list's kind, e.g. `PodList`.
    pub kind: &'a str,
    /// `metadata` (ListMeta) in its JSON form.
    pub metadata: Value,
    /// Each item's message bytes, in order.
    pub items: Vec<&'a [u8]>,
}

impl ProtobufList<'_> {
    /// The kind of the items (`PodList` holds `Pod`).
    pub fn item_kind(&self) -> &str {
        self.kind.strip_suffix("List").unwrap_or(self.kind)
    }

    /// Decodes one item into its JSON form, with `apiVersion` and `kind` set.
    ///
    /// # Errors
    ///
    /// [`ProtobufError`] for bytes that do not decode as the item kind.
    pub fn decode_item(&self, item: &[u8]) -> Result<Value, ProtobufError> {
        decode_item(self.api_version, self.item_kind(), item)
    }
}

/// Splits an enveloped protobuf list into its metadata and item bytes.
///
/// ```
/// use kubeclient_machinery::protobuf;
///
/// let list = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList",
///     "metadata": {"resourceVersion": "7"},
///     "items": [{"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "5"}}]});
/// let bytes = protobuf::encode(&list)?;
/// let split = protobuf::split_list(&bytes)?;
/// assert_eq!(split.metadata["resourceVersion"], "7");
/// let meta = protobuf::peek_item_meta(split.items[0]).unwrap();
/// assert_eq!((meta.key().as_str(), meta.resource_version.as_str()), ("ns/a", "5"));
/// assert_eq!(split.decode_item(split.items[0])?["kind"], "ConfigMap");
/// # Ok::<(), protobuf::ProtobufError>(())
/// ```
///
/// # Errors
///
/// [`ProtobufError`] for bytes that are not an enveloped list of a built-in kind.
pub fn split_list(bytes: &[u8]) -> Result<ProtobufList<'_>, ProtobufError> {
    let (api_version, kind, raw) = envelope::open(bytes)?;
    let schema = schema()?;
    let message = schema.kind_message(api_version, kind)?;
    let mut list = ProtobufList {
        api_version,
        kind,
        metadata: Value::Object(serde_json::Map::new()),
        items: Vec::new(),
    };
    let mut reader = Reader::new(raw);
    while let Some((number, value)) = reader.field()? {
        match (number, value) {
            (1, WireValue::Len(meta)) => {
                let field = message.field(1).ok_or(ProtobufError::WrongWireType)?;
                let super::schema::Label::Optional(super::schema::Type::Message(name)) =
                    field.label
                else {
                    return Err(ProtobufError::WrongWireType);
                };
                list.metadata = to_json::message(schema, schema.message(name)?, meta, 1)?;
            }
            (2, WireValue::Len(item)) => list.items.push(item),
            _ => {}
        }
    }
    Ok(list)
}

/// Decodes one item message (no envelope) of a kind into its JSON form, with `apiVersion`
/// and `kind` set.
///
/// # Errors
///
/// [`ProtobufError`] for an unknown kind or bytes that do not decode as it.
pub fn decode_item(api_version: &str, kind: &str, item: &[u8]) -> Result<Value, ProtobufError> {
    let schema = schema()?;
    let message = schema.kind_message(api_version, kind)?;
    let decoded = to_json::message(schema, message, item, 1)?;
    let mut object = serde_json::Map::new();
    object.insert(
        "apiVersion".to_owned(),
        Value::String(api_version.to_owned()),
    );
    object.insert("kind".to_owned(), Value::String(kind.to_owned()));
    if let Value::Object(fields) = decoded {
        object.extend(fields);
    }
    Ok(Value::Object(object))
}

/// An item's namespace, name and resourceVersion, read from its `metadata` (field 1, an
/// ObjectMeta) without decoding the rest; `None` if the bytes are not a message.
pub fn peek_item_meta(item: &[u8]) -> Option<ItemMeta> {
    let mut reader = Reader::new(item);
    let mut meta = ItemMeta {
        namespace: String::new(),
        name: String::new(),
        resource_version: String::new(),
    };
    while let Some((number, value)) = reader.field().ok()? {
        let (1, WireValue::Len(object_meta)) = (number, value) else {
            continue;
        };
        let mut fields = Reader::new(object_meta);
        while let Some((number, value)) = fields.field().ok()? {
            let WireValue::Len(text) = value else {
                continue;
            };
            match number {
                1 => meta.name = utf8(text).ok()?.to_owned(),
                3 => meta.namespace = utf8(text).ok()?.to_owned(),
                6 => meta.resource_version = utf8(text).ok()?.to_owned(),
                _ => {}
            }
        }
    }
    Some(meta)
}

/// Encodes an object of a built-in kind as its message alone, without the envelope: the
/// form of a list item.
///
/// # Errors
///
/// As [`encode`](super::encode).
pub fn encode_item(value: &Value) -> Result<Vec<u8>, ProtobufError> {
    let (api_version, kind) = envelope::type_meta(value)?;
    let schema = schema()?;
    let message = schema.kind_message(api_version, kind)?;
    let mut out = Vec::new();
    from_json::message(schema, message, value, 0, &mut out)?;
    Ok(out)
}

/// An enveloped list body from its metadata (ListMeta's JSON form) and items already
/// encoded by [`encode_item`], without decoding them again.
///
/// ```
/// use kubeclient_machinery::protobuf;
///
/// let item = protobuf::encode_item(&serde_json::json!(
///     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}))?;
/// let body = protobuf::encode_list("v1", "ConfigMapList", &serde_json::json!({"resourceVersion": "9"}), &[item])?;
/// let list = protobuf::decode(&body)?;
/// assert_eq!(list["items"][0]["metadata"]["name"], "a");
/// # Ok::<(), protobuf::ProtobufError>(())
/// ```
///
/// # Errors
///
/// [`ProtobufError`] when the list kind is unknown or the metadata does not fit ListMeta.
pub fn encode_list(
    api_version: &str,
    list_kind: &str,
    metadata: &Value,
    items: &[impl AsRef<[u8]>],
) -> Result<Vec<u8>, ProtobufError> {
    let schema = schema()?;
    let message = schema.kind_message(api_version, list_kind)?;
    let Some(super::schema::Label::Optional(super::schema::Type::Message(meta_name))) =
        message.field(1).map(|f| f.label)
    else {
        return Err(ProtobufError::Schema(format!(
            "{list_kind} has no metadata"
        )));
    };
    let mut meta = Vec::new();
    from_json::message(schema, schema.message(meta_name)?, metadata, 1, &mut meta)?;
    let mut raw = Vec::with_capacity(
        items.iter().map(|i| i.as_ref().len() + 6).sum::<usize>() + meta.len() + 8,
    );
    put_len(&mut raw, 1, &meta);
    for item in items {
        put_len(&mut raw, 2, item.as_ref());
    }
    Ok(envelope::wrap(api_version, list_kind, &raw))
}
