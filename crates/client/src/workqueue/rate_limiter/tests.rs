//! Scenarios for client-go-semantics.md §13.4 and §17.18 (rate limiters, exact numbers).

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn exponential_starts_at_base_and_doubles_per_failure() {
    let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
    let delays: Vec<Duration> = (0..5).map(|_| limiter.when(&"a")).collect();
    assert_eq!(delays, [ms(1), ms(2), ms(4), ms(8), ms(16)]);
    assert_eq!(limiter.num_requeues(&"a"), 5);
    assert_eq!(limiter.when(&"b"), ms(1), "counters are per item");
}

#[test]
fn exponential_is_capped_at_max_even_when_the_exponent_overflows() {
    let limiter = ItemExponentialFailureRateLimiter::new(ms(1), ms(100));
    for _ in 0..2000 {
        assert!(limiter.when(&"a") <= ms(100));
    }
    assert_eq!(limiter.when(&"a"), ms(100));
}

#[test]
fn exponential_forget_resets_the_item() {
    let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
    limiter.when(&"a");
    limiter.when(&"a");
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
    assert_eq!(limiter.when(&"a"), ms(1));
}

#[test]
fn fast_slow_is_fast_for_max_fast_attempts_then_slow() {
    let limiter = ItemFastSlowRateLimiter::new(ms(5), Duration::from_secs(10), 3);
    let delays: Vec<Duration> = (0..5).map(|_| limiter.when(&"a")).collect();
    assert_eq!(
        delays,
        [
            ms(5),
            ms(5),
            ms(5),
            Duration::from_secs(10),
            Duration::from_secs(10)
        ]
    );
    assert_eq!(limiter.num_requeues(&"a"), 5);
    limiter.forget(&"a");
    assert_eq!(limiter.when(&"a"), ms(5));
}

#[tokio::test(start_paused = true)]
async fn bucket_allows_the_burst_then_spaces_retries_at_one_over_qps() {
    let limiter = BucketRateLimiter::new(10.0, 3);
    let when = |i: u32| RateLimiter::<u32>::when(&limiter, &i);
    assert_eq!([when(1), when(2), when(3)], [Duration::ZERO; 3]);
    assert_eq!(when(4), ms(100));
    assert_eq!(when(5), ms(200), "tokens are consumed even if nobody waits");
    tokio::time::sleep(ms(1000)).await;
    assert_eq!(when(6), Duration::ZERO, "refilled by elapsed time");
    assert_eq!(RateLimiter::<u32>::num_requeues(&limiter, &1), 0);
}

#[test]
fn max_of_returns_the_largest_delay_and_advances_every_limiter() {
    let a = Arc::new(ItemExponentialFailureRateLimiter::new(
        ms(1),
        Duration::from_secs(1),
    ));
    let b = Arc::new(ItemFastSlowRateLimiter::new(
        ms(3),
        Duration::from_secs(1),
        1,
    ));
    let max = MaxOfRateLimiter::new(vec![a.clone(), b.clone()]);
    assert_eq!(max.when(&"x"), ms(3));
    assert_eq!(max.when(&"x"), Duration::from_secs(1));
    assert_eq!(a.num_requeues(&"x"), 2);
    assert_eq!(b.num_requeues(&"x"), 2);
    assert_eq!(max.num_requeues(&"x"), 2);
    max.forget(&"x");
    assert_eq!(a.num_requeues(&"x") + b.num_requeues(&"x"), 0);
}

#[test]
fn with_max_wait_clamps_the_delay() {
    let inner = Arc::new(ItemFastSlowRateLimiter::new(
        ms(1),
        Duration::from_secs(100),
        0,
    ));
    let limiter = WithMaxWaitRateLimiter::new(inner, Duration::from_secs(5));
    assert_eq!(limiter.when(&"a"), Duration::from_secs(5));
    assert_eq!(limiter.num_requeues(&"a"), 1);
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_uses_client_go_numbers() {
    let limiter = default_controller_rate_limiter::<u32>();
    // Per item: 5 ms, 10 ms, 20 ms …, capped at 1000 s from the 19th failure on.
    let delays: Vec<Duration> = (0..20).map(|_| limiter.when(&0)).collect();
    assert_eq!(&delays[..3], [ms(5), ms(10), ms(20)]);
    assert_eq!(delays[17], ms(5 << 17));
    assert_eq!(delays[18], Duration::from_secs(1000));
    assert_eq!(delays[19], Duration::from_secs(1000));
    // Overall: 100 free tokens (20 used above), then 100 ms apart.
    for item in 1..=80 {
        assert_eq!(limiter.when(&item), ms(5), "item {item} within the burst");
    }
    assert_eq!(limiter.when(&1000), ms(100));
    assert_eq!(limiter.when(&1001), ms(200));
}

#[test]
fn default_item_based_limiter_is_1ms_to_1000s() {
    let limiter = default_item_based_rate_limiter::<u32>();
    assert_eq!(limiter.when(&0), ms(1));
    assert_eq!(limiter.when(&0), ms(2));
}

#[tokio::test(start_paused = true)]
async fn zero_nan_or_tiny_qps_and_huge_backoffs_never_overflow() {
    for qps in [0.0, -3.0, f64::NAN, f64::INFINITY] {
        let bucket = BucketRateLimiter::new(qps, 0);
        assert_eq!(
            RateLimiter::<&str>::when(&bucket, &"a"),
            Duration::ZERO,
            "qps {qps}"
        );
    }
    let tiny = BucketRateLimiter::new(1e-300, 0);
    assert_eq!(RateLimiter::<&str>::when(&tiny, &"a"), MAX_DELAY);
    let huge = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::MAX);
    assert_eq!(huge.when(&"a"), MAX_DELAY);
    let queue = crate::workqueue::RateLimitingQueue::new(
        Arc::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        )),
        crate::workqueue::QueueConfig::default(),
    );
    queue.add_rate_limited("item");
    queue.add_after("other", Duration::MAX);
    tokio::task::yield_now().await;
    assert_eq!(queue.len(), 0, "both wait (clamped) instead of panicking");
}
