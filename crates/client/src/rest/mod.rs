//! The REST layer (client-go's `rest` package): [`Client`] sends [`Request`]s with
//! authentication, rate limiting, retries and Status errors; [`watch`] turns a watch
//! response into a stream of events.

mod auth;
pub mod cert_rotation;
mod client;
mod connector;
mod content_config;
mod gzip;
mod list_assembly;
mod list_stream;
mod metrics;
mod ordered_decode;
pub(crate) mod plain_client;
mod protobuf_list;
mod rate_limit;
mod request;
pub(crate) mod tls;
mod upgrade;
pub mod watch;

pub use client::Client;
pub(crate) use client::decode;
pub use content_config::ContentType;
pub(crate) use content_config::is_protobuf;
pub use list_stream::{DecodeOptions, ItemSink, ReuseFn, SharedList};
pub use metrics::ClientMetrics;
pub(crate) use rate_limit::MAX_RATE_LIMIT_WAIT;
pub use rate_limit::TokenBucket;
pub use request::{JSON, Request};
pub use upgrade::{MAX_STREAM_MESSAGE, WebSocket};
