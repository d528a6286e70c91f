//! Integration tests of the client against the embedded API server over real HTTP.
//!
//! - `apply_configuration`: typed server-side apply with two field managers, conflicts, force
//!   and `extract`, agreeing with a real kube-apiserver when one is configured.
//! - `typed`: every verb of the typed client, pagination, watch resume, Status errors.
//! - `certificates`: CertificateSigningRequests, and client certificates rotated on disk
//!   and by an exec plugin.
//! - `cached_client`: reads from lazily started informers with field indexes, writes to
//!   the server.
//! - `conversion_webhook`: a CRD's conversion webhook (hub and spoke) served by a
//!   `WebhookServer` and a `Manager`, the embedded server converting through it.
//! - `controller`: the controller builder: owned objects, finalizers, backoff, panics, drain.
//! - `custom_resource`: a typed custom resource from the derive: CRD, Api, informer, status, validation.
//! - `dynamic`: the dynamic client on a custom resource, and discovery.
//! - `atomic_informer`: an informer on the atomic RealFIFO: relists as one replacement.
//! - `auth`: TLS with the server's CA plus a token, client certificates, an exec plugin.
//! - `informers`: reflector, shared informers, factories: sync, recovery, handlers, convergence.
//! - `leader_election`: three candidates on one Lease: cut off, stopped, released.
//! - `events`: the event recorder: counts, aggregation, the spam filter.
//! - `metadata_informer`: metadata-only informers keep `PartialObjectMetadata`, also from a
//!   server that ignores `as=` and sends whole objects.
//! - `manager`: the controller manager: probes, caches, controllers, leader election
//!   between two managers, graceful shutdown, a failing runnable.
//! - `metrics`: the Prometheus registry and the /metrics, /healthz, /readyz server.
//! - `hangs`: a server that never answers ends in a timeout, discovery included.
//! - `informer_pipeline`: undecodable objects, relists sharing unchanged objects, per-handler
//!   sync, and a relist during a burst with a slow handler.
//! - `realapi`: the informer against a real kube-apiserver (v1.20, etcd), when one is running.
//! - `realapi_comparison`: the embedded server answers the same requests as the real one.
//! - `realapi_admission`: admission webhooks (order, reinvocation, refusals, failures)
//!   answered alike by the embedded and the real server.
//! - `oidc`: the kubeconfig's oidc auth provider refreshing its id-token at a test OpenID
//!   provider and writing it back to the file.
//! - `retry`: `util::retry` re-running a read-modify-write after a 409 Conflict.
//! - `reflector_rules`: client-go's reflector edge rules (watch-list 429, stop before run,
//!   page sizes at concrete resourceVersions, paginated results, refused or throttled
//!   watches resumed without a relist).
//! - `soak`: seeded random schedules of writes and faults; see the module for the full run.
//! - `protobuf`: the typed client over protobuf: every verb, the pager, watches, errors
//!   (the informer tests in `informers` also run over protobuf).
//! - `mutation_cache`: a controller's writes overlaid on a running informer's cache.
//! - `proxy`: requests through an HTTP CONNECT proxy.
//! - `scale`: the scale client on Deployments, StatefulSets and a custom resource.
//! - `streams`: logs, exec, attach and port-forward over WebSockets (issue 17).
//! - `tools_watch`: the retry watcher across a server restart and a 410, and the `until`
//!   helpers.
//! - `webhook`: the admission webhook server over HTTPS: reviews, refusals, certificate rotation.
//! - `watch_bytes`: a watch body delivered one byte per chunk.

mod admission;
mod apply_configuration;
mod atomic_informer;
mod auth;
mod cached_client;
mod certificates;
mod controller;
mod conversion_webhook;
mod custom_resource;
mod dynamic;
mod events;
mod hangs;
mod impersonation;
mod informer_pipeline;
mod informers;
mod leader_election;
mod manager;
mod metadata_informer;
mod metrics;
mod mutation_cache;
mod oidc;
mod protobuf;
mod proxy;
mod realapi;
mod realapi_admission;
mod realapi_comparison;
mod realapi_differential;
mod realapi_etcd;
mod realapi_garbage_collection;
mod realapi_rbac;
mod reflector_rules;
mod retry;
mod scale;
mod soak;
mod streams;
mod support;
mod tools_watch;
mod typed;
mod watch_bytes;
mod webhook;
