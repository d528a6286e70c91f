//! An injectable clock (`k8s.io/utils/clock`): [`RealClock`] for production and
//! [`FakeClock`] for tests that move time by hand.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sync::lock;

/// A source of the current instant (Go's `clock.PassiveClock`).
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Instant;

    /// The time elapsed since `earlier` (zero if `earlier` is in the future).
    fn since(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }
}

/// The system's monotonic clock (Go's `clock.RealClock`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to (Go's `testing.FakeClock`, passive part).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kubeclient::util::clock::{Clock, FakeClock};
///
/// let clock = FakeClock::new();
/// let start = clock.now();
/// clock.step(Duration::from_secs(5));
/// assert_eq!(clock.since(start), Duration::from_secs(5));
/// ```
#[derive(Debug)]
#[doc(alias = "FakePassiveClock")]
pub struct FakeClock {
    now: Mutex<Instant>,
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::new()
    }
}

impl FakeClock {
    /// A fake clock standing at the real current instant.
    #[must_use]
    pub fn new() -> Self {
        FakeClock {
            now: Mutex::new(Instant::now()),
        }
    }

    /// Moves the clock forward by `by` (saturating at the largest representable instant).
    pub fn step(&self, by: Duration) {
        let mut now = lock(&self.now);
        if let Some(later) = now.checked_add(by) {
            *now = later;
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        *lock(&self.now)
    }
}
