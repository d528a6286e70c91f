//! Watch responses as a `Stream` of [`WatchEvent`]s.

use futures_util::Stream;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kubeclient_machinery::{WatchEvent, WatchStreamDecoder};
use serde::de::DeserializeOwned;

use super::{Client, Request};
use crate::error::{Error, Result};

/// A stream of watch events (boxed, so it is `Unpin` and easy to store).
pub type WatchStream<K> = futures_util::stream::BoxStream<'static, Result<WatchEvent<K>>>;

struct State {
    body: Incoming,
    decoder: WatchStreamDecoder,
    url: String,
    done: bool,
}

/// Decodes a watch response body into events as its bytes arrive. A malformed event
/// yields an error item and the stream goes on; a broken connection yields one error and
/// ends; a clean end of the body ends the stream.
pub fn event_stream<K>(
    body: Incoming,
    url: String,
) -> impl Stream<Item = Result<WatchEvent<K>>> + Send
where
    K: DeserializeOwned + Send + 'static,
{
    let state = State {
        body,
        decoder: WatchStreamDecoder::new(),
        url,
        done: false,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.decoder.next_event::<K>() {
                return Some((event.map_err(Error::from), state));
            }
            if state.done {
                return None;
            }
            match state.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        state.decoder.push(&data);
                    }
                }
                Some(Err(err)) => {
                    state.done = true;
                    let error = Error::Transport {
                        url: state.url.clone(),
                        message: format!("the watch stream broke: {err}"),
                    };
                    return Some((Err(error), state));
                }
                None => {
                    state.done = true;
                    if let Some(last) = state.decoder.finish::<K>() {
                        return Some((last.map_err(Error::from), state));
                    }
                    return None;
                }
            }
        }
    })
}

impl Client {
    /// Opens a watch and returns its events as a stream.
    ///
    /// # Errors
    ///
    /// The error of the request itself (the stream then carries per-event errors).
    pub async fn watch<K>(&self, request: Request) -> Result<WatchStream<K>>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let request = request.streaming();
        let url = format!("{}{}", self.base_url(), request.path);
        let response = self.send(&request).await?;
        Ok(Box::pin(event_stream(response.into_body(), url)))
    }
}
