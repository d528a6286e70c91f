//! Jobs and CronJobs (kube-apiserver's `pkg/registry/batch/{job,cronjob}`): their
//! defaults (completions, parallelism, backoff, completion mode, the selector and labels
//! the Job controller makes from the uid, a CronJob's policies and history limits, pod
//! template defaults), their pod template with restart policy `OnFailure` or `Never`, and
//! the `batch/v1` Job's orphaning default; a CronJob's `schedule` and `timeZone` are
//! validated as kube-apiserver does.

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use crate::cron_schedule::CronSchedule;
use crate::registry::Propagation;
use crate::registry::defaults::{child, child_or_insert, set, template};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext, duplicates};
use crate::registry::webhook_client_config::invalid;
use crate::registry::workloads::job_template;

/// The Job strategy.
pub(crate) struct JobStrategy;

impl Strategy for JobStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::workloads::JOB)
    }

    fn prepare_for_create(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        job_defaults(object, true);
        set(object, "status", json!({}));
    }

    fn prepare_for_update(
        &self,
        _: StrategyContext<'_>,
        object: &mut Map<String, Value>,
        _: &Value,
    ) {
        job_defaults(object, false);
    }

    fn validate(&self, object: &Value, _: Option<&Value>, causes: &mut Vec<StatusCause>) {
        job_template(object.get("spec").unwrap_or(&Value::Null), "spec", causes);
    }

    fn duplicate_merge_keys(&self, object: &Value) -> Vec<StatusCause> {
        duplicates(self, object)
    }

    fn default_garbage_collection_policy(&self, version: &str) -> Propagation {
        // `batch/v1` Jobs orphan their Pods, for compatibility.
        if version == "v1" {
            Propagation::Orphan
        } else {
            Propagation::Background
        }
    }
}

/// The CronJob strategy.
pub(crate) struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::workloads::CRON_JOB)
    }

    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        cron_job_defaults(object);
    }

    fn validate(&self, object: &Value, old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        cron_job_schedule(object, old, causes);
        let job = object
            .pointer("/spec/jobTemplate/spec")
            .unwrap_or(&Value::Null);
        job_template(job, "spec.jobTemplate.spec", causes);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        // The controller appends `-<11 digits>` to name its Jobs (63 characters at most).
        if old.is_none() && name.len() > 52 {
            causes.push(invalid(
                "metadata.name",
                &format!("{name:?}"),
                "must be no more than 52 characters",
            ));
        }
    }

    fn duplicate_merge_keys(&self, object: &Value) -> Vec<StatusCause> {
        duplicates(self, object)
    }
}

/// A CronJob's `schedule` (required, robfig's parse errors, no `TZ=` unless it had one)
/// and `timeZone` (an IANA name this host knows), as `validateCronJobSpec` checks them.
fn cron_job_schedule(object: &Value, old: Option<&Value>, causes: &mut Vec<StatusCause>) {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.and_then(|o| o.get("spec"));
    let schedule = spec.get("schedule").and_then(Value::as_str).unwrap_or("");
    let time_zone = spec.get("timeZone").and_then(Value::as_str);
    if schedule.is_empty() {
        causes.push(StatusCause::new(
            "FieldValueRequired",
            "Required value",
            "spec.schedule",
        ));
    } else {
        let shown = format!("{schedule:?}");
        if let Err(err) = CronSchedule::parse(schedule) {
            causes.push(invalid("spec.schedule", &shown, &err));
        }
        let had_zone = old_spec
            .and_then(|s| s.get("schedule"))
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("TZ"));
        if schedule.contains("TZ") {
            if !had_zone {
                causes.push(invalid(
                    "spec.schedule",
                    &shown,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            } else if time_zone.is_some() {
                causes.push(invalid(
                    "spec.schedule",
                    &shown,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ));
            }
        }
    }
    let old_zone = old_spec
        .and_then(|s| s.get("timeZone"))
        .and_then(Value::as_str);
    if let Some(zone) = time_zone
        && (old.is_none() || old_zone != Some(zone))
    {
        time_zone_causes(zone, causes);
    }
}

/// `validateTimeZone`: IANA naming, not `Local`, and known.
fn time_zone_causes(zone: &str, causes: &mut Vec<StatusCause>) {
    let shown = format!("{zone:?}");
    if zone.is_empty() {
        causes.push(invalid(
            "spec.timeZone",
            &shown,
            "timeZone must be nil or non-empty string",
        ));
        return;
    }
    let part_ok = |part: &str| {
        part != "."
            && part != ".."
            && !part.starts_with('-')
            && (1..=14).contains(&part.len())
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
    };
    let unknown = format!("unknown time zone {zone}");
    if !zone.split('/').all(part_ok) {
        causes.push(invalid("spec.timeZone", &shown, &unknown));
        return;
    }
    if zone.eq_ignore_ascii_case("Local") {
        causes.push(invalid(
            "spec.timeZone",
            &shown,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if jiff::tz::TimeZone::get(zone).is_err() {
        causes.push(invalid("spec.timeZone", &shown, &unknown));
    }
}

fn cron_job_defaults(object: &mut Map<String, Value>) {
    if let Some(spec) = child(object, "spec") {
        set(spec, "concurrencyPolicy", json!("Allow"));
        set(spec, "suspend", json!(false));
        set(spec, "successfulJobsHistoryLimit", json!(3));
        set(spec, "failedJobsHistoryLimit", json!(1));
        if let Some(job_spec) = child(spec, "jobTemplate").and_then(|t| child(t, "spec")) {
            template(job_spec.get_mut("template"));
        }
    }
}

fn job_defaults(object: &mut Map<String, Value>, creating: bool) {
    let uid = object
        .get("metadata")
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(spec) = child(object, "spec") else {
        return;
    };
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec.insert("completions".to_owned(), json!(1));
    }
    set(spec, "parallelism", json!(1));
    set(spec, "backoffLimit", json!(6));
    set(spec, "completionMode", json!("NonIndexed"));
    set(spec, "suspend", json!(false));
    if spec.get("podFailurePolicy").is_none_or(Value::is_null) {
        set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    template(spec.get_mut("template"));
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !creating || manual || uid.is_empty() {
        return;
    }
    // The Job controller's selector and labels, made at creation from the uid.
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
        "controller-uid": uid, "job-name": name,
    });
    set(
        spec,
        "selector",
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    if let Some(template) = child(spec, "template") {
        let template_labels = child_or_insert(child_or_insert(template, "metadata"), "labels");
        if let Value::Object(labels) = &labels {
            for (key, value) in labels {
                set(template_labels, key, value.clone());
            }
        }
    }
    let metadata = child_or_insert(object, "metadata");
    if metadata.get("labels").is_none_or(Value::is_null) {
        metadata.insert("labels".to_owned(), labels);
    }
}
