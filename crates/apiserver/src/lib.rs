//! An embedded Kubernetes-compatible API server.
//!
//! **Status: skeleton.** Nothing is served yet; the server (storage, registry, handlers,
//! fault injection) is tracked as an open issue. See the workspace README for the status table.
