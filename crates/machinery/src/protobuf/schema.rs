//! The protobuf schema of the built-in types, read from `schema.txt` (generated from the
//! upstream `.proto` files and Go structs by `scripts/gen-protobuf-schema`).

use std::collections::HashMap;
use std::sync::LazyLock;

use super::ProtobufError;

const SCHEMA_TEXT: &str = include_str!("schema.txt");

/// The apiVersion under which apimachinery's own kinds (Status, DeleteOptions, ...) are
/// listed; every group version also serves them.
const META_API_VERSION: &str = "meta.k8s.io/v1";

/// A scalar protobuf type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Double,
    Float,
}

/// A field's type: a scalar or a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    Scalar(Scalar),
    Message(MessageRef),
}

/// A message, by its full name and its place in the schema (found without hashing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MessageRef {
    pub(crate) name: &'static str,
    index: u32,
}

/// What [`Schema::message`] looks a message up by.
pub(crate) trait Lookup: Copy + std::fmt::Display {
    fn find(self, schema: &Schema) -> Option<&Message>;
}

impl Lookup for MessageRef {
    fn find(self, schema: &Schema) -> Option<&Message> {
        usize::try_from(self.index)
            .ok()
            .and_then(|i| schema.messages.get(i))
    }
}

impl std::fmt::Display for MessageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Lookup for &str {
    fn find(self, schema: &Schema) -> Option<&Message> {
        schema.index.get(self).and_then(|i| schema.messages.get(*i))
    }
}

/// Singular, repeated, or a map (key scalar and value type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Label {
    Optional(Type),
    Repeated(Type),
    Map(Scalar, Type),
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) number: u32,
    pub(crate) label: Label,
    /// The JSON name (empty for inlined fields).
    pub(crate) json: &'static str,
    /// `omitempty` in JSON: a zero value is left out.
    pub(crate) omitempty: bool,
    /// A Go pointer: present on the wire only when set, so a zero value is meaningful.
    pub(crate) pointer: bool,
    /// Inlined in JSON: the nested message's fields sit in the parent object.
    pub(crate) inline: bool,
}

/// One message.
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) name: &'static str,
    /// A Go named slice: an array in JSON, `repeated items = 1` on the wire.
    pub(crate) array: bool,
    /// A type whose JSON form is not its message (Time, Quantity, ...).
    pub(crate) special: Option<super::special::Special>,
    pub(crate) fields: Vec<Field>,
}

impl Message {
    pub(crate) fn field(&self, number: u32) -> Option<&Field> {
        self.fields
            .binary_search_by_key(&number, |f| f.number)
            .ok()
            .and_then(|i| self.fields.get(i))
    }
}

/// FNV-1a: message names are short and trusted, and this lookup is on the decoder's path.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

type FnvMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// Every message and top-level kind.
#[derive(Debug)]
pub(crate) struct Schema {
    messages: Vec<Message>,
    index: FnvMap<&'static str, usize>,
    kinds: HashMap<(&'static str, &'static str), usize>,
}

static SCHEMA: LazyLock<Result<Schema, String>> = LazyLock::new(|| Schema::parse(SCHEMA_TEXT));

/// The built-in schema.
pub(crate) fn schema() -> Result<&'static Schema, ProtobufError> {
    SCHEMA
        .as_ref()
        .map_err(|e| ProtobufError::Schema(e.clone()))
}

fn scalar(name: &str) -> Option<Scalar> {
    Some(match name {
        "string" => Scalar::String,
        "bytes" => Scalar::Bytes,
        "bool" => Scalar::Bool,
        "int32" => Scalar::Int32,
        "int64" => Scalar::Int64,
        "uint32" => Scalar::Uint32,
        "uint64" => Scalar::Uint64,
        "double" => Scalar::Double,
        "float" => Scalar::Float,
        _ => return None,
    })
}

