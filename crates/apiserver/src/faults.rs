//! Fault injection for tests: make the next requests fail, slow every response, drop
//! watches, compact history. Reached through [`ApiServer::faults`](crate::ApiServer::faults)
//! in-process, or through the `/_kubeclient/faults/...` admin paths of `kubeclient serve
//! --enable-faults`.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kubeclient_machinery::{Status, StatusReason};

/// A failure to answer a request with instead of serving it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// 429 TooManyRequests with `Retry-After`.
    TooManyRequests {
        /// The seconds in `Retry-After` and `details.retryAfterSeconds`.
        retry_after_seconds: u32,
    },
    /// 500 InternalError.
    InternalError,
    /// 410 Expired (for a watch: a 200 stream with one ERROR event, as real servers do).
    Expired,
}

impl Fault {
    /// The Status this fault answers with.
    pub fn status(&self) -> Status {
        match self {
            Fault::TooManyRequests {
                retry_after_seconds,
            } => Status::too_many_requests(
                "injected fault: too many requests, please try again later",
                i32::try_from(*retry_after_seconds).unwrap_or(i32::MAX),
            ),
            Fault::InternalError => Status::internal_error("injected fault"),
            Fault::Expired => Status::failure(
                StatusReason::Expired,
                "injected fault: too old resource version",
            ),
        }
    }
}

/// The most requests one [`Faults::fail_next`] call can fail: larger counts are clamped
/// (and the `/_kubeclient/faults/...?count=N` admin paths answer 400 above it). A queued
/// run of faults is one counter, so memory does not depend on the count.
pub const MAX_FAULT_COUNT: u64 = 1_000_000;

/// The fault controls of a running server. Faults apply to resource requests only (not to
/// discovery, health or version), in the order they were queued.
///
/// Invariant: every queued run has a count of at least 1.
#[derive(Debug, Default)]
pub struct Faults {
    /// Runs of the same fault: `(fault, how many more requests it answers)`.
    queued: Mutex<VecDeque<(Fault, u64)>>,
    delay_millis: AtomicU64,
    malformed_watch_events: AtomicU64,
    /// Standing faults for clients whose User-Agent contains a string, until lifted.
    by_user_agent: Mutex<Vec<(String, Fault)>>,
    lists: AtomicU64,
    watches: AtomicU64,
    ignore_as: AtomicBool,
}

/// How many list and watch requests the server received (see [`Faults::requests`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// GETs of a collection without `watch` (LIST).
    pub lists: u64,
    /// Watches (`watch=true` or the legacy `/watch/` prefix), watch-lists included.
    pub watches: u64,
}

impl Faults {
    /// Answers the next `count` resource requests with `fault` (at most
    /// [`MAX_FAULT_COUNT`]; larger counts are clamped to it).
    pub fn fail_next(&self, count: usize, fault: Fault) {
        let count = u64::try_from(count)
            .unwrap_or(u64::MAX)
            .min(MAX_FAULT_COUNT);
        if count == 0 {
            return;
        }
        let mut queued = crate::sync::lock(&self.queued);
        match queued.back_mut() {
            Some((last, run)) if *last == fault => *run = run.saturating_add(count),
            _ => queued.push_back((fault, count)),
        }
    }

