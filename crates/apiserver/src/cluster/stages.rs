//! [`Stages`]: how long the simulated kubelets take over a Pod's steps, in a subset of
//! kwok's `Stage` format (`kwok.x-k8s.io/v1alpha1`), so a test or a demo can make some
//! Pods slow to start, to become ready, to complete or to go.
//!
//! A stages file holds YAML (or JSON) documents, each a `Stage` (or a `List` of them):
//!
//! ```yaml
//! apiVersion: kwok.x-k8s.io/v1alpha1
//! kind: Stage
//! metadata:
//!   name: pod-ready-slow        # pod-create | pod-ready | pod-complete | pod-delete [-anything]
//! spec:
//!   resourceRef: {apiGroup: v1, kind: Pod}
//!   selector:
//!     matchLabels: {speed: slow}
//!     matchAnnotations: {team: a}
//!     matchExpressions:
//!     - {key: '.metadata.labels["tier"]', operator: In, values: [web]}
//!   delay:
//!     durationMilliseconds: 2000
//!     jitterDurationMilliseconds: 5000
//! ```
//!
//! The transition a stage delays is the one its name starts with (kwok's default pod
//! stages' names): `pod-create` the start of a bound Pod (address, containers), `pod-ready`
//! a started container becoming ready (after its readiness probe too), `pod-complete` the
//! final phase once every container ended, `pod-delete` the end of a deleted Pod (its
//! containers killed, its final status, its removal) after its grace period. Of the stages of a transition, the first (in file
//! order) whose selector matches the Pod decides; none matching, no delay. The delay
//! is `durationMilliseconds`, or a uniformly random one between it and
//! `jitterDurationMilliseconds` when that is larger, times the cluster's time scale.
//!
//! Read: `metadata.name`, `spec.resourceRef` (`kind` must be `Pod`), `spec.selector`'s
//! `matchLabels`, `matchAnnotations` and `matchExpressions` whose key is
//! `.metadata.labels["K"]` or `.metadata.annotations["K"]` (operators `In`, `NotIn`,
//! `Exists`, `DoesNotExist`), and `spec.delay`'s two durations. Expressions on other
//! fields (kwok's `.status.phase`, `.metadata.deletionTimestamp` ...) state the
//! transition's preconditions, which the stage's name already implies: they are
//! accepted and not evaluated. `weight`, `durationFrom`, `jitterDurationFrom` and `next`
//! are ignored (the simulated kubelet writes the status itself).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// The largest stages file read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The longest delay (a day), in milliseconds.
const MAX_DELAY_MS: u64 = 86_400_000;

/// A step of a Pod a stage can delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transition {
    /// The kubelet starts a bound Pod.
    Create,
    /// A started container becomes ready.
    Ready,
    /// A Pod whose containers all ended gets its final phase.
    Complete,
    /// A deleted Pod whose grace period ended is stopped and removed.
    Delete,
}

impl Transition {
    const ALL: [(Transition, &'static str); 4] = [
        (Transition::Create, "pod-create"),
        (Transition::Ready, "pod-ready"),
        (Transition::Complete, "pod-complete"),
        (Transition::Delete, "pod-delete"),
    ];
}

/// Which map of the Pod's metadata an expression reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Labels,
    Annotations,
}

