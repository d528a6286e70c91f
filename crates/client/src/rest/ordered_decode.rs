//! [`OrderedDecoder`]: decodes batches of items on worker threads, at most a few at a time,
//! and hands the results back in submission order.
//!
//! Building typed structs is ~85% of the cost of reading a list or a burst of watch events
//! (docs/BENCHMARKS.md, "where time and bytes go"); the body itself is split at gigabytes per second. So
//! the task that reads the body splits it into batches and keeps up to
//! [`MAX_IN_FLIGHT`] batches decoding on the blocking pool, which uses every core while
//! the reading goes on. Small batches with nothing ahead of them are decoded inline: a
//! lone watch event does not pay a thread hop.

use std::future::Future;
use std::pin::Pin;

use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;

/// Batches decoding at once; with the reading task this keeps two cores busy, and it bounds
/// the memory held in batches not yet handed out.
pub(crate) const MAX_IN_FLIGHT: usize = 3;
/// A batch below this many bytes, with nothing in flight, is decoded on the calling task.
pub(crate) const INLINE_MAX: usize = 32 * 1024;

type Pending<T> = Pin<Box<dyn Future<Output = Vec<T>> + Send>>;

/// Batches of work whose results come back in order.
pub(crate) struct OrderedDecoder<T> {
    in_flight: FuturesOrdered<Pending<T>>,
}

impl<T: Send + 'static> OrderedDecoder<T> {
    pub(crate) fn new() -> Self {
        OrderedDecoder {
            in_flight: FuturesOrdered::new(),
        }
    }

    /// Queues a batch of `len` bytes; `on_panic` stands in for its results if the work
    /// panics (a dependency's bug must not take the caller down).
    pub(crate) fn submit(
        &mut self,
        len: usize,
        work: impl FnOnce() -> Vec<T> + Send + 'static,
        on_panic: impl FnOnce(String) -> T + Send + 'static,
    ) {
        if self.in_flight.is_empty() && len < INLINE_MAX {
            self.submit_inline(work, on_panic);
            return;
        }
        let handle = tokio::task::spawn_blocking(work);
        self.in_flight.push_back(Box::pin(async move {
            match handle.await {
                Ok(results) => results,
                Err(err) if err.is_panic() => vec![on_panic(panic_message(&*err.into_panic()))],
                Err(err) => vec![on_panic(err.to_string())],
            }
        }));
    }

    /// Decodes a batch on the calling task now; its results come out after everything
    /// already queued (an empty batch queues nothing).
    pub(crate) fn submit_inline(
        &mut self,
        work: impl FnOnce() -> Vec<T>,
        on_panic: impl FnOnce(String) -> T,
    ) {
        let results = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
            .unwrap_or_else(|panic| vec![on_panic(panic_message(&*panic))]);
        if !results.is_empty() {
            self.in_flight
                .push_back(Box::pin(std::future::ready(results)));
        }
    }

    /// Whether another batch should wait until one is handed out.
    pub(crate) fn is_full(&self) -> bool {
        self.in_flight.len() >= MAX_IN_FLIGHT
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// The results of the oldest batch, once decoded; `None` when nothing is queued.
    ///
    /// Cancel safe: a batch not yet handed out stays queued.
    pub(crate) async fn next(&mut self) -> Option<Vec<T>> {
        self.in_flight.next().await
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown cause".to_owned());
    format!("the decoder panicked: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn results_come_back_in_submission_order_whatever_finishes_first() {
        let mut decoder = OrderedDecoder::new();
        for i in 0..6u64 {
            decoder.submit(
                INLINE_MAX,
                move || {
                    std::thread::sleep(std::time::Duration::from_millis(12 - 2 * i));
                    vec![i]
                },
                |_| u64::MAX,
            );
            if decoder.is_full() {
                let _ = decoder.next().await;
            }
        }
        let mut rest = Vec::new();
        while let Some(batch) = decoder.next().await {
            rest.extend(batch);
        }
        assert_eq!(rest, [4, 5]);
    }

    #[tokio::test]
    async fn a_panicking_batch_becomes_an_error_item() {
        let mut decoder = OrderedDecoder::<Result<u8, String>>::new();
        decoder.submit(1, || panic!("boom"), Err);
        decoder.submit(INLINE_MAX, || panic!("bang"), Err);
        let first = decoder.next().await.unwrap();
        assert!(matches!(&first[..], [Err(m)] if m.contains("boom")));
        let second = decoder.next().await.unwrap();
        assert!(matches!(&second[..], [Err(m)] if m.contains("bang")));
    }
}
