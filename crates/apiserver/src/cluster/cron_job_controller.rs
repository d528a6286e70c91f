//! kube-controller-manager's CronJob controller (`pkg/controller/cronjob`): each CronJob
//! not suspended creates a Job from its `jobTemplate` at every time its `schedule` fires
//! (in `timeZone`, UTC by default), named `<cronjob>-<scheduled time in minutes since the
//! epoch>`, annotated `batch.kubernetes.io/cronjob-scheduled-timestamp` and controlled by
//! the CronJob; only the most recent missed time is run, and not once
//! `startingDeadlineSeconds` have passed since it (`MissSchedule`). `concurrencyPolicy`
//! `Forbid` skips a time while a Job runs (`JobAlreadyActive`), `Replace` deletes the
//! running ones first. Its status lists the `active` Jobs, `lastScheduleTime` and
//! `lastSuccessfulTime`; finished Jobs beyond `successfulJobsHistoryLimit` and
//! `failedJobsHistoryLimit` are deleted, oldest first. Events: `SuccessfulCreate`,
//! `SawCompletedJob`, `SuccessfulDelete`, `JobAlreadyActive`, `MissSchedule`,
//! `UnparseableSchedule`, `UnknownTimeZone`.
//!
//! Schedules run on the [`ScheduleClock`]: with time scale `s`, a minute of schedule
//! passes in `s` minutes of wall time.

use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::controller_utils::{controller_ref, meta, owned_by};
use super::writer::{CRON_JOBS, EventFor, JOBS, Writer};
use crate::cron_schedule::CronSchedule;

const COMPONENT: &str = "cronjob-controller";
const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// The smallest time scale the schedule clock runs at (0 would stop nothing and run
/// every schedule at once): a minute of schedule in 60 ms.
const MIN_SCALE: f64 = 0.001;

/// The clock CronJob schedules run on: it reads the wall time at the server's start and
/// runs `1/scale` times as fast from there (`scale` the cluster's time scale, at least
/// 0.001). Scheduled times (Job names, the annotation, `lastScheduleTime`,
/// `startingDeadlineSeconds`) are on this clock; at scale 1 it is the wall clock.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScheduleClock {
    started: Timestamp,
    scale: f64,
}

impl ScheduleClock {
    pub(super) fn new(started: Timestamp, time_scale: f64) -> Self {
        let scale = if time_scale.is_finite() {
            time_scale.max(MIN_SCALE)
        } else {
            1.0
        };
        ScheduleClock { started, scale }
    }

    /// The schedule clock's reading at wall time `wall`.
    fn at(&self, wall: Timestamp) -> Timestamp {
        let since = wall.duration_since(self.started).as_secs_f64() / self.scale;
        SignedDuration::try_from_secs_f64(since)
            .ok()
            .and_then(|d| self.started.checked_add(d).ok())
            .unwrap_or(wall)
    }

    /// How long, in wall time, `schedule` time takes to pass.
    fn wall(&self, schedule: SignedDuration) -> Duration {
        let seconds = schedule.as_secs_f64().max(0.0) * self.scale;
        Duration::try_from_secs_f64(seconds.min(86_400.0)).unwrap_or(Duration::ZERO)
    }
}

/// One pass over every CronJob; how soon the next is needed (`Duration::MAX`: no hurry).
pub(super) fn sync(
    writer: &Writer<'_>,
    cron_jobs: &[&Value],
    jobs: &[&Value],
    clock: ScheduleClock,
) -> Duration {
    let now = clock.at(Timestamp::now());
    cron_jobs
        .iter()
        .map(|cron_job| {
            let owned = owned_by(cron_job, jobs);
            let wait = sync_one(writer, cron_job, &owned, now);
            cleanup_finished_jobs(writer, cron_job, &owned);
            wait.map_or(Duration::MAX, |w| clock.wall(w))
        })
        .min()
        .unwrap_or(Duration::MAX)
}

fn finished_condition(job: &Value) -> Option<&str> {
    job.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
        .and_then(|c| c["type"].as_str())
}