impl Schema {
    fn parse(text: &'static str) -> Result<Self, String> {
        // First the names, so that fields can refer to messages defined after them.
        let mut names: FnvMap<&'static str, usize> = FnvMap::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("message ") {
                let name = rest.split_whitespace().next().unwrap_or_default();
                let next = names.len();
                names.insert(name, next);
            }
        }
        let type_of = |name: &'static str| -> Option<Type> {
            if let Some(s) = scalar(name) {
                return Some(Type::Scalar(s));
            }
            let found = names.get(name)?;
            Some(Type::Message(MessageRef {
                name,
                index: u32::try_from(*found).ok()?,
            }))
        };
        let mut messages: Vec<Message> = Vec::with_capacity(names.len());
        let mut kinds = HashMap::new();
        let mut current: Option<Message> = None;
        for (index, line) in text.lines().enumerate() {
            let bad = || format!("schema.txt line {}: {line:?}", index + 1);
            let words: Vec<&'static str> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                [first, ..] if first.starts_with('#') => {}
                ["kind", api_version, kind, message] => {
                    kinds.insert((*api_version, *kind), *names.get(message).ok_or_else(bad)?);
                }
                ["message", name, rest @ ..] => {
                    if let Some(done) = current.take() {
                        messages.push(done);
                    }
                    current = Some(Message {
                        name,
                        array: rest == ["array"],
                        special: super::special::special(name),
                        fields: Vec::new(),
                    });
                }
                [number, label, ty, json, flags] => {
                    let message = current.as_mut().ok_or_else(bad)?;
                    let label = match *label {
                        "o" => Label::Optional(type_of(ty).ok_or_else(bad)?),
                        "r" => Label::Repeated(type_of(ty).ok_or_else(bad)?),
                        "m" => {
                            let (key, value) = ty.split_once(':').ok_or_else(bad)?;
                            Label::Map(
                                scalar(key).ok_or_else(bad)?,
                                type_of(value).ok_or_else(bad)?,
                            )
                        }
                        _ => return Err(bad()),
                    };
                    message.fields.push(Field {
                        number: number.parse().map_err(|_| bad())?,
                        label,
                        json: if *json == "-" { "" } else { json },
                        omitempty: flags.contains('o'),
                        pointer: flags.contains('p'),
                        inline: flags.contains('i'),
                    });
                }
                _ => return Err(bad()),
            }
        }
        if let Some(done) = current.take() {
            messages.push(done);
        }
        if messages.len() != names.len() {
            return Err("schema.txt names a message twice".to_owned());
        }
        for message in &mut messages {
            message.fields.sort_by_key(|f| f.number);
        }
        Ok(Self {
            messages,
            index: names,
            kinds,
        })
    }

    pub(crate) fn message(&self, name: impl Lookup) -> Result<&Message, ProtobufError> {
        name.find(self)
            .ok_or_else(|| ProtobufError::Schema(format!("no message {name}")))
    }

    /// [`kind`](Self::kind), or [`ProtobufError::UnknownKind`].
    pub(crate) fn kind_message(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<&Message, ProtobufError> {
        self.kind(api_version, kind)
            .ok_or_else(|| ProtobufError::UnknownKind {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            })
    }

    /// The message of a kind (apimachinery's kinds, such as Status, under any apiVersion).
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<&Message> {
        self.kinds
            .get(&(api_version, kind))
            .or_else(|| self.kinds.get(&(META_API_VERSION, kind)))
            .and_then(|i| self.messages.get(*i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_schema_parses_and_has_the_kinds_and_special_types() {
        let schema = schema().unwrap();
        for (api_version, kind) in [
            ("v1", "Pod"),
            ("v1", "PodList"),
            ("v1", "Secret"),
            ("v1", "Status"),
            ("apps/v1", "Deployment"),
            ("batch/v1", "CronJob"),
            ("autoscaling/v1", "Scale"),
            ("policy/v1", "Eviction"),
            ("authentication.k8s.io/v1", "TokenRequest"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ] {
            assert!(
                schema.kind(api_version, kind).is_some(),
                "{api_version} {kind}"
            );
        }
        let volume = schema.message("k8s.io.api.core.v1.Volume").unwrap();
        assert!(volume.field(2).unwrap().inline);
        let meta = schema
            .message("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta")
            .unwrap();
        let deletion_grace = meta.field(10).unwrap();
        assert!(deletion_grace.pointer && deletion_grace.omitempty);
        assert!(schema.kind("example.com/v1", "Widget").is_none());
    }

    /// Regenerating the schema from the upstream sources changes nothing. The sources are
    /// three git directories (kubernetes/api, apimachinery, apiextensions-apiserver) named
    /// by `KUBECLIENT_PB_SOURCES` (colon-separated); without them this prints `skipped`.
    #[test]
    fn regenerating_the_schema_changes_nothing() {
        let Ok(sources) = std::env::var("KUBECLIENT_PB_SOURCES") else {
            eprintln!("skipped: KUBECLIENT_PB_SOURCES is not set");
            return;
        };
        let script = crate::manifest_dir().join("../../scripts/gen-protobuf-schema");
        let output = std::process::Command::new(script)
            .args(sources.split(':'))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            String::from_utf8_lossy(&output.stdout) == SCHEMA_TEXT,
            "schema.txt differs from what scripts/gen-protobuf-schema generates"
        );
    }
}
