//! Shared pieces of the benchmarks: the deterministic realistic Pod, process measurements,
//! and the JSON line every client program prints.

use std::time::Duration;

use serde_json::{Value, json};

/// The resourceVersion of the benchmark list; watch events follow it.
pub const LIST_RESOURCE_VERSION: u64 = 1_000_000;

/// A realistic Pod (about 6 KB of JSON): labels, annotations, an owner reference, two
/// managedFields entries, two containers, status with conditions. Deterministic in `i`.
#[must_use]
pub fn pod(i: usize, resource_version: u64) -> Value {
    let namespace = format!("team-{}", i % 20);
    let name = format!("web-{i:06}-7f9c8b6d5-x{:04x}", i % 65_536);
    let container = |n: usize, image: &str| {
        json!({
            "name": format!("c{n}"), "image": image, "imagePullPolicy": "IfNotPresent",
            "args": ["--port=8080", "--log-level=info", format!("--shard={}", i % 16)],
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    {"name": "MODE", "value": "production"}, {"name": "REGION", "value": "eu-west-1"}],
            "ports": [{"name": "http", "containerPort": 8080 + n, "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true},
                             {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
        })
    };
    let fields = json!({"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
        "f:ownerReferences": {".": {}, "k:{\"uid\":\"3f1c0a9e-5b7d-4c2a-9e8f-1a2b3c4d5e6f\"}": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"c0\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {}}, "k:{\"name\":\"c1\"}": {".": {}, "f:image": {}, "f:name": {}}},
                   "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:terminationGracePeriodSeconds": {}}});
    let status_fields = json!({"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
        "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}});
    json!({
        "metadata": {
            "name": name, "generateName": "web-7f9c8b6d5-", "namespace": namespace,
            "uid": format!("6f0e5c0e-9d1c-4f3e-9a57-{:012x}", i),
            "resourceVersion": resource_version.to_string(), "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7f9c8b6d5", "tier": "frontend", "shard": format!("{}", i % 16)},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T09:59:00Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7f9c8b6d5", "uid": "3f1c0a9e-5b7d-4c2a-9e8f-1a2b3c4d5e6f", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T10:00:05Z", "fieldsType": "FieldsV1", "fieldsV1": status_fields, "subresource": "status"}
            ]
        },
        "spec": {
            "containers": [container(0, "registry.example.com/web:1.27.3"), container(1, "registry.example.com/sidecar:4.2.0")],
            "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                        {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "nodeName": format!("node-{}", i % 50),
            "securityContext": {}, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {
            "phase": "Running", "hostIP": "192.168.1.10", "podIP": format!("10.0.{}.{}", (i / 250) % 250, i % 250),
            "podIPs": [{"ip": format!("10.0.{}.{}", (i / 250) % 250, i % 250)}], "startTime": "2026-11-01T10:00:01Z", "qosClass": "Burstable",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-01T10:00:02Z"},
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-01T10:00:01Z"},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-01T10:00:04Z"},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-01T10:00:04Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-01T10:00:00Z"}
            ],
            "containerStatuses": [
                {"name": "c0", "ready": true, "restartCount": 0, "image": "registry.example.com/web:1.27.3", "imageID": "registry.example.com/web@sha256:4f2a", "containerID": "containerd://a1b2c3", "started": true, "state": {"running": {"startedAt": "2026-11-01T10:00:03Z"}}},
                {"name": "c1", "ready": true, "restartCount": 0, "image": "registry.example.com/sidecar:4.2.0", "imageID": "registry.example.com/sidecar@sha256:9e8d", "containerID": "containerd://d4e5f6", "started": true, "state": {"running": {"startedAt": "2026-11-01T10:00:03Z"}}}
            ]
        }
    })
}

/// What a client program reports, as one JSON line.
#[derive(Debug, Clone)]
pub struct Report {
    /// Which client.
    pub peer: String,
    /// Objects listed.
    pub objects: usize,
    /// Watch events handled.
    pub events: usize,
    /// Seconds from start to a synced cache.
    pub sync_seconds: f64,
    /// Seconds to handle the events after sync.
    pub events_seconds: f64,
    /// Resident memory after sync, bytes.
    pub rss_after_sync: u64,
    /// Peak resident memory, bytes.
    pub peak_rss: u64,
    /// CPU seconds (user + system).
    pub cpu_seconds: f64,
    /// Live heap after sync, bytes (counting allocator).
    pub heap_after_sync: u64,
    /// Peak live heap, bytes (counting allocator).
    pub peak_heap: u64,
    /// Relist scenario: seconds from the forced relist to the new list being applied.
    pub relist_seconds: f64,
}

