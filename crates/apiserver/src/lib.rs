//! An embedded, in-memory, Kubernetes-compatible API server.

pub mod storage;
