//! The built-in table printers (kube-apiserver's `pkg/printers/internalversion`, the
//! store's `TableConvertor`): the columns `kubectl get` shows for the common kinds, with
//! the `-o wide` ones at priority 1, and how each cell is computed from an object. Which
//! kind prints with which columns is its strategy's (`Strategy::table_columns`); kinds
//! without a printer get the default `Name` / `Created At` table (`endpoints/table.rs`).

pub(crate) mod config;
pub(crate) mod event;
pub(crate) mod node;
pub(crate) mod pod;
pub(crate) mod service;
pub(crate) mod workloads;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::ResourceDef;
use super::event_versions::events_v1_as_core;
use crate::object::label_selector;

/// One column: its definition and how to compute its cell.
pub(crate) struct Column {
    name: &'static str,
    column_type: &'static str,
    priority: i64,
    cell: fn(&Value) -> Value,
}

const fn col(name: &'static str, column_type: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column {
        name,
        column_type,
        priority: 0,
        cell,
    }
}

const fn wide(name: &'static str, column_type: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column {
        name,
        column_type,
        priority: 1,
        cell,
    }
}

/// The column definitions of a built-in resource's table with `columns` (its strategy's),
/// `Name` included.
pub(crate) fn column_definitions(resource: &ResourceDef, columns: &[Column]) -> Vec<Value> {
    let kind = resource.kind.as_str();
    let mut definitions = Vec::with_capacity(columns.len() + 1);
    if kind != "Event" {
        definitions.push(name_column(0));
    }
    for column in columns {
        definitions.push(json!({
            "name": column.name, "type": column.column_type, "format": "",
            "description": column.name, "priority": column.priority,
        }));
    }
    if kind == "Event" {
        definitions.push(name_column(1));
    }
    definitions
}

/// The `Name` column every table has.
pub(crate) fn name_column(priority: i64) -> Value {
    json!({
        "name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "priority": priority,
    })
}

/// The cells of `object`'s row, in the order of `columns` (its strategy's).
pub(crate) fn cells(resource: &ResourceDef, columns: &[Column], object: &Value) -> Vec<Value> {
    let (group, kind) = (resource.group.as_str(), resource.kind.as_str());
    let converted;
    // An `events.k8s.io/v1` Event prints under its core/v1 field names (the two are one
    // type inside kube-apiserver, printed by one printer).
    let object = if group == "events.k8s.io" {
        converted = events_v1_as_core(object);
        &converted
    } else {
        object
    };
    let name = field(object, "/metadata/name").clone();
    let mut cells = Vec::with_capacity(columns.len() + 1);
    if kind != "Event" {
        cells.push(name.clone());
    }
    cells.extend(columns.iter().map(|column| (column.cell)(object)));
    if kind == "Event" {
        cells.push(name);
    }
    cells
}

static NULL: Value = Value::Null;

fn field<'a>(object: &'a Value, pointer: &str) -> &'a Value {
    object.pointer(pointer).unwrap_or(&NULL)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    field(object, pointer).as_str().unwrap_or("")
}

fn int(object: &Value, pointer: &str) -> i64 {
    field(object, pointer).as_i64().unwrap_or(0)
}

fn items<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    field(object, pointer).as_array().map_or(&[], Vec::as_slice)
}

fn or_none(text: &str) -> Value {
    Value::String(if text.is_empty() {
        "<none>".to_owned()
    } else {
        text.to_owned()
    })
}

/// How long ago an RFC 3339 time was, as `kubectl get` prints ages (apimachinery's
/// `duration.HumanDuration`): `45s`, `3m20s`, `45m`, `3h20m`, `30h`, `3d5h`, `20d`, `2y10d`.
pub(crate) fn human_age(time: &str) -> String {
    let Ok(then) = time.parse::<Timestamp>() else {
        return "<unknown>".to_owned();
    };
    human_duration(
        Timestamp::now()
            .as_second()
            .saturating_sub(then.as_second()),
    )
}

/// apimachinery's `HumanDuration` of a number of seconds.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let rest = seconds % 60;
        return if rest == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{rest}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let rest = minutes % 60;
        return if rest == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{rest}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let rest = hours % 24;
        return if rest == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{rest}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        let years = hours / 24 / 365;
        return if days == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{days}d")
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn age(object: &Value) -> Value {
    Value::String(human_age(text(object, "/metadata/creationTimestamp")))
}

fn age_of(object: &Value, pointer: &str) -> Value {
    match field(object, pointer).as_str() {
        Some(time) => Value::String(human_age(time)),
        None => Value::String("<unknown>".to_owned()),
    }
}

