//! An embedded, in-memory, Kubernetes-compatible API server.

pub mod storage;
pub mod registry;
pub mod faults;
pub mod handlers;
pub mod patch;
pub mod state;
