//! client-go's `tools` packages that are not the cache: [`watch`] (watch helpers that
//! retry, sync and wait for conditions).

pub mod watch;
