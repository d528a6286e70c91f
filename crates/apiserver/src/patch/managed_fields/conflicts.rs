//! Apply conflicts ([`Conflict`], [`ApplyConflicts`]) and their `Status`.

use super::*;

/// One field an apply would change that another manager's entry owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The other entry's manager name.
    pub manager: String,
    /// The other entry's operation.
    pub operation: Operation,
    /// The other entry's apiVersion (printed only for `Update` entries, like upstream).
    pub api_version: String,
    /// Printed as ` at <time>` after the apiVersion of `Update` entries when set.
    /// [`apply`] leaves it `None` to match what real servers print (see there).
    pub time: Option<String>,
    /// The other entry's subresource, printed as ` with subresource "<name>"`.
    pub subresource: Option<String>,
    /// The field, e.g. `.spec.replicas` or `.spec.containers[name="web"].image`.
    pub field: String,
}

impl Conflict {
    /// Upstream's description of the other manager (`printManager`): `"name"`, then
    /// ` with subresource "s"` if any, then for `Update` entries ` using <apiVersion>`
    /// and ` at <time>` if a time is set.
    pub(crate) fn manager_description(&self) -> String {
        let mut out = go_quote(&self.manager);
        if let Some(subresource) = self.subresource.as_deref().filter(|s| !s.is_empty()) {
            out.push_str(" with subresource ");
            out.push_str(&go_quote(subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(" using ");
            out.push_str(&self.api_version);
            if let Some(time) = &self.time {
                out.push_str(" at ");
                out.push_str(time);
            }
        }
        out
    }

    /// Upstream's manager identifier, the JSON it groups and sorts conflicts by: the
    /// entry without fields, with apiVersion only for `Update`. (The time is included when
    /// set so that groups never mix descriptions; upstream's identifiers have none.)
    pub(super) fn identifier(&self) -> String {
        let mut out = format!("{{\"manager\":{}", json_string(&self.manager));
        out.push_str(&format!(
            ",\"operation\":{}",
            json_string(self.operation.as_str())
        ));
        if self.operation == Operation::Update && !self.api_version.is_empty() {
            out.push_str(&format!(
                ",\"apiVersion\":{}",
                json_string(&self.api_version)
            ));
        }
        if let Some(time) = &self.time {
            out.push_str(&format!(",\"time\":{}", json_string(time)));
        }
        if let Some(subresource) = self.subresource.as_deref().filter(|s| !s.is_empty()) {
            out.push_str(&format!(",\"subresource\":{}", json_string(subresource)));
        }
        out.push('}');
        out
    }
}

/// The conflicts that made an apply fail (HTTP 409, reason `Conflict`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApplyConflicts {
    /// The conflicts, grouped by manager in upstream's order when produced by [`apply`].
    pub conflicts: Vec<Conflict>,
}

impl ApplyConflicts {
    /// The `Status.message`, exactly as upstream formats it:
    /// `Apply failed with 1 conflict: conflict with "m" using v1: .data.mode`, or for
    /// several `Apply failed with N conflicts: conflicts with "a":\n- .x\nconflicts with "b" ...`
    /// with managers sorted by their identifier.
    pub(crate) fn message(&self) -> String {
        if let [only] = self.conflicts.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.manager_description(),
                only.field
            );
        }
        let mut groups: BTreeMap<String, (String, Vec<&str>)> = BTreeMap::new();
        for conflict in &self.conflicts {
            groups
                .entry(conflict.identifier())
                .or_insert_with(|| (conflict.manager_description(), Vec::new()))
                .1
                .push(&conflict.field);
        }
        let mut lines = Vec::new();
        for (description, fields) in groups.values() {
            lines.push(format!("conflicts with {description}:"));
            lines.extend(fields.iter().map(|field| format!("- {field}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.conflicts.len(),
            lines.join("\n")
        )
    }

    /// `Status.details.causes` as `(reason, message, field)`:
    /// `("FieldManagerConflict", "conflict with \"m\" using v1", ".data.mode")`.
    pub(crate) fn causes(&self) -> Vec<(String, String, String)> {
        self.conflicts
            .iter()
            .map(|c| {
                (
                    FIELD_MANAGER_CONFLICT.to_owned(),
                    format!("conflict with {}", c.manager_description()),
                    c.field.clone(),
                )
            })
            .collect()
    }

    /// The complete 409 `Status` body upstream answers with.
    #[cfg(test)]
    pub(crate) fn to_status(&self) -> Value {
        let causes: Vec<Value> = self
            .causes()
            .into_iter()
            .map(|(reason, message, field)| {
                let mut cause = Map::new();
                cause.insert("reason".to_owned(), Value::from(reason));
                cause.insert("message".to_owned(), Value::from(message));
                cause.insert("field".to_owned(), Value::from(field));
                Value::Object(cause)
            })
            .collect();
        let mut details = Map::new();
        details.insert("causes".to_owned(), Value::Array(causes));
        let mut status = Map::new();
        status.insert("kind".to_owned(), Value::from("Status"));
        status.insert("apiVersion".to_owned(), Value::from("v1"));
        status.insert("metadata".to_owned(), Value::Object(Map::new()));
        status.insert("status".to_owned(), Value::from("Failure"));
        status.insert("message".to_owned(), Value::from(self.message()));
        status.insert("reason".to_owned(), Value::from("Conflict"));
        status.insert("details".to_owned(), Value::Object(details));
        status.insert("code".to_owned(), Value::from(409));
        Value::Object(status)
    }
}

impl fmt::Display for ApplyConflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyConflicts {}
