//! `GET .../pods/{name}/log`, served from [`PodLogs`](crate::PodLogs) as the kubelet serves
//! a container's log through the API server, and the admin path tests append lines with.
//!
//! Parameters (`PodLogOptions`): `container`, `follow`, `previous`, `sinceSeconds`,
//! `sinceTime`, `timestamps`, `tailLines`, `limitBytes`. Invalid values are 422 Invalid (a
//! negative `tailLines`, `limitBytes` or `sinceSeconds` below 1, both `sinceSeconds` and
//! `sinceTime`), as `ValidatePodLogOptions` answers; `previous=true` reads the container's
//! run before its last restart (a simulated kubelet's), 400 when it never restarted. The body is `text/plain`, one line per log line; with
//! `timestamps=true` each starts with its RFC 3339 time (nanoseconds) and a space.
//! `follow=true` keeps the body open and sends lines as they are appended, until the log
//! is finished, the Pod is deleted, the client leaves or the server stops.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Limited};
use kubeclient_machinery::{Status, StatusCause, StatusReason};
use tokio::sync::mpsc;

use super::pod_target::{PodTarget, find_pod, node_name, resolve};
use crate::pod_logs::LogLine;
use crate::query::Query;
use crate::response::{self, Body, HandlerResult, fail, json};
use crate::sessions::stopped;
use crate::state::State;

/// How often a follower checks that its Pod still exists.
const POD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How many chunks of a followed log may wait for a slow client.
const FOLLOW_QUEUE: usize = 16;

/// The parsed `PodLogOptions`.
#[derive(Debug, Default)]
struct Options {
    follow: bool,
    timestamps: bool,
    tail_lines: Option<usize>,
    limit_bytes: Option<u64>,
    since: Option<jiff::Timestamp>,
}

impl Options {
    fn parse(query: &Query, pod: &str) -> HandlerResult<Self> {
        let mut causes = Vec::new();
        let tail_lines = query.int64("tailLines")?;
        if let Some(n) = tail_lines.filter(|n| *n < 0) {
            causes.push(invalid(
                "tailLines",
                n,
                "must be greater than or equal to 0",
            ));
        }
        let limit_bytes = query.int64("limitBytes")?;
        if let Some(n) = limit_bytes.filter(|n| *n < 1) {
            causes.push(invalid("limitBytes", n, "must be greater than 0"));
        }
        let since_seconds = query.int64("sinceSeconds")?;
        if let Some(n) = since_seconds.filter(|n| *n < 1) {
            causes.push(invalid("sinceSeconds", n, "must be greater than 0"));
        }
        let since_time = match query.non_empty("sinceTime") {
            Some(raw) => Some(raw.parse::<jiff::Timestamp>().map_err(|err| {
                fail(Status::bad_request(format!(
                    "sinceTime {raw:?} is not an RFC 3339 time: {err}"
                )))
            })?),
            None => None,
        };
        if since_seconds.is_some() && since_time.is_some() {
            causes.push(StatusCause::new(
                "FieldValueForbidden",
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
                "",
            ));
        }
        if !causes.is_empty() {
            return Err(fail(Status::invalid("", "PodLogOptions", pod, causes)));
        }
        let since = match (since_seconds, since_time) {
            (Some(seconds), _) => jiff::Timestamp::now()
                .checked_sub(jiff::SignedDuration::from_secs(seconds))
                .ok(),
            (None, time) => time,
        };
        Ok(Options {
            follow: query.flag("follow"),
            timestamps: query.flag("timestamps"),
            tail_lines: tail_lines.and_then(|n| usize::try_from(n).ok()),
            limit_bytes: limit_bytes.and_then(|n| u64::try_from(n).ok()),
            since,
        })
    }
}

fn invalid(field: &str, value: i64, why: &str) -> StatusCause {
    StatusCause::new(
        "FieldValueInvalid",
        &format!("Invalid value: {value}: {why}"),
        field,
    )
}

/// Answers `GET .../pods/{name}/log`.
pub(crate) fn get<B>(
    state: &Arc<State>,
    request: &Request<B>,
    namespace: &str,
    name: &str,
) -> HandlerResult<Response<Body>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )));
    }
    let query = Query::parse(request.uri().query());
    let target = resolve(state, namespace, name, query.non_empty("container"))?;
    let options = Options::parse(&query, name)?;
    if node_name(&target).is_none() {
        // No node holds the Pod, so no kubelet has a log: kube-apiserver answers 204.
        return Ok(response::with_body(
            StatusCode::NO_CONTENT,
            "text/plain",
            response::full(Vec::new()),
        ));
    }
    let logs = &state.sessions.pod_logs;
    let previous = query.flag("previous");
    let (lines, next) = if previous {
        // The run before the container's last restart: complete, so never followed.
        let lines = logs
            .previous_lines(namespace, name, &target.container)
            .ok_or_else(|| {
                fail(Status::bad_request(format!(
                    "previous terminated container {:?} in pod {name:?} not found",
                    target.container
                )))
            })?;
        (lines, None)
    } else {
        let followed = logs.follow(namespace, name, &target.container, 0);
        (followed.lines, Some(followed.next_sequence))
    };
    let mut lines: Vec<LogLine> = lines
        .into_iter()
        .filter(|line| options.since.is_none_or(|since| line.time >= since))
        .collect();
    if let Some(tail) = options.tail_lines {
        let skip = lines.len().saturating_sub(tail);
        lines.drain(..skip);
    }
    let mut remaining = options.limit_bytes.unwrap_or(u64::MAX);
    let first = render(&lines, options.timestamps, &mut remaining);
    let next = match next {
        Some(next) if options.follow && remaining > 0 => next,
        _ => {
            return Ok(response::with_body(
                StatusCode::OK,
                "text/plain",
                response::full(first),
            ));
        }
    };
    let (chunks, body) = mpsc::channel(FOLLOW_QUEUE);
    tokio::spawn(follow(
        state.clone(),
        target,
        options,
        next,
        remaining,
        first,
        chunks,
    ));
    Ok(response::with_body(
        StatusCode::OK,
        "text/plain",
        response::streaming(body),
    ))
}