impl Report {
    /// The JSON line.
    #[must_use]
    pub fn to_json(&self) -> String {
        json!({
            "peer": self.peer, "objects": self.objects, "events": self.events,
            "sync_seconds": self.sync_seconds, "events_seconds": self.events_seconds,
            "events_per_second": if self.events_seconds > 0.0 { self.events as f64 / self.events_seconds } else { 0.0 },
            "rss_after_sync": self.rss_after_sync, "peak_rss": self.peak_rss, "cpu_seconds": self.cpu_seconds,
            "heap_after_sync": self.heap_after_sync, "peak_heap": self.peak_heap, "relist_seconds": self.relist_seconds,
        })
        .to_string()
    }
}

fn status_field_kb(process: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{process}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Current resident memory, bytes (Linux).
#[must_use]
pub fn rss_bytes() -> u64 {
    status_field_kb("self", "VmRSS:") * 1024
}

/// Peak resident memory, bytes (Linux).
#[must_use]
pub fn peak_rss_bytes() -> u64 {
    status_field_kb("self", "VmHWM:") * 1024
}

/// CPU time of `process` (`self` or a pid; user + system), from /proc (Linux, 100 ticks
/// per second).
fn cpu_time_of(process: &str) -> Duration {
    let ticks = std::fs::read_to_string(format!("/proc/{process}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1.to_owned();
            let fields: Vec<&str> = after.split_whitespace().collect();
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            Some(utime + stime)
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// CPU time of this process (user + system), from /proc (Linux, 100 ticks per second).
#[must_use]
pub fn cpu_time() -> Duration {
    cpu_time_of("self")
}

/// Resident memory and CPU time of a process at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessSample {
    /// Resident memory, bytes.
    pub rss: u64,
    /// Peak resident memory so far, bytes.
    pub peak_rss: u64,
    /// CPU time so far (user + system).
    pub cpu: Duration,
}

/// A [`ProcessSample`] of the process `pid` (zeros when it cannot be read; Linux).
///
/// ```
/// let sample = kubeclient_bench::process_sample(std::process::id());
/// assert!(sample.rss > 0);
/// ```
#[must_use]
pub fn process_sample(pid: u32) -> ProcessSample {
    let process = pid.to_string();
    ProcessSample {
        rss: status_field_kb(&process, "VmRSS:") * 1024,
        peak_rss: status_field_kb(&process, "VmHWM:") * 1024,
        cpu: cpu_time_of(&process),
    }
}

/// The allocator of both client programs: mimalloc, counting live heap bytes so memory is
/// reported as live heap next to RSS. The same for every peer, so the comparison stays fair.
pub type CountingAllocator = cap::Cap<mimalloc::MiMalloc>;

/// A [`CountingAllocator`] with no limit, for `#[global_allocator]`.
#[must_use]
pub const fn counting_allocator() -> CountingAllocator {
    cap::Cap::new(mimalloc::MiMalloc, usize::MAX)
}

/// Every tenth Pod changes between the first list and the relist of the relist scenario.
pub const RELIST_CHANGE_EVERY: usize = 10;

/// How many Pods of `objects` the relist scenario's second list changes.
#[must_use]
pub fn relist_changes(objects: usize) -> usize {
    objects.div_ceil(RELIST_CHANGE_EVERY)
}

/// Client program arguments: `--url URL --objects N --events M [--mode MODE]`.
#[derive(Debug, Clone, clap::Parser)]
pub struct ClientArgs {
    /// The load server.
    #[arg(long)]
    pub url: String,
    /// Objects the list holds.
    #[arg(long)]
    pub objects: usize,
    /// Watch events the server will send.
    #[arg(long)]
    pub events: usize,
    /// Ours only: typed | dynamic | metadata | strip.
    #[arg(long, default_value = "typed")]
    pub mode: String,
    /// held | during-sync | relist | slow-handler (see the runner's --scenarios).
    #[arg(long, default_value = "held")]
    pub scenario: String,
    /// Microseconds the handler sleeps per event (the slow-handler scenario).
    #[arg(long, default_value_t = 0)]
    pub handler_delay_us: u64,
}

impl ClientArgs {
    /// Updates the client must see: the watch events, plus the changed Pods of the relist.
    #[must_use]
    pub fn expected_updates(&self) -> usize {
        if self.scenario == "relist" {
            self.events + relist_changes(self.objects)
        } else {
            self.events
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pod_is_realistic_and_deterministic() {
        let a = serde_json::to_vec(&pod(7, 1)).unwrap();
        assert_eq!(a, serde_json::to_vec(&pod(7, 1)).unwrap());
        assert!((5_000..8_000).contains(&a.len()), "about 6 KB: {}", a.len());
        let typed: k8s_openapi::api::core::v1::Pod = serde_json::from_slice(&a).unwrap();
        assert_eq!(typed.spec.unwrap().containers.len(), 2);
    }

    #[test]
    fn process_measurements_read_proc() {
        // Read the current RSS first: the high-water mark read after it can only be larger.
        let rss = rss_bytes();
        let peak = peak_rss_bytes();
        assert!(rss > 0 && peak >= rss, "rss {rss}, peak {peak}");
    }
}
