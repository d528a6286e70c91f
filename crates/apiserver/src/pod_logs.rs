//! [`PodLogs`]: the log lines of the embedded server's Pods.
//!
//! The server runs no containers, so a container's log is whatever a test appended: with
//! [`ApiServer::pod_logs`](crate::ApiServer::pod_logs) in-process, or
//! `POST /_kubeclient/pods/{namespace}/{pod}/log?container={c}` with the text as the body
//! (`kubeclient serve --enable-faults`). `GET .../pods/{pod}/log` serves them as the
//! kubelet would, and `follow=true` streams lines as they are appended until the log is
//! [finished](PodLogs::finish) (the container "terminated"), the Pod is deleted or the
//! client goes away.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// The most bytes of lines kept per container; older lines are dropped first (the kubelet
/// rotates logs too).
pub const MAX_LOG_BYTES_PER_CONTAINER: usize = 16 * 1024 * 1024;

/// The longest line kept; longer appended lines are split (CRI splits long lines as well).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// One log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Its position in the container's log, from 0; never reused, even after rotation.
    pub sequence: u64,
    /// When it was appended.
    pub time: jiff::Timestamp,
    /// The text, without the line break.
    pub text: String,
}

/// Every container log of the server.
///
/// Invariants: in each container log, `lines` is ordered by `sequence` with no gaps,
/// the last line's sequence is `next_sequence - 1`, and `bytes` is the sum of the lines'
/// text lengths, at most [`MAX_LOG_BYTES_PER_CONTAINER`] after every append.
///
/// # Examples
///
/// ```
/// use kubeclient_apiserver::PodLogs;
///
/// let logs = PodLogs::default();
/// logs.append("default", "web", "main", "starting\nready\n");
/// let lines = logs.lines_from("default", "web", "main", 0);
/// assert_eq!(lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["starting", "ready"]);
/// ```
#[derive(Debug, Default)]
pub struct PodLogs {
    /// Guards every container's log; held only to copy lines in or out, never across I/O.
    logs: Mutex<HashMap<LogKey, ContainerLog>>,
}

type LogKey = (String, String, String);

#[derive(Debug)]
struct ContainerLog {
    lines: VecDeque<LogLine>,
    bytes: usize,
    next_sequence: u64,
    finished: bool,
    /// The lines of the container's previous run (kept after a [restart](PodLogs::restart)),
    /// what `previous=true` reads; only the last one, as the kubelet keeps.
    previous: Option<Vec<LogLine>>,
    /// Bumped on every change (append or finish) so followers wake up.
    changed: watch::Sender<u64>,
}

impl ContainerLog {
    fn new() -> Self {
        ContainerLog {
            lines: VecDeque::new(),
            bytes: 0,
            next_sequence: 0,
            finished: false,
            previous: None,
            changed: watch::Sender::new(0),
        }
    }

    fn push(&mut self, text: &str, time: jiff::Timestamp) {
        self.bytes += text.len();
        self.lines.push_back(LogLine {
            sequence: self.next_sequence,
            time,
            text: text.to_owned(),
        });
        self.next_sequence += 1;
        while self.bytes > MAX_LOG_BYTES_PER_CONTAINER {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.text.len(),
                None => break,
            }
        }
    }
}

/// What a follower sees after waiting.
#[derive(Debug)]
pub(crate) struct Followed {
    /// Lines from the requested sequence on.
    pub(crate) lines: Vec<LogLine>,
    /// The sequence the next appended line will get.
    pub(crate) next_sequence: u64,
    /// Whether the log will get no more lines.
    pub(crate) finished: bool,
    /// Resolves when the log changes next.
    pub(crate) changes: watch::Receiver<u64>,
}