/// Streams lines appended after `next` until the log ends.
async fn follow(
    state: Arc<State>,
    target: PodTarget,
    options: Options,
    mut next: u64,
    mut remaining: u64,
    first: Vec<u8>,
    chunks: mpsc::Sender<Bytes>,
) {
    if !first.is_empty() && chunks.send(Bytes::from(first)).await.is_err() {
        return;
    }
    let logs = &state.sessions.pod_logs;
    let mut stopping = state.sessions.stopping();
    let mut pod_check = tokio::time::interval(POD_CHECK_INTERVAL);
    loop {
        let mut followed = logs.follow(&target.namespace, &target.name, &target.container, next);
        next = followed.next_sequence;
        let text = render(&followed.lines, options.timestamps, &mut remaining);
        if !text.is_empty() && chunks.send(Bytes::from(text)).await.is_err() {
            return;
        }
        if followed.finished || remaining == 0 {
            return;
        }
        loop {
            tokio::select! {
                _ = followed.changes.changed() => break,
                _ = pod_check.tick() => {
                    let current = find_pod(&state, &target.namespace, &target.name);
                    if current.is_err() {
                        return;
                    }
                }
                () = chunks.closed() => return,
                () = stopped(&mut stopping) => return,
            }
        }
    }
}

/// The body text of `lines`, within `remaining` bytes (which it lowers; a line may be
/// cut, as the kubelet cuts at `limitBytes`).
fn render(lines: &[LogLine], timestamps: bool, remaining: &mut u64) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        if *remaining == 0 {
            break;
        }
        let mut text = String::with_capacity(line.text.len() + 32);
        if timestamps {
            text.push_str(&format!("{:.9} ", line.time));
        }
        text.push_str(&line.text);
        text.push('\n');
        let take = usize::try_from(*remaining).map_or(text.len(), |r| r.min(text.len()));
        out.extend_from_slice(&text.as_bytes()[..take]);
        *remaining -= take as u64;
    }
    out
}

/// `POST /_kubeclient/pods/{namespace}/{name}/log?container=c[&finish=true]`: appends the
/// body to the container's log (and with `finish`, ends it). Same Pod and container rules
/// as reading.
pub(crate) async fn admin_append<B>(
    state: &Arc<State>,
    request: Request<B>,
    namespace: &str,
    name: &str,
) -> HandlerResult<Response<Body>>
where
    B: hyper::body::Body + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if request.method() != Method::POST {
        return Err(fail(Status::failure(
            StatusReason::MethodNotAllowed,
            "admin paths accept POST only",
        )));
    }
    let query = Query::parse(request.uri().query());
    let target = resolve(state, namespace, name, query.non_empty("container"))?;
    let limit = state.config.limits.max_request_body_bytes;
    let body = Limited::new(request.into_body(), limit)
        .collect()
        .await
        .map_err(|err| {
            fail(Status::bad_request(format!(
                "unable to read the log text (at most {limit} bytes): {err}"
            )))
        })?
        .to_bytes();
    let text = std::str::from_utf8(&body).map_err(|err| {
        fail(Status::bad_request(format!(
            "the log text is not UTF-8: {err}"
        )))
    })?;
    let logs = &state.sessions.pod_logs;
    if !text.is_empty() {
        logs.append(namespace, name, &target.container, text);
    }
    if query.flag("finish") {
        logs.finish(namespace, name, &target.container);
    }
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({"appended": text.len(), "container": target.container}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(sequence: u64, text: &str) -> LogLine {
        LogLine {
            sequence,
            time: jiff::Timestamp::UNIX_EPOCH,
            text: text.to_owned(),
        }
    }

    #[test]
    fn limit_bytes_cuts_mid_line_and_timestamps_prefix_each_line() {
        let lines = [line(0, "hello"), line(1, "world")];
        let mut remaining = 8;
        assert_eq!(render(&lines, false, &mut remaining), b"hello\nwo");
        assert_eq!(remaining, 0);
        let mut unlimited = u64::MAX;
        let stamped = String::from_utf8(render(&lines[..1], true, &mut unlimited)).unwrap();
        assert_eq!(stamped, "1970-01-01T00:00:00.000000000Z hello\n");
    }

    #[test]
    fn invalid_options_are_422_with_each_field() {
        let query = Query::parse(Some(
            "tailLines=-1&limitBytes=0&sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z",
        ));
        let status = Options::parse(&query, "web").unwrap_err();
        assert_eq!(status.code, 422);
        assert!(
            status.message.contains("tailLines: Invalid value: -1"),
            "{}",
            status.message
        );
        assert!(status.message.contains("limitBytes"), "{}", status.message);
        assert!(
            status.message.contains("at most one of"),
            "{}",
            status.message
        );
    }
}
