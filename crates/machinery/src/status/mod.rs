//! The API's error vocabulary: the [`Status`] object every failure (and some successes) is
//! reported with, its [`StatusReason`]s, and [`ApiError`], a Status as a Rust error with
//! client-go's `Is*` helpers.

mod api_error;
mod reason;
#[allow(clippy::module_inception)]
mod status;

pub use api_error::ApiError;
pub use reason::{CauseType, StatusReason};
pub use status::{Status, StatusCause, StatusDetails};