impl PodLogs {
    /// Appends `text` to a container's log: one line per line break (a trailing break
    /// ends the last line; text after the last break is a line too). Lines longer than
    /// [`MAX_LINE_BYTES`] are split. Appending to a [finished](Self::finish) log starts it
    /// again (a restarted container).
    pub fn append(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        let now = jiff::Timestamp::now();
        let mut logs = self.lock();
        let log = logs
            .entry(key(namespace, pod, container))
            .or_insert_with(ContainerLog::new);
        log.finished = false;
        for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let mut rest = line;
            while rest.len() > MAX_LINE_BYTES {
                let mut cut = MAX_LINE_BYTES;
                while !rest.is_char_boundary(cut) {
                    cut -= 1;
                }
                let (head, tail) = rest.split_at(cut);
                log.push(head, now);
                rest = tail;
            }
            log.push(rest, now);
        }
        log.changed.send_modify(|generation| *generation += 1);
    }

    /// Marks a container's log complete: followers get what is left and their streams end.
    pub fn finish(&self, namespace: &str, pod: &str, container: &str) {
        let mut logs = self.lock();
        let log = logs
            .entry(key(namespace, pod, container))
            .or_insert_with(ContainerLog::new);
        log.finished = true;
        log.changed.send_modify(|generation| *generation += 1);
    }

    /// The container starts again (a restart): its lines so far become its previous run's
    /// (the one before is dropped) and its log starts empty. Followers of the old run
    /// were ended by its [finish](Self::finish); sequences keep counting up.
    pub fn restart(&self, namespace: &str, pod: &str, container: &str) {
        let mut logs = self.lock();
        let log = logs
            .entry(key(namespace, pod, container))
            .or_insert_with(ContainerLog::new);
        log.previous = Some(log.lines.drain(..).collect());
        log.bytes = 0;
        log.finished = false;
        log.changed.send_modify(|generation| *generation += 1);
    }

    /// The lines of the container's previous run, if it restarted.
    pub fn previous_lines(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Option<Vec<LogLine>> {
        self.lock()
            .get(&key(namespace, pod, container))
            .and_then(|log| log.previous.clone())
    }

    /// Forgets one container's log (a new container of that name starts afresh).
    pub fn remove_container(&self, namespace: &str, pod: &str, container: &str) {
        if let Some(log) = self.lock().remove(&key(namespace, pod, container)) {
            // Followers of the forgotten log end.
            log.changed.send_modify(|generation| *generation += 1);
        }
    }

    /// Forgets every container log of a Pod.
    pub fn remove_pod(&self, namespace: &str, pod: &str) {
        self.lock()
            .retain(|(ns, name, _), _| !(ns == namespace && name == pod));
    }

    /// The lines kept whose sequence is at least `from`.
    pub fn lines_from(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        from: u64,
    ) -> Vec<LogLine> {
        self.follow(namespace, pod, container, from).lines
    }

    /// Lines from `from` on, whether the log is finished, and a receiver that wakes on the
    /// next change (creating the log if it does not exist yet, so a follower of an empty
    /// log sees the first append).
    pub(crate) fn follow(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        from: u64,
    ) -> Followed {
        let mut logs = self.lock();
        let log = logs
            .entry(key(namespace, pod, container))
            .or_insert_with(ContainerLog::new);
        let lines = log
            .lines
            .iter()
            .filter(|line| line.sequence >= from)
            .cloned()
            .collect();
        Followed {
            lines,
            next_sequence: log.next_sequence,
            finished: log.finished,
            changes: log.changed.subscribe(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<LogKey, ContainerLog>> {
        // A panic while holding the lock cannot leave a log half-updated in a way that
        // matters to readers (the invariants hold between statements), so recover.
        crate::sync::lock(&self.logs)
    }
}

/// Appends a running command's output to its container's log, line by line: bytes after
/// the last line break wait for the rest of their line (or [`flush`](Self::flush)), so a
/// line written in pieces is one log line. Clones share the pending bytes.
#[derive(Clone, Debug)]
pub(crate) struct ContainerLogWriter {
    logs: Arc<PodLogs>,
    key: Arc<LogKey>,
    pending: Arc<Mutex<Vec<u8>>>,
}

impl ContainerLogWriter {
    /// A writer to the log of `container` of `namespace/pod`.
    pub(crate) fn new(logs: Arc<PodLogs>, namespace: &str, pod: &str, container: &str) -> Self {
        ContainerLogWriter {
            logs,
            key: Arc::new(key(namespace, pod, container)),
            pending: Arc::default(),
        }
    }

    /// Appends the complete lines of `pending` + `data`, keeping the rest.
    pub(crate) fn write(&self, data: &[u8]) {
        let complete = {
            let mut pending = crate::sync::lock(&self.pending);
            pending.extend_from_slice(data);
            match pending.iter().rposition(|b| *b == b'\n') {
                Some(end) => pending.drain(..=end).collect::<Vec<u8>>(),
                None if pending.len() > MAX_LINE_BYTES => std::mem::take(&mut *pending),
                None => return,
            }
        };
        self.append(&complete);
    }

    /// Marks the log complete (the command ended): followers get the rest and end.
    pub(crate) fn finish(&self) {
        let (namespace, pod, container) = &*self.key;
        self.logs.finish(namespace, pod, container);
    }

    /// Appends what waits for a line break (the command ended).
    pub(crate) fn flush(&self) {
        let rest = std::mem::take(&mut *crate::sync::lock(&self.pending));
        if !rest.is_empty() {
            self.append(&rest);
        }
    }

    fn append(&self, bytes: &[u8]) {
        let (namespace, pod, container) = &*self.key;
        self.logs
            .append(namespace, pod, container, &String::from_utf8_lossy(bytes));
    }
}

fn key(namespace: &str, pod: &str, container: &str) -> LogKey {
    (namespace.to_owned(), pod.to_owned(), container.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[LogLine]) -> Vec<&str> {
        lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn appended_text_is_split_into_lines_with_increasing_sequences() {
        let logs = PodLogs::default();
        logs.append("ns", "p", "c", "a\r\nb\n\nc");
        logs.append("ns", "p", "c", "d\n");
        let lines = logs.lines_from("ns", "p", "c", 0);
        assert_eq!(texts(&lines), ["a", "b", "", "c", "d"]);
        assert_eq!(
            lines.iter().map(|l| l.sequence).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(texts(&logs.lines_from("ns", "p", "c", 3)), ["c", "d"]);
        assert!(logs.lines_from("ns", "p", "other", 0).is_empty());
    }

    #[test]
    fn long_lines_are_split_on_char_boundaries_and_old_lines_rotate_out() {
        let logs = PodLogs::default();
        let long = "é".repeat(MAX_LINE_BYTES);
        logs.append("ns", "p", "c", &long);
        let lines = logs.lines_from("ns", "p", "c", 0);
        assert!(lines.iter().all(|l| l.text.len() <= MAX_LINE_BYTES));
        assert_eq!(
            lines.iter().map(|l| l.text.len()).sum::<usize>(),
            long.len()
        );
        let chunk = "x".repeat(MAX_LINE_BYTES);
        for _ in 0..(MAX_LOG_BYTES_PER_CONTAINER / MAX_LINE_BYTES + 10) {
            logs.append("ns", "p", "c", &chunk);
        }
        let kept = logs.lines_from("ns", "p", "c", 0);
        assert!(kept.iter().map(|l| l.text.len()).sum::<usize>() <= MAX_LOG_BYTES_PER_CONTAINER);
        assert!(kept.first().is_some_and(|l| l.sequence > 0));
    }

    #[test]
    fn finish_wakes_followers_and_remove_pod_forgets_logs() {
        let logs = PodLogs::default();
        let mut followed = logs.follow("ns", "p", "c", 0);
        assert!(!followed.finished);
        logs.finish("ns", "p", "c");
        assert!(followed.changes.has_changed().unwrap_or(false));
        assert!(logs.follow("ns", "p", "c", 0).finished);
        logs.append("ns", "p", "c", "again");
        assert!(!logs.follow("ns", "p", "c", 0).finished);
        logs.remove_pod("ns", "p");
        assert!(logs.lines_from("ns", "p", "c", 0).is_empty());
        let _ = followed.changes.borrow_and_update();
    }

    #[test]
    fn a_restart_keeps_the_last_run_as_previous() {
        let logs = PodLogs::default();
        assert!(logs.previous_lines("ns", "p", "c").is_none());
        logs.append("ns", "p", "c", "first\n");
        logs.restart("ns", "p", "c");
        logs.append("ns", "p", "c", "second\n");
        assert_eq!(
            texts(&logs.previous_lines("ns", "p", "c").unwrap_or_default()),
            ["first"]
        );
        assert_eq!(texts(&logs.lines_from("ns", "p", "c", 0)), ["second"]);
        logs.restart("ns", "p", "c");
        assert_eq!(
            texts(&logs.previous_lines("ns", "p", "c").unwrap_or_default()),
            ["second"]
        );
        assert!(logs.lines_from("ns", "p", "c", 0).is_empty());
        logs.remove_container("ns", "p", "c");
        assert!(logs.previous_lines("ns", "p", "c").is_none());
    }

    #[test]
    fn the_writer_appends_whole_lines_and_flushes_the_rest() {
        let logs = Arc::new(PodLogs::default());
        let writer = ContainerLogWriter::new(Arc::clone(&logs), "ns", "p", "c");
        writer.write(b"hel");
        assert!(logs.lines_from("ns", "p", "c", 0).is_empty());
        writer.clone().write(b"lo\nwor");
        assert_eq!(texts(&logs.lines_from("ns", "p", "c", 0)), ["hello"]);
        writer.flush();
        assert_eq!(texts(&logs.lines_from("ns", "p", "c", 0)), ["hello", "wor"]);
    }
}
