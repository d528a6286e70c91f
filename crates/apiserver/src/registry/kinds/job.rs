//! Jobs and CronJobs (kube-apiserver's `pkg/registry/batch/{job,cronjob}`): their
//! defaults (completions, parallelism, backoff, completion mode, the selector and labels
//! the Job controller makes from the uid, a CronJob's policies and history limits, pod
//! template defaults), their pod template with restart policy `OnFailure` or `Never`, and
//! the `batch/v1` Job's orphaning default.

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use crate::registry::Propagation;
use crate::registry::defaults::{child, child_or_insert, set, template};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext, duplicates};
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

    fn validate(&self, object: &Value, _: Option<&Value>, causes: &mut Vec<StatusCause>) {
        let job = object
            .pointer("/spec/jobTemplate/spec")
            .unwrap_or(&Value::Null);
        job_template(job, "spec.jobTemplate.spec", causes);
    }

    fn duplicate_merge_keys(&self, object: &Value) -> Vec<StatusCause> {
        duplicates(self, object)
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