#[derive(Clone, Debug)]
enum Operator {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

#[derive(Clone, Debug)]
struct Expression {
    field: Field,
    key: String,
    operator: Operator,
}

/// One stage: the transition it delays, whom, and by how much.
#[derive(Clone, Debug)]
struct Stage {
    transition: Transition,
    match_labels: Vec<(String, String)>,
    match_annotations: Vec<(String, String)>,
    expressions: Vec<Expression>,
    duration_ms: u64,
    jitter_ms: u64,
}

/// The delays of a simulated cluster's Pod transitions, from a kwok-style stages file;
/// the default has none (every step as fast as the kubelet goes).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use kubeclient_apiserver::{ApiServer, Stages};
///
/// let stages = Stages::parse(r#"
/// apiVersion: kwok.x-k8s.io/v1alpha1
/// kind: Stage
/// metadata: {name: pod-create-slow}
/// spec:
///   resourceRef: {apiGroup: v1, kind: Pod}
///   selector: {matchLabels: {speed: slow}}
///   delay: {durationMilliseconds: 3000}
/// "#)?;
/// assert_eq!(stages.len(), 1);
/// let server = ApiServer::builder().nodes(1).stages(stages).start().await?;
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stages {
    stages: Vec<Stage>,
}

/// Why a stages file was refused.
#[derive(Debug, thiserror::Error)]
pub enum StagesError {
    /// The file could not be read.
    #[error("cannot read the stages file {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid stages file: where, and what is wrong.
    #[error("{origin}: {message}")]
    Invalid {
        /// The file (or `stages`) and the document.
        origin: String,
        /// The field at fault and why.
        message: String,
    },
}

impl Stages {
    /// The stages of a YAML or JSON text.
    ///
    /// # Errors
    ///
    /// [`StagesError::Invalid`] naming the document and the field at fault.
    pub fn parse(text: &str) -> Result<Stages, StagesError> {
        Stages::parse_from(text, "stages")
    }

    /// The stages of the file at `path` (YAML or JSON, at most 4 MiB).
    ///
    /// # Errors
    ///
    /// [`StagesError::Read`] when it cannot be read, [`StagesError::Invalid`] naming the
    /// file, the document and the field at fault.
    pub fn load(path: impl AsRef<Path>) -> Result<Stages, StagesError> {
        let path = path.as_ref();
        let read_error = |source| StagesError::Read {
            path: path.display().to_string(),
            source,
        };
        let size = std::fs::metadata(path).map_err(read_error)?.len();
        if size > MAX_FILE_BYTES {
            return Err(StagesError::Invalid {
                origin: format!("stages file {}", path.display()),
                message: format!("{size} bytes, more than the {MAX_FILE_BYTES} read"),
            });
        }
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        Stages::parse_from(&text, &format!("stages file {}", path.display()))
    }

    /// How many stages there are.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    fn parse_from(text: &str, origin: &str) -> Result<Stages, StagesError> {
        let documents: Vec<Value> =
            serde_saphyr::from_multiple(text).map_err(|err| StagesError::Invalid {
                origin: origin.to_owned(),
                message: format!("not YAML or JSON: {err}"),
            })?;
        let mut stages = Vec::new();
        for (index, document) in documents.iter().enumerate() {
            let items: Vec<&Value> = match document {
                Value::Null => continue,
                Value::Array(items) => items.iter().collect(),
                doc if doc["kind"] == "List" => {
                    doc["items"].as_array().into_iter().flatten().collect()
                }
                doc => vec![doc],
            };
            for item in items {
                let name = item.pointer("/metadata/name").and_then(Value::as_str);
                let invalid = |message: String| StagesError::Invalid {
                    origin: match name {
                        Some(name) => format!("{origin}: document {} (Stage {name:?})", index + 1),
                        None => format!("{origin}: document {}", index + 1),
                    },
                    message,
                };
                stages.push(stage(item).map_err(invalid)?);
            }
        }
        Ok(Stages { stages })
    }

    /// The (unscaled) delay of `transition` for `pod`: the first matching stage's.
    pub(crate) fn delay(&self, transition: Transition, pod: &Value) -> Duration {
        let Some(stage) = self
            .stages
            .iter()
            .find(|s| s.transition == transition && s.matches(pod))
        else {
            return Duration::ZERO;
        };
        let ms = if stage.jitter_ms > stage.duration_ms {
            fastrand::u64(stage.duration_ms..=stage.jitter_ms)
        } else {
            stage.duration_ms
        };
        Duration::from_millis(ms)
    }
}