fn time(value: Option<&Value>) -> Option<Timestamp> {
    value.and_then(Value::as_str).and_then(|t| t.parse().ok())
}

/// Syncs one CronJob at schedule time `now`; how long until its next schedule time.
fn sync_one(
    writer: &Writer<'_>,
    cron_job: &Value,
    owned: &[&Value],
    now: Timestamp,
) -> Option<SignedDuration> {
    let event = |kind: &str, reason: &str, message: String| {
        writer.record_event(
            &EventFor {
                involved: cron_job,
                component: COMPONENT,
                action: "",
            },
            kind,
            reason,
            &message,
        );
    };
    let mut status = cron_job
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut active: Vec<Value> = status
        .get("active")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // Finished Jobs leave the active list; the newest success is recorded.
    active.retain(|reference| {
        let Some(job) = owned.iter().find(|j| meta(j, "uid") == reference["uid"]) else {
            event(
                "Normal",
                "MissingJob",
                format!(
                    "Active job went missing: {}",
                    reference["name"].as_str().unwrap_or("")
                ),
            );
            return false;
        };
        match finished_condition(job) {
            Some(condition) => {
                event(
                    "Normal",
                    "SawCompletedJob",
                    format!(
                        "Saw completed job: {}, condition: {condition}",
                        meta(job, "name")
                    ),
                );
                false
            }
            None => true,
        }
    });
    let last_success = owned
        .iter()
        .filter(|j| finished_condition(j) == Some("Complete"))
        .filter_map(|j| time(j.pointer("/status/completionTime")))
        .max();
    if let Some(success) = last_success
        && time(status.get("lastSuccessfulTime")).is_none_or(|known| success > known)
    {
        status.insert("lastSuccessfulTime".to_owned(), json!(success.to_string()));
    }
    let wait = schedule(
        writer,
        cron_job,
        owned,
        now,
        &mut active,
        &mut status,
        &event,
    );
    if active.is_empty() {
        status.remove("active");
    } else {
        status.insert("active".to_owned(), Value::Array(active));
    }
    write_status(writer, cron_job, status);
    wait
}

