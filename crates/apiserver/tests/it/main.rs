//! Integration tests of the embedded API server over real HTTP.
//!
//! - (the fuzzing of paths, queries, bodies and patches is in `src/fuzz_tests.rs`)
//! - `bootstrap`: the objects a fresh cluster has.
//! - `cluster`: the simulated cluster: nodes, heartbeats, node lifecycle, scheduler,
//!   kubelets (issue 26); `cluster_logs`: its containers' output in `kubectl logs`;
//!   `cluster_metrics`: the metrics.k8s.io API and `kubectl top`;
//!   `cluster_daemon_sets`: DaemonSets; `cluster_endpoints`: Endpoints and EndpointSlices of Services;
//!   `cluster_graceful_deletion`: DELETE's grace periods for Pods on simulated nodes;
//!   `cluster_probes`: probes and lifecycle hooks; `cluster_resource_quotas`: quota
//!   admission and usage; `cluster_stages`: kwok-style stages;
//!   `cluster_stateful_sets`: StatefulSets; `cluster_workloads`: ReplicaSets, Deployments
//!   and Jobs.
//! - `crd_conversion_webhooks`: CRD conversion webhooks over HTTPS: reads, lists,
//!   watches and writes through either version, hostile webhooks, `spec.conversion`
//!   validation (issue 28).
//! - `crd_guards`: CRDs never replace or remove a built-in API (issue 24).
//! - `defaults`: defaulting of built-in kinds.
//! - `disk_storage` (feature `disk`): the whole server over the disk backend: restarts,
//!   a watch across one, a locked directory, a value that does not decode.
//! - `etcd_storage` (feature `etcd`): the whole server over a real etcd: restarts, two
//!   servers on one etcd, an unreachable etcd; `etcd_cluster` (feature `etcd`): over a
//!   three-member etcd cluster: one member lost, quorum lost, recovery.
//! - `garbage_collection`: DELETE answers, propagation policies and namespace deletion.
//! - `generation`: `metadata.generation` and the status subresource, kind by kind.
//! - `crd_schemas`: custom resources checked, defaulted and pruned by their CRD's schema;
//!   several versions.
//! - `crd_validation_rules`: CRD validation rules (`x-kubernetes-validations`, CEL):
//!   messages, field paths, reasons, transition rules, compile and cost errors, status,
//!   patch and apply writes, the Kubernetes libraries (issue 30).
//! - `events`: core/v1 and events.k8s.io/v1 Events as one stored resource.
//! - `field_validation`: `fieldValidation` Strict, Warn and Ignore.
//! - `http_discovery`, `http_reads`, `http_writes`: the API semantics clients depend on,
//!   checked request by request.
//! - `immutability`: immutable fields refused on update.
//! - `kubeconfig_file`: the kubeconfig the server writes (mode, symlinks).
//! - `kubelet_port`: a kubelet's own HTTPS paths for the simulated nodes.
//! - `limits`: request body size, header read timeout, watch backlog.
//! - `malformed_input`: bad query parameters, failing JSON patches, undecodable objects
//!   and invalid labels get 4xx, not a panic.
//! - `input_costs`: YAML alias bombs and huge list-map applies (issue 24).
//! - `validation_gaps`: validation that used to do nothing (issue 24).
//! - `validating_admission_policies`: ValidatingAdmissionPolicy and its bindings: served,
//!   validated, and enforced on writes (Deny, Warn, params, matchConditions, variables,
//!   failurePolicy, custom resources, hostile expressions, kubectl) (issue 30).
//! - `watch`: watch streams: resume, 410, bookmarks, watch-list, selectors.
//! - `webhook_configurations`: admissionregistration's configurations: discovery,
//!   defaults, validation, table (issue 28).
//! - `kubectl`: the real kubectl 1.33 drives the server.
//! - `kubectl_create`: kubectl's typed `create` commands, which send protobuf bodies.
//! - `kubectl_streams`: kubectl logs -f, exec, attach against the server's streams.
//! - `layers`: the import rule of the server's layers (docs/ARCHITECTURE.md), read from
//!   the sources; `import_circles`: no import circle between files but inside one small
//!   module.
//! - `streams`: raw WebSocket checks of exec, attach and port-forward.
//! - `reviews`: access and token reviews, TokenRequest, eviction, ephemeral containers.
//! - `protobuf`: protobuf bodies, reads, watch frames and Status, and 406/415 for custom
//!   resources.
//! - `python`: the official Python client drives the server.
//! - `tokens`: ServiceAccount tokens bound to audience, expiry and their objects (issue 24).

mod authorization;
mod bootstrap;
mod cluster;
mod cluster_controller_revisions;
mod cluster_cron_jobs;
mod cluster_daemon_sets;
mod cluster_endpoints;
mod cluster_graceful_deletion;
mod cluster_jobs;
mod cluster_logs;
mod cluster_metrics;
mod cluster_persistent_volumes;
mod cluster_probes;
mod cluster_resource_quotas;
mod cluster_stages;
mod cluster_stand_ins;
mod cluster_stateful_sets;
mod cluster_workloads;
mod crd_conversion_webhooks;
mod crd_guards;
mod crd_schemas;
mod crd_validation_rules;
mod defaults;
#[cfg(feature = "disk")]
mod disk_storage;
#[cfg(feature = "etcd")]
mod etcd_cluster;
#[cfg(feature = "etcd")]
mod etcd_storage;
mod events;
mod field_validation;
mod garbage_collection;
mod generation;
mod http_discovery;
mod http_reads;
mod http_writes;
mod immutability;
mod import_circles;
mod input_costs;
mod kubeconfig_file;
mod kubectl;
mod kubectl_cluster;
mod kubectl_create;
mod kubectl_streams;
mod kubelet_port;
mod layers;
mod limits;
mod malformed_input;
mod protobuf;
mod python;
mod reviews;
mod streams;
mod support;
mod tokens;
mod validating_admission_policies;
mod validation_gaps;
mod watch;
mod webhook_configurations;