/// Names or images of a pod template's containers, comma-separated.
fn template_containers(object: &Value, what: &str) -> Value {
    let list: Vec<&str> = items(object, "/spec/template/spec/containers")
        .iter()
        .map(|c| c.get(what).and_then(Value::as_str).unwrap_or(""))
        .collect();
    Value::String(list.join(","))
}

fn containers(object: &Value) -> Value {
    template_containers(object, "name")
}

fn images(object: &Value) -> Value {
    template_containers(object, "image")
}

/// A `metav1.LabelSelector` as text (`app=web,tier in (a,b)`), as Go's
/// `metav1.FormatLabelSelector` prints it: `<error>` when it does not convert.
fn selector_text(selector: &Value) -> String {
    label_selector(Some(selector)).map_or_else(|_| "<error>".to_owned(), |s| s.to_string())
}

fn selector(object: &Value) -> Value {
    or_none(&selector_text(field(object, "/spec/selector")))
}

/// A string map as `k=v,...` (sorted), `<none>` when empty.
fn map_text(map: &Value) -> Value {
    let parts: Vec<String> = map
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    or_none(&parts.join(","))
}

// --- Pods ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::pod::{pod_ready, pod_restarts, pod_status};
    use super::service::service_external_ip;
    use super::*;

    #[test]
    fn human_durations_follow_apimachinery() {
        for (seconds, text) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (45, "45s"),
            (119, "119s"),
            (200, "3m20s"),
            (180, "3m"),
            (45 * 60, "45m"),
            (3 * 3600 + 20 * 60, "3h20m"),
            (30 * 3600, "30h"),
            (3 * 86_400 + 5 * 3600, "3d5h"),
            (20 * 86_400, "20d"),
            (800 * 86_400, "2y70d"),
            (3000 * 86_400, "8y"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds} s");
        }
    }

    #[test]
    fn pod_status_reads_containers_init_containers_and_deletion() {
        let running = json!({"status": {"phase": "Running", "containerStatuses": [
            {"ready": true, "restartCount": 2, "state": {"running": {}}},
            {"ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(pod_status(&running), "CrashLoopBackOff");
        assert_eq!(pod_ready(&running), "1/2");
        assert_eq!(pod_restarts(&running), 3);
        let init = json!({"status": {"phase": "Pending", "initContainerStatuses": [
            {"state": {"terminated": {"exitCode": 0}}}, {"state": {"running": {}}}]},
            "spec": {"initContainers": [{}, {}]}});
        assert_eq!(pod_status(&init), "Init:1/2");
        let deleting = json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"phase": "Running"}});
        assert_eq!(pod_status(&deleting), "Terminating");
    }

    #[test]
    fn services_print_type_ports_and_external_addresses() {
        let service = json!({"spec": {"type": "NodePort", "clusterIP": "10.96.0.7",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            "selector": {"app": "web"}}});
        let cells = {
            let resource = resource("", "services");
            cells(&resource, table_columns(&resource), &service)
        };
        assert_eq!(cells[1], "NodePort");
        assert_eq!(cells[2], "10.96.0.7");
        assert_eq!(cells[3], "<none>");
        assert_eq!(cells[4], "80:30080/TCP,53/UDP");
        assert_eq!(cells[6], "app=web");
        let lb = json!({"spec": {"type": "LoadBalancer"}});
        assert_eq!(service_external_ip(&lb), "<pending>");
    }

    fn table_columns(resource: &ResourceDef) -> &'static [Column] {
        crate::registry::kinds::strategy_for(resource)
            .table_columns()
            .expect("a printer")
    }

    fn resource(group: &str, plural: &str) -> std::sync::Arc<ResourceDef> {
        crate::registry::Registry::new()
            .lookup(group, "v1", plural)
            .expect("a built-in resource")
    }

    #[test]
    fn every_printer_has_one_cell_per_column() {
        for (group, plural) in [
            ("", "pods"),
            ("apps", "deployments"),
            ("", "events"),
            ("events.k8s.io", "events"),
            ("batch", "cronjobs"),
            ("", "componentstatuses"),
        ] {
            let resource = resource(group, plural);
            let columns = table_columns(&resource);
            let definitions = column_definitions(&resource, columns);
            let cells = cells(&resource, columns, &json!({}));
            assert_eq!(definitions.len(), cells.len(), "{plural}");
        }
    }

    #[test]
    fn component_statuses_print_their_health() {
        let status = json!({"metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            {
                let resource = resource("", "componentstatuses");
                cells(&resource, table_columns(&resource), &status)
            },
            [json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
    }
}
