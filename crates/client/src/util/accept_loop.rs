//! [`AcceptLoop`]: a listener's accept loop on a task of its own, stopped on request or
//! when the handle is dropped (what the metrics and webhook servers share).

use std::future::Future;
use std::net::SocketAddr;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running accept loop and the address it listens on.
#[derive(Debug)]
pub(crate) struct AcceptLoop {
    address: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl AcceptLoop {
    /// Spawns `serve(stop)`, which must return once `stop` is cancelled.
    pub(crate) fn spawn<F>(address: SocketAddr, serve: impl FnOnce(CancellationToken) -> F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(stop.clone()));
        AcceptLoop {
            address,
            stop,
            task: Some(task),
        }
    }

    /// Where it listens.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting and waits for the loop to end.
    pub(crate) async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for AcceptLoop {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