/// Starts the Job of the most recent unmet schedule time, if it is due and allowed; how
/// long until the next schedule time.
fn schedule(
    writer: &Writer<'_>,
    cron_job: &Value,
    owned: &[&Value],
    now: Timestamp,
    active: &mut Vec<Value>,
    status: &mut Map<String, Value>,
    event: &dyn Fn(&str, &str, String),
) -> Option<SignedDuration> {
    if cron_job.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let zone_name = cron_job.pointer("/spec/timeZone").and_then(Value::as_str);
    let zone = match zone_name {
        None => TimeZone::UTC,
        Some(name) => match TimeZone::get(name) {
            Ok(zone) => zone,
            Err(_) => {
                event(
                    "Warning",
                    "UnknownTimeZone",
                    format!("invalid timeZone: {name:?}: unknown time zone {name}"),
                );
                return None;
            }
        },
    };
    if cron_job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let spec = cron_job
        .pointer("/spec/schedule")
        .and_then(Value::as_str)
        .unwrap_or("");
    let schedule = match CronSchedule::parse(spec) {
        Ok(schedule) => schedule,
        Err(err) => {
            event(
                "Warning",
                "UnparseableSchedule",
                format!("unparseable schedule: {spec:?} : {err}"),
            );
            return None;
        }
    };
    let deadline = cron_job
        .pointer("/spec/startingDeadlineSeconds")
        .and_then(Value::as_i64)
        .map(SignedDuration::from_secs);
    let earliest = time(status.get("lastScheduleTime"))
        .or_else(|| time(cron_job.pointer("/metadata/creationTimestamp")))
        .unwrap_or(now);
    let (scheduled, missed) = most_recent(&schedule, &zone, earliest, deadline, now);
    let until_next = || {
        schedule
            .next_after(now, &zone)
            .map(|next| next.duration_since(now) + SignedDuration::from_millis(100))
    };
    let Some(scheduled) = scheduled else {
        return until_next();
    };
    if missed > 100 {
        event(
            "Warning",
            "TooManyMissedTimes",
            format!(
                "too many missed start times: {missed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
            ),
        );
    }
    if deadline.is_some_and(|d| scheduled + d < now) {
        event(
            "Warning",
            "MissSchedule",
            format!(
                "Missed scheduled time to start a job: {}",
                scheduled.strftime("%a, %d %b %Y %H:%M:%S %z")
            ),
        );
        return until_next();
    }
    let name = format!(
        "{}-{}",
        meta(cron_job, "name"),
        scheduled.as_second().div_euclid(60)
    );
    if active.iter().any(|r| r["name"] == name.as_str()) {
        return until_next();
    }
    match cron_job
        .pointer("/spec/concurrencyPolicy")
        .and_then(Value::as_str)
    {
        Some("Forbid") if !active.is_empty() => {
            event(
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid".to_owned(),
            );
            return until_next();
        }
        Some("Replace") => {
            for reference in std::mem::take(active) {
                let running = owned.iter().find(|j| meta(j, "uid") == reference["uid"]);
                if let Some(job) = running
                    && writer.delete_in_background(JOBS, job)
                {
                    event(
                        "Normal",
                        "SuccessfulDelete",
                        format!("Deleted job {}", meta(job, "name")),
                    );
                }
            }
        }
        _ => {}
    }
    let job = job_from_template(cron_job, &name, scheduled, &zone);
    let Some(created) = writer.create_object(JOBS, Some(meta(cron_job, "namespace")), job) else {
        event(
            "Warning",
            "FailedCreate",
            format!("Error creating job: the Job {name} was refused"),
        );
        return until_next();
    };
    event("Normal", "SuccessfulCreate", format!("Created job {name}"));
    active.push(json!({
        "kind": "Job", "namespace": meta(&created, "namespace"), "name": name,
        "uid": meta(&created, "uid"), "apiVersion": "batch/v1",
        "resourceVersion": meta(&created, "resourceVersion"),
    }));
    status.insert("lastScheduleTime".to_owned(), json!(scheduled.to_string()));
    until_next()
}

/// The most recent schedule time after `earliest` (no earlier than the starting deadline
/// allows) and not after `now`, and how many were missed since `earliest`.
fn most_recent(
    schedule: &CronSchedule,
    zone: &TimeZone,
    earliest: Timestamp,
    deadline: Option<SignedDuration>,
    now: Timestamp,
) -> (Option<Timestamp>, usize) {
    let mut from = earliest;
    if let Some(start) = deadline.and_then(|d| now.checked_sub(d).ok())
        && start > from
    {
        from = start;
    }
    let mut found = None;
    let mut missed = 0;
    // Bounded: after 1,000 times, skip ahead to 1,000 gaps before `now`.
    let mut budget = 1_000;
    let mut at = from;
    while let Some(next) = schedule.next_after(at, zone) {
        if next > now {
            break;
        }
        found = Some(next);
        missed += 1;
        at = next;
        budget -= 1;
        if budget == 0 {
            let gap = schedule
                .next_after(next, zone)
                .map_or(SignedDuration::from_secs(60), |after| {
                    after.duration_since(next)
                });
            let skip = now
                .checked_sub(gap.checked_mul(1_000).unwrap_or(SignedDuration::MAX))
                .unwrap_or(now);
            if skip > at {
                at = skip;
            }
            budget = 2_000;
        }
    }
    (found, missed)
}

