//! Integration tests of the embedded API server over real HTTP.
//!
//! - (the fuzzing of paths, queries, bodies and patches is in `src/fuzz_tests.rs`)
//! - `bootstrap`: the objects a fresh cluster has.
//! - `crd_guards`: CRDs never replace or remove a built-in API (issue 24).
//! - `defaults`: defaulting of built-in kinds.
//! - `garbage_collection`: DELETE answers, propagation policies and namespace deletion.
//! - `hardening`: regression tests of bad input, limits and misuse (issue 12).
//! - `http_discovery`, `http_reads`, `http_writes`: the API semantics clients depend on,
//!   checked request by request.
//! - `input_costs`: YAML alias bombs and huge list-map applies (issue 24).
//! - `validation_gaps`: validation that used to do nothing (issue 24).
//! - `watch`: watch streams: resume, 410, bookmarks, watch-list, selectors.
//! - `kubectl`: the real kubectl 1.33 drives the server.
//! - `kubectl_create`: kubectl's typed `create` commands, which send protobuf bodies.
//! - `kubectl_streams`: kubectl logs -f, exec, attach against the server's streams.
//! - `streams`: raw WebSocket checks of exec, attach and port-forward.
//! - `reviews`: access and token reviews, TokenRequest, eviction, ephemeral containers.
//! - `protobuf`: protobuf bodies, reads, watch frames and Status, and 406/415 for custom
//!   resources.
//! - `python`: the official Python client drives the server.
//! - `tokens`: ServiceAccount tokens bound to audience, expiry and their objects (issue 24).

mod bootstrap;
mod crd_guards;
mod defaults;
mod garbage_collection;
mod hardening;
mod http_discovery;
mod http_reads;
mod http_writes;
mod input_costs;
mod kubectl;
mod kubectl_cluster;
mod kubectl_create;
mod kubectl_streams;
mod protobuf;
mod python;
mod reviews;
mod streams;
mod support;
mod tokens;
mod validation_gaps;
mod watch;
