//! The CronJob controller over real HTTP (issue 26), on a fast schedule clock (time scale
//! 0.01: a minute of schedule in 0.6 s): Jobs named by their scheduled minute, annotated
//! and owned; `Forbid`, `Replace`, history limits, status and Events; schedules and time
//! zones validated with kube-apiserver's messages.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster::{container, eventually};
use crate::cluster_jobs::scaled_cluster;
use crate::support::TestServer;

const CRON_JOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";

fn cron_job(name: &str, schedule: &str, command: &[&str], extra: Value) -> Value {
    let mut spec = json!({
        "schedule": schedule,
        "jobTemplate": {"metadata": {"labels": {"cron": name}}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [container(command)]}}}},
    });
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": spec})
}

async fn jobs_of(t: &TestServer, cron: &str) -> Vec<Value> {
    let jobs = t
        .get(&format!("{JOBS}?labelSelector=cron%3D{cron}"))
        .await
        .json();
    jobs["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|j| j["metadata"].get("deletionTimestamp").is_none())
        .cloned()
        .collect()
}

async fn event_reasons(t: &TestServer, name: &str) -> Vec<String> {
    let events = t.get("/api/v1/namespaces/default/events").await.json();
    events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["kind"] == "CronJob" && e["involvedObject"]["name"] == name)
        .filter_map(|e| e["reason"].as_str().map(str::to_owned))
        .collect()
}

/// Waits (10 s at most) until `done` holds for the CronJob's Jobs.
async fn until_jobs(
    t: &TestServer,
    cron: &str,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let jobs = jobs_of(t, cron).await;
        if done(&jobs) {
            return jobs;
        }
        assert!(
            Instant::now() < deadline,
            "{what} within 10 s; jobs: {jobs:#?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_cron_job_creates_named_owned_jobs_and_keeps_its_history_limit() {
    let t = scaled_cluster(0.01).await;
    let created = t
        .post(
            CRON_JOBS,
            &cron_job(
                "tick",
                "* * * * *",
                &["true"],
                json!({"successfulJobsHistoryLimit": 2}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.json());
    let started = Instant::now();
    let jobs = until_jobs(&t, "tick", "a first Job", |jobs| !jobs.is_empty()).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a minute of schedule is 0.6 s"
    );
    let job = &jobs[0];
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let minutes: i64 = name
        .strip_prefix("tick-")
        .and_then(|m| m.parse().ok())
        .expect("tick-<minutes>");
    let scheduled =
        job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
            .as_str()
            .expect("the scheduled-timestamp annotation");
    let scheduled: jiff::Timestamp = scheduled.parse().expect("RFC 3339");
    assert_eq!(scheduled.as_second(), minutes * 60);
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "CronJob");
    assert_eq!(owner["name"], "tick");
    assert_eq!(owner["controller"], true);
    // More ticks: finished Jobs beyond the limit of 2 go, the status follows.
    let mut names: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while names.len() < 4 {
        assert!(
            Instant::now() < deadline,
            "four Jobs within 10 s: {names:?}"
        );
        for job in jobs_of(&t, "tick").await {
            let name = job["metadata"]["name"].as_str().unwrap_or("").to_owned();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    until_jobs(&t, "tick", "at most 2 finished Jobs kept", |jobs| {
        jobs.iter()
            .filter(|j| {
                j["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "Complete"))
            })
            .count()
            <= 2
            && !jobs
                .iter()
                .any(|j| j["metadata"]["name"] == names[0].as_str())
    })
    .await;
    let cron = eventually(&t, &format!("{CRON_JOBS}/tick"), "the status", |c| {
        c["status"]["lastScheduleTime"].is_string() && c["status"]["lastSuccessfulTime"].is_string()
    })
    .await;
    let last: jiff::Timestamp = cron["status"]["lastScheduleTime"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("a time");
    assert_eq!(last.as_second() % 60, 0, "a scheduled minute");
    let reasons = event_reasons(&t, "tick").await;
    for reason in ["SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }
}

#[tokio::test]
async fn forbid_skips_while_a_job_runs_and_replace_replaces_it() {
    let t = scaled_cluster(0.01).await;
    for (name, policy) in [("forbid", "Forbid"), ("replace", "Replace")] {
        let created = t
            .post(
                CRON_JOBS,
                &cron_job(name, "* * * * *", &[], json!({"concurrencyPolicy": policy})),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.json());
    }
    let first = until_jobs(&t, "replace", "a first Job", |jobs| !jobs.is_empty()).await;
    let first = first[0]["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    // Replace: a later Job takes the first one's place.
    let replaced = until_jobs(&t, "replace", "the first Job replaced", |jobs| {
        !jobs.is_empty() && jobs.iter().all(|j| j["metadata"]["name"] != first.as_str())
    })
    .await;
    assert_eq!(replaced.len(), 1, "one Job at a time");
    let cron = t.get(&format!("{CRON_JOBS}/replace")).await.json();
    assert_eq!(cron["status"]["active"].as_array().map(Vec::len), Some(1));
    assert!(
        event_reasons(&t, "replace")
            .await
            .iter()
            .any(|r| r == "SuccessfulDelete")
    );
    // Forbid: several schedule times have passed, still the one Job.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !event_reasons(&t, "forbid")
        .await
        .iter()
        .any(|r| r == "JobAlreadyActive")
    {
        assert!(Instant::now() < deadline, "a JobAlreadyActive Event");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let jobs = jobs_of(&t, "forbid").await;
    assert_eq!(jobs.len(), 1, "Forbid runs one Job at a time: {jobs:#?}");
    // Suspended, it creates none; the running Job stays.
    let reply = t
        .patch(
            &format!("{CRON_JOBS}/forbid"),
            "application/merge-patch+json",
            r#"{"spec":{"suspend":true}}"#,
        )
        .await;
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn schedules_and_time_zones_are_validated_as_kube_apiserver_does() {
    let t = TestServer::start().await;
    let cases = [
        (
            "61 * * * *",
            None,
            r#"CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61"#,
        ),
        (
            "CRON_TZ=UTC * * * * *",
            None,
            r#"CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "CRON_TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"#,
        ),
        (
            "* * *",
            None,
            r#"CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]"#,
        ),
        (
            "@daily",
            Some("Europe/Pariss"),
            r#"CronJob.batch "bad" is invalid: spec.timeZone: Invalid value: "Europe/Pariss": unknown time zone Europe/Pariss"#,
        ),
    ];
    for (schedule, zone, message) in cases {
        let mut object = cron_job("bad", schedule, &["true"], json!({}));
        if let Some(zone) = zone {
            object["spec"]["timeZone"] = json!(zone);
        }
        t.post(CRON_JOBS, &object)
            .await
            .assert_status_message(422, message);
    }
    let mut good = cron_job("nightly", "0 3 * * mon-fri", &["true"], json!({}));
    good["spec"]["timeZone"] = json!("Europe/Paris");
    assert_eq!(t.post(CRON_JOBS, &good).await.status, 201);
}