impl Stage {
    fn matches(&self, pod: &Value) -> bool {
        let map = |field: Field| {
            let name = match field {
                Field::Labels => "labels",
                Field::Annotations => "annotations",
            };
            pod.pointer(&format!("/metadata/{name}"))
                .and_then(Value::as_object)
        };
        let value = |field: Field, key: &str| map(field).and_then(|m| m.get(key)?.as_str());
        self.match_labels
            .iter()
            .all(|(k, v)| value(Field::Labels, k) == Some(v))
            && self
                .match_annotations
                .iter()
                .all(|(k, v)| value(Field::Annotations, k) == Some(v))
            && self.expressions.iter().all(|e| {
                let found = value(e.field, &e.key);
                match &e.operator {
                    Operator::In(values) => found.is_some_and(|f| values.iter().any(|v| v == f)),
                    Operator::NotIn(values) => found.is_none_or(|f| values.iter().all(|v| v != f)),
                    Operator::Exists => found.is_some(),
                    Operator::DoesNotExist => found.is_none(),
                }
            })
    }
}

/// One `Stage` object; the error names the field at fault.
fn stage(object: &Value) -> Result<Stage, String> {
    if !object.is_object() {
        return Err("expected a Stage object".to_owned());
    }
    let kind = object["kind"].as_str().unwrap_or("");
    if kind != "Stage" {
        return Err(format!("kind: expected Stage, not {:?}", object["kind"]));
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or("metadata.name: required (pod-create, pod-ready, pod-complete or pod-delete, optionally followed by -anything)")?;
    let transition = Transition::ALL
        .iter()
        .find(|(_, prefix)| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
        .map(|(t, _)| *t)
        .ok_or_else(|| {
            format!("metadata.name: {name:?} names no Pod transition: start it with pod-create, pod-ready, pod-complete or pod-delete")
        })?;
    let spec = &object["spec"];
    let resource_kind = spec.pointer("/resourceRef/kind").and_then(Value::as_str);
    if resource_kind != Some("Pod") {
        return Err(format!(
            "spec.resourceRef.kind: only Pod stages are simulated, not {:?}",
            spec.pointer("/resourceRef/kind").unwrap_or(&Value::Null)
        ));
    }
    let group = spec
        .pointer("/resourceRef/apiGroup")
        .and_then(Value::as_str);
    if !matches!(group, None | Some("" | "v1")) {
        return Err(format!(
            "spec.resourceRef.apiGroup: Pods are in v1, not {group:?}"
        ));
    }
    let selector = &spec["selector"];
    let delay = &spec["delay"];
    Ok(Stage {
        transition,
        match_labels: string_map(&selector["matchLabels"], "spec.selector.matchLabels")?,
        match_annotations: string_map(
            &selector["matchAnnotations"],
            "spec.selector.matchAnnotations",
        )?,
        expressions: expressions(&selector["matchExpressions"])?,
        duration_ms: milliseconds(
            &delay["durationMilliseconds"],
            "spec.delay.durationMilliseconds",
        )?,
        jitter_ms: milliseconds(
            &delay["jitterDurationMilliseconds"],
            "spec.delay.jitterDurationMilliseconds",
        )?,
    })
}

fn string_map(value: &Value, field: &str) -> Result<Vec<(String, String)>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(format!("{field}.{k}: expected a string, not {other}")),
            })
            .collect(),
        other => Err(format!("{field}: expected a map of strings, not {other}")),
    }
}

fn milliseconds(value: &Value, field: &str) -> Result<u64, String> {
    match value {
        Value::Null => Ok(0),
        Value::Number(n) => n.as_u64().filter(|ms| *ms <= MAX_DELAY_MS).ok_or_else(|| {
            format!("{field}: expected whole milliseconds from 0 to {MAX_DELAY_MS}, not {n}")
        }),
        other => Err(format!(
            "{field}: expected whole milliseconds from 0 to {MAX_DELAY_MS}, not {other}"
        )),
    }
}