    /// Delays every resource response by `delay` (zero to stop).
    pub fn set_delay(&self, delay: Duration) {
        self.delay_millis.store(
            u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Starts each of the next `count` watch streams with a line that is not valid JSON
    /// (then the stream goes on normally).
    pub fn malformed_watch_events(&self, count: u64) {
        self.malformed_watch_events
            .fetch_add(count, Ordering::Relaxed);
    }

    pub(crate) fn take_malformed_watch_event(&self) -> bool {
        self.malformed_watch_events
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Answers every resource request whose `User-Agent` contains `user_agent` with
    /// `fault` until [`lift_user_agent`](Self::lift_user_agent) or [`clear`](Self::clear):
    /// one client of several is cut off (a partitioned leader, say) while the others go on.
    /// These faults are checked before the queued ones and do not consume them.
    pub fn fail_user_agent(&self, user_agent: &str, fault: Fault) {
        let mut standing = crate::sync::lock(&self.by_user_agent);
        standing.retain(|(agent, _)| agent != user_agent);
        standing.push((user_agent.to_owned(), fault));
    }

    /// Ends the standing fault of [`fail_user_agent`](Self::fail_user_agent) for `user_agent`.
    pub fn lift_user_agent(&self, user_agent: &str) {
        crate::sync::lock(&self.by_user_agent).retain(|(agent, _)| agent != user_agent);
    }

    /// The standing fault for a request with this `User-Agent`, if any.
    pub(crate) fn for_user_agent(&self, user_agent: &str) -> Option<Fault> {
        crate::sync::lock(&self.by_user_agent)
            .iter()
            .find(|(agent, _)| user_agent.contains(agent.as_str()))
            .map(|(_, fault)| fault.clone())
    }

    /// Removes queued and standing faults, the delay and the ignoring of `as=`.
    pub fn clear(&self) {
        self.ignore_as_parameter(false);
        crate::sync::lock(&self.by_user_agent).clear();
        crate::sync::lock(&self.queued).clear();
        self.set_delay(Duration::ZERO);
    }

    /// While `ignore` is set, the server ignores the `as=` parameter of `Accept` clauses
    /// (`as=PartialObjectMetadata`, `as=Table`) and answers with whole objects, as older
    /// or non-standard servers do and as a proxy that rewrites `Accept` makes any server
    /// do: metadata-only clients then get full objects.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn run() {
    /// let server = kubeclient_apiserver::ApiServer::start().await.unwrap();
    /// server.faults().ignore_as_parameter(true);
    /// // ... a metadata-only list now returns a full ConfigMapList ...
    /// server.faults().ignore_as_parameter(false);
    /// # }
    /// ```
    pub fn ignore_as_parameter(&self, ignore: bool) {
        self.ignore_as.store(ignore, Ordering::Relaxed);
    }

    /// `accept` with every clause that carries an `as=` parameter dropped, when
    /// [`ignore_as_parameter`](Self::ignore_as_parameter) is set (`None`: leave it).
    pub(crate) fn rewrite_accept(&self, accept: &str) -> Option<String> {
        if !self.ignore_as.load(Ordering::Relaxed) {
            return None;
        }
        let kept: Vec<&str> = accept
            .split(',')
            .filter(|clause| {
                !clause
                    .split(';')
                    .skip(1)
                    .any(|param| param.trim().starts_with("as="))
            })
            .collect();
        Some(if kept.is_empty() {
            "application/json".to_owned()
        } else {
            kept.join(",")
        })
    }

    /// How many lists and watches of any resource reached the server so far, counted
    /// before any fault answers them: a test checks how often a client lists (one LIST
    /// through a string of refused watches, say) without a recording layer of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn run() {
    /// let server = kubeclient_apiserver::ApiServer::start().await.unwrap();
    /// let before = server.faults().requests();
    /// // ... a client lists ...
    /// assert!(server.faults().requests().lists >= before.lists);
    /// # }
    /// ```
    pub fn requests(&self) -> RequestCounts {
        RequestCounts {
            lists: self.lists.load(Ordering::Relaxed),
            watches: self.watches.load(Ordering::Relaxed),
        }
    }

    /// Counts one resource request: a watch, a list (a GET of a collection), or neither.
    pub(crate) fn count_request(&self, get_collection: bool, watch: bool) {
        if watch {
            self.watches.fetch_add(1, Ordering::Relaxed);
        } else if get_collection {
            self.lists.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The number of queued faults.
    pub fn pending(&self) -> usize {
        let total: u64 = crate::sync::lock(&self.queued)
            .iter()
            .map(|(_, run)| *run)
            .fold(0, u64::saturating_add);
        usize::try_from(total).unwrap_or(usize::MAX)
    }

    pub(crate) fn take(&self) -> Option<Fault> {
        let mut queued = crate::sync::lock(&self.queued);
        let (fault, run) = queued.front_mut()?;
        let fault = fault.clone();
        *run -= 1;
        if *run == 0 {
            queued.pop_front();
        }
        Some(fault)
    }

    pub(crate) fn delay(&self) -> Duration {
        Duration::from_millis(self.delay_millis.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_taken_in_order_and_cleared() {
        let faults = Faults::default();
        faults.fail_next(2, Fault::InternalError);
        faults.fail_next(
            1,
            Fault::TooManyRequests {
                retry_after_seconds: 2,
            },
        );
        assert_eq!(faults.pending(), 3);
        assert_eq!(faults.take(), Some(Fault::InternalError));
        assert_eq!(faults.take(), Some(Fault::InternalError));
        let throttled = faults.take().unwrap().status();
        assert_eq!(
            (
                throttled.code,
                throttled.details.unwrap().retry_after_seconds
            ),
            (429, 2)
        );
        assert_eq!(faults.take(), None);
        faults.fail_next(1, Fault::Expired);
        faults.set_delay(Duration::from_millis(5));
        faults.clear();
        assert_eq!((faults.pending(), faults.delay()), (0, Duration::ZERO));
    }

    #[test]
    fn ignoring_as_drops_the_clauses_that_carry_it() {
        let faults = Faults::default();
        let metadata =
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(faults.rewrite_accept(metadata), None);
        faults.ignore_as_parameter(true);
        assert_eq!(
            faults.rewrite_accept(metadata).as_deref(),
            Some("application/json")
        );
        assert_eq!(
            faults
                .rewrite_accept("application/json;as=Table;v=v1;g=meta.k8s.io")
                .as_deref(),
            Some("application/json")
        );
        faults.clear();
        assert_eq!(faults.rewrite_accept(metadata), None);
    }

    #[test]
    fn user_agent_faults_stand_until_lifted_and_leave_other_clients_alone() {
        let faults = Faults::default();
        faults.fail_user_agent("candidate-a", Fault::InternalError);
        assert_eq!(
            faults.for_user_agent("kubeclient/0.1 candidate-a"),
            Some(Fault::InternalError)
        );
        assert_eq!(
            faults.for_user_agent("kubeclient/0.1 candidate-a"),
            Some(Fault::InternalError),
            "a standing fault is not used up"
        );
        assert_eq!(faults.for_user_agent("kubeclient/0.1 candidate-b"), None);
        assert_eq!(faults.pending(), 0);
        faults.lift_user_agent("candidate-a");
        assert_eq!(faults.for_user_agent("kubeclient/0.1 candidate-a"), None);
        faults.fail_user_agent("x", Fault::Expired);
        faults.clear();
        assert_eq!(faults.for_user_agent("x"), None);
    }

    #[test]
    fn fault_count_of_u64_max_is_clamped_without_allocating() {
        let faults = Faults::default();
        faults.fail_next(usize::MAX, Fault::InternalError);
        faults.fail_next(usize::MAX, Fault::InternalError);
        let cap = usize::try_from(MAX_FAULT_COUNT).unwrap();
        assert_eq!(faults.pending(), 2 * cap);
        assert_eq!(
            faults.queued.lock().unwrap().len(),
            1,
            "one run, not a Vec of faults"
        );
        faults.fail_next(0, Fault::Expired);
        assert_eq!(faults.take(), Some(Fault::InternalError));
        assert_eq!(faults.pending(), 2 * cap - 1);
    }
}