/// The Job for `scheduled`: the template's labels, annotations (with the scheduled time
/// in the CronJob's zone) and spec, controlled by the CronJob.
fn job_from_template(cron_job: &Value, name: &str, scheduled: Timestamp, zone: &TimeZone) -> Value {
    let template = cron_job
        .pointer("/spec/jobTemplate")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut annotations = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let stamp = scheduled
        .to_zoned(zone.clone())
        .strftime("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
        .replace("+00:00", "Z");
    annotations.insert(SCHEDULED_TIMESTAMP.to_owned(), json!(stamp));
    let mut metadata = Map::new();
    metadata.insert("name".to_owned(), json!(name));
    metadata.insert("namespace".to_owned(), json!(meta(cron_job, "namespace")));
    if let Some(labels) = template.pointer("/metadata/labels") {
        metadata.insert("labels".to_owned(), labels.clone());
    }
    metadata.insert("annotations".to_owned(), Value::Object(annotations));
    metadata.insert(
        "ownerReferences".to_owned(),
        json!([controller_ref(cron_job)]),
    );
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Deletes the oldest finished Jobs beyond the history limits (`removeOldestJobs`).
fn cleanup_finished_jobs(writer: &Writer<'_>, cron_job: &Value, owned: &[&Value]) {
    for (condition, limit) in [
        ("Complete", "/spec/successfulJobsHistoryLimit"),
        ("Failed", "/spec/failedJobsHistoryLimit"),
    ] {
        let Some(limit) = cron_job.pointer(limit).and_then(Value::as_u64) else {
            continue;
        };
        let mut finished: Vec<&Value> = owned
            .iter()
            .copied()
            .filter(|j| {
                finished_condition(j) == Some(condition)
                    && j.pointer("/metadata/deletionTimestamp").is_none()
            })
            .collect();
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        if finished.len() <= limit {
            continue;
        }
        // Oldest start first; Jobs that never started last.
        finished.sort_by_key(|j| {
            (
                time(j.pointer("/status/startTime")).is_none(),
                time(j.pointer("/status/startTime")),
                meta(j, "name").to_owned(),
            )
        });
        let surplus = finished.len() - limit;
        for job in &finished[..surplus] {
            if writer.delete_in_background(JOBS, job) {
                writer.record_event(
                    &EventFor {
                        involved: cron_job,
                        component: COMPONENT,
                        action: "",
                    },
                    "Normal",
                    "SuccessfulDelete",
                    &format!("Deleted job {}", meta(job, "name")),
                );
            }
        }
    }
}

fn write_status(writer: &Writer<'_>, cron_job: &Value, status: Map<String, Value>) {
    if cron_job.get("status").is_none() && status.is_empty() {
        return;
    }
    writer.replace_status(CRON_JOBS, cron_job, Value::Object(status));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_clock_runs_faster_by_the_time_scale() {
        let started: Timestamp = "2026-01-01T00:00:00Z".parse().expect("a time");
        let clock = ScheduleClock::new(started, 0.01);
        let wall: Timestamp = "2026-01-01T00:00:01Z".parse().expect("a time");
        assert_eq!(clock.at(wall).to_string(), "2026-01-01T00:01:40Z");
        assert_eq!(
            clock.wall(SignedDuration::from_secs(60)),
            Duration::from_millis(600)
        );
        let real = ScheduleClock::new(started, 1.0);
        assert_eq!(real.at(wall), wall);
        // Scale 0 runs at the smallest scale, not infinitely fast.
        assert_eq!(
            ScheduleClock::new(started, 0.0).wall(SignedDuration::from_secs(60)),
            Duration::from_millis(60)
        );
    }

    #[test]
    fn only_the_most_recent_missed_time_runs() {
        let schedule = CronSchedule::parse("* * * * *").expect("a schedule");
        let at = |t: &str| -> Timestamp { t.parse().expect("a time") };
        let (found, missed) = most_recent(
            &schedule,
            &TimeZone::UTC,
            at("2026-01-01T00:00:00Z"),
            None,
            at("2026-01-01T00:10:30Z"),
        );
        assert_eq!(found, Some(at("2026-01-01T00:10:00Z")));
        assert_eq!(missed, 10);
        // Far behind, the search stays bounded and still finds the latest time.
        let (found, _) = most_recent(
            &schedule,
            &TimeZone::UTC,
            at("2020-01-01T00:00:00Z"),
            None,
            at("2026-01-01T00:10:30Z"),
        );
        assert_eq!(found, Some(at("2026-01-01T00:10:00Z")));
    }
}