fn expressions(value: &Value) -> Result<Vec<Expression>, String> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "spec.selector.matchExpressions: expected a list, not {other}"
            ));
        }
    };
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("spec.selector.matchExpressions[{index}]");
        let key = item["key"]
            .as_str()
            .ok_or_else(|| format!("{at}.key: required"))?;
        let values = || -> Result<Vec<String>, String> {
            item["values"]
                .as_array()
                .ok_or_else(|| format!("{at}.values: required for In and NotIn"))?
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{at}.values: expected strings, not {v}"))
                })
                .collect()
        };
        let operator = match item["operator"].as_str() {
            Some("In") => Operator::In(values()?),
            Some("NotIn") => Operator::NotIn(values()?),
            Some("Exists") => Operator::Exists,
            Some("DoesNotExist") => Operator::DoesNotExist,
            _ => {
                return Err(format!(
                    "{at}.operator: expected In, NotIn, Exists or DoesNotExist, not {}",
                    item["operator"]
                ));
            }
        };
        // kwok's keys are jq paths; those on labels and annotations are evaluated.
        let field_key = [
            (Field::Labels, ".metadata.labels["),
            (Field::Annotations, ".metadata.annotations["),
        ]
        .into_iter()
        .find_map(|(field, prefix)| {
            let quoted = key.strip_prefix(prefix)?.strip_suffix(']')?;
            let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
            Some((field, inner.to_owned()))
        });
        if let Some((field, key)) = field_key {
            out.push(Expression {
                field,
                key,
                operator,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = r#"
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready-slow}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchLabels: {speed: slow}
    matchExpressions:
    - {key: '.metadata.annotations["team"]', operator: In, values: [a, b]}
    - {key: '.status.phase', operator: In, values: [Pending]}
  delay: {durationMilliseconds: 2000, jitterDurationMilliseconds: 3000}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  delay: {durationMilliseconds: 10}
"#;

    #[test]
    fn the_first_stage_whose_selector_matches_decides_with_jitter() {
        let stages = Stages::parse(FILE).unwrap();
        assert_eq!(stages.len(), 2);
        let slow = json!({"metadata": {"labels": {"speed": "slow"}, "annotations": {"team": "b"}}});
        for _ in 0..20 {
            let delay = stages.delay(Transition::Ready, &slow);
            assert!((2000..=3000).contains(&delay.as_millis()), "{delay:?}");
        }
        let other =
            json!({"metadata": {"labels": {"speed": "slow"}, "annotations": {"team": "c"}}});
        assert_eq!(
            stages.delay(Transition::Ready, &other),
            Duration::from_millis(10)
        );
        assert_eq!(stages.delay(Transition::Create, &slow), Duration::ZERO);
    }

    #[test]
    fn expressions_on_labels_select_pods() {
        let text = r#"
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete-slow}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.labels["speed"]', operator: In, values: [slow]}
  delay: {durationMilliseconds: 1000}
"#;
        let stages = Stages::parse(text).unwrap();
        let slow = json!({"metadata": {"labels": {"speed": "slow"}}});
        assert_eq!(
            stages.delay(Transition::Delete, &slow),
            Duration::from_secs(1)
        );
        let fast = json!({"metadata": {"labels": {"speed": "fast"}}});
        assert_eq!(stages.delay(Transition::Delete, &fast), Duration::ZERO);
    }

    #[test]
    fn bad_stages_name_the_document_and_the_field() {
        let bad = FILE.replace("durationMilliseconds: 10}", "durationMilliseconds: soon}");
        let err = Stages::parse(&bad).unwrap_err().to_string();
        assert_eq!(
            err,
            "stages: document 2 (Stage \"pod-ready\"): spec.delay.durationMilliseconds: expected whole milliseconds from 0 to 86400000, not \"soon\""
        );
        let err = Stages::parse(&FILE.replace("pod-ready-slow", "node-x"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("document 1 (Stage \"node-x\"): metadata.name"),
            "{err}"
        );
        let err = Stages::parse(
            "kind: Stage\nmetadata: {name: pod-create}\nspec: {resourceRef: {kind: Node}}",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("spec.resourceRef.kind"), "{err}");
        assert!(Stages::parse("a: [").is_err());
    }
}
