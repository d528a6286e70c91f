//! `fieldValidation` (Ignore, Warn, Strict): what happens to fields of a built-in
//! object that its type does not have, and to fields given twice in a JSON body.
//!
//! As in kube-apiserver, unknown fields never reach storage: with `Ignore` they are
//! dropped silently, with `Warn` (the server default) each is reported in a
//! `Warning: 299 - "unknown field \"spec.foo\""` header, and with `Strict` the request
//! fails with 400 `strict decoding error: unknown field "spec.foo"`. Custom resources
//! are left as they are (their structural schemas are not enforced here).

use std::collections::HashSet;
use std::fmt::Write as _;

use kubeclient_machinery::{Status, StatusCause};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::call::Call;
use crate::registry::store::Decoding;
use crate::registry::validate::relaxed_quantities;
use crate::registry::{BuiltinType, ResourceDef, WithType, builtin_type};
use crate::response::{HandlerResult, fail};

/// The `fieldValidation` directive of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop them and say so in `Warning` headers (the default).
    Warn,
    /// Refuse the request.
    Strict,
}

impl Call {
    /// The `fieldValidation` query parameter.
    ///
    /// # Errors
    ///
    /// 422 for a value other than `Ignore`, `Warn` or `Strict`.
    pub(crate) fn field_validation(&self) -> HandlerResult<FieldValidation> {
        match self.query.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(fail(Status::invalid(
                "meta.k8s.io",
                "CreateOptions",
                "",
                vec![StatusCause::new(
                    "FieldValueNotSupported",
                    &format!(
                        "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                    "fieldValidation",
                )],
            ))),
        }
    }

    /// Applies the request's `fieldValidation` to `object` (a built-in object about to be
    /// stored): drops its unknown fields and returns the warnings to send, or fails.
    /// `body` is the request body, checked for duplicate fields when it is JSON.
    ///
    /// # Errors
    ///
    /// 400 under `Strict` when a field is unknown or duplicated; 422 for a bad directive.
    pub(crate) fn validate_fields(
        &self,
        object: &mut Value,
        decoding: Decoding,
    ) -> HandlerResult<Vec<String>> {
        let directive = self.field_validation()?;
        if !self.resource.builtin {
            return Ok(Vec::new());
        }
        let unknown = unknown_fields(&self.resource, object);
        for path in &unknown {
            remove_path(object, path);
        }
        if directive == FieldValidation::Ignore {
            return Ok(Vec::new());
        }
        let mut problems: Vec<String> = unknown
            .iter()
            .map(|path| format!("unknown field {:?}", display_path(path)))
            .collect();
        if decoding == Decoding::Body
            && self
                .content_type
                .split(';')
                .next()
                .is_some_and(|m| m.trim().ends_with("json"))
        {
            problems.extend(
                duplicate_fields(&self.body)
                    .into_iter()
                    .map(|path| format!("duplicate field {path:?}")),
            );
        }
        if problems.is_empty() || directive == FieldValidation::Warn {
            return Ok(problems);
        }
        if self.content_type.starts_with("application/apply-patch")
            && let Some(path) = unknown.first()
        {
            // Server-side apply reports the first field its schema lacks.
            let metadata = object.get("metadata");
            let meta = |field: &str| {
                metadata
                    .and_then(|m| m.get(field))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            return Err(fail(Status::bad_request(format!(
                "failed to create typed patch object ({}/{}; {}, Kind={}): .{}: field not declared in schema",
                meta("namespace"),
                meta("name"),
                self.resource.api_version(),
                self.resource.kind,
                display_path(path),
            ))));
        }
        let strict = format!("strict decoding error: {}", problems.join(", "));
        let message = match decoding {
            Decoding::Body => format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: {strict}",
                kind = self.resource.kind,
                version = self.resource.version,
            ),
            Decoding::Patch => strict,
        };
        Err(fail(Status::bad_request(message)))
    }
}

/// One step of a path into a JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The paths of the fields of `object` that its built-in type does not have.
fn unknown_fields(resource: &ResourceDef, object: &Value) -> Vec<Vec<Step>> {
    let collect = |object: &Value| {
        builtin_type(&resource.group, &resource.kind, Unknown(object)).unwrap_or(Ok(Vec::new()))
    };
    match collect(object) {
        Ok(paths) => paths,
        // Quantities written as numbers decode once made strings (as validation does).
        Err(_) => relaxed_quantities(object)
            .and_then(|relaxed| collect(&relaxed).ok())
            .unwrap_or_default(),
    }
}

/// Decodes with a type, collecting the paths of the fields it ignores.
struct Unknown<'a>(&'a Value);

impl WithType for Unknown<'_> {
    type Output = Result<Vec<Vec<Step>>, serde_json::Error>;

    fn with<T: BuiltinType>(self) -> Self::Output {
        let mut paths = Vec::new();
        serde_ignored::deserialize::<_, _, T>(self.0, |path| paths.push(steps(&path)))?;
        Ok(paths)
    }
}

fn steps(path: &serde_ignored::Path<'_>) -> Vec<Step> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut steps = steps(parent);
            steps.push(Step::Index(*index));
            steps
        }
        Path::Map { parent, key } => {
            let mut steps = steps(parent);
            steps.push(Step::Key(key.clone()));
            steps
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => steps(parent),
    }
}

/// `spec.template.spec.containers[0].imagee`, as the API server writes field paths.
fn display_path(path: &[Step]) -> String {
    let mut text = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Step::Index(index) => {
                let _ = write!(text, "[{index}]");
            }
        }
    }
    text
}

fn remove_path(value: &mut Value, path: &[Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = value;
    for step in parents {
        let next = match (step, current) {
            (Step::Key(key), Value::Object(map)) => map.get_mut(key),
            (Step::Index(index), Value::Array(items)) => items.get_mut(*index),
            _ => None,
        };
        let Some(next) = next else { return };
        current = next;
    }
    if let (Step::Key(key), Value::Object(map)) = (last, current) {
        map.remove(key);
    }
}

/// The paths of keys that appear twice in one JSON object of `body` (none when the body
/// is not valid JSON: decoding reports that).
fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let seed = DuplicateScan {
        path: String::new(),
        found: &mut found,
    };
    if seed.deserialize(&mut deserializer).is_err() {
        return Vec::new();
    }
    found
}

/// Walks a JSON value, recording the paths of repeated keys.
struct DuplicateScan<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for DuplicateScan<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DuplicateScan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !keys.insert(key) {
                self.found.push(path.clone());
            }
            map.next_value_seed(DuplicateScan {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let path = format!("{}[{index}]", self.path);
            let seed = DuplicateScan {
                path,
                found: self.found,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            index = index.saturating_add(1);
        }
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_as_the_api_server_writes_them() {
        let path = vec![
            Step::Key("spec".into()),
            Step::Key("containers".into()),
            Step::Index(0),
            Step::Key("imagee".into()),
        ];
        assert_eq!(display_path(&path), "spec.containers[0].imagee");
        let mut value = serde_json::json!({"spec": {"containers": [{"imagee": "x", "name": "c"}]}});
        remove_path(&mut value, &path);
        assert_eq!(
            value,
            serde_json::json!({"spec": {"containers": [{"name": "c"}]}})
        );
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        let body = br#"{"a":1,"b":{"c":[{"d":1,"d":2}],"c":3},"a":2}"#;
        assert_eq!(duplicate_fields(body), ["b.c[0].d", "b.c", "a"]);
        assert!(duplicate_fields(b"{not json").is_empty());
    }
}
