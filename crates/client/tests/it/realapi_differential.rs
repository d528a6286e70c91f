//! Random sequences of API operations sent to the embedded server and to a **real
//! kube-apiserver** v1.20 (`KUBECLIENT_REALAPI_KUBECONFIG`, or `KUBECLIENT_REALAPI_GC_KUBECONFIG`), compared answer by answer after the
//! normalization of `realapi_comparison` (uids, resourceVersions, times, allocated
//! addresses, fields newer Kubernetes versions add). Creates, reads, lists with selectors
//! and limits, updates with current, stale and missing resourceVersions, merge, strategic,
//! JSON and server-side apply patches (with and without force, by two managers), dry runs,
//! status and scale writes and deletes with propagation policies and preconditions, on
//! ConfigMaps, Secrets, Deployments, Services and a custom resource.
//!
//! Prints the agreement per kind of operation and every disagreement; fails below
//! [`REQUIRED_AGREEMENT`]. The seeds are fixed, so a run is repeatable.

use std::collections::BTreeMap;

use http::Method;
use kubeclient::rest::{ContentType, Request};
use kubeclient::{Client, Error};
use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::realapi::{fresh_namespace, real_server, real_server_named};
use crate::realapi_comparison::normalize;
use crate::support::{start, start_with};

/// Sequences run, and operations in each.
const SEEDS: u64 = 25;
const OPERATIONS: usize = 40;
/// The share of answers that must agree (measured: see the closing notes and docs/APISERVER.md).
const REQUIRED_AGREEMENT: f64 = 0.9;

/// The resources the sequences work on: path under the namespace, kind, apiVersion.
const RESOURCES: [(&str, &str, &str); 5] = [
    ("api/v1/namespaces/{ns}/configmaps", "ConfigMap", "v1"),
    ("api/v1/namespaces/{ns}/secrets", "Secret", "v1"),
    (
        "apis/apps/v1/namespaces/{ns}/deployments",
        "Deployment",
        "apps/v1",
    ),
    ("api/v1/namespaces/{ns}/services", "Service", "v1"),
    (
        "apis/{ns}.diff.example.com/v1/namespaces/{ns}/gadgets",
        "Gadget",
        "{ns}.diff.example.com/v1",
    ),
];

const NAMES: [&str; 3] = ["a", "b", "c"];

/// One operation, described without reference to either server's state.
#[derive(Clone, Debug)]
struct Operation {
    category: &'static str,
    method: Method,
    /// Path with `{ns}`; `{rv}` in the body is the live resourceVersion on each server.
    path: String,
    content_type: &'static str,
    body: Value,
    /// Read the live object first to fill `{rv}` (a current-version update).
    needs_rv: bool,
}

/// A body of `kind` named `name`, with `variant` choosing its contents.
fn object(kind: &str, api_version: &str, name: &str, variant: u8) -> Value {
    let labels = json!({"app": "diff", "variant": variant.to_string()});
    let metadata = json!({"name": name, "labels": labels});
    match kind {
        "ConfigMap" => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata,
            "data": {"k": format!("v{variant}"), "common": "x"}}),
        "Secret" => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata,
            "stringData": {"password": format!("p{variant}")}}),
        "Deployment" => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata,
            "spec": {"replicas": variant % 3, "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "web", "image": format!("nginx:1.{variant}"),
                        "ports": [{"containerPort": 80}]}]}}}}),
        "Service" => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata,
            // `protocol` given: v1.20's server-side apply fails without it (fixed later).
            "spec": {"selector": {"app": name},
                "ports": [{"name": "http", "port": 80 + u16::from(variant), "protocol": "TCP"}]}}),
        _ => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata,
            "spec": {"size": variant, "colour": if variant.is_multiple_of(2) { "red" } else { "blue" }}}),
    }
}

/// A random patch body of each type for `kind`.
fn patch_body(kind: &str, variant: u8, rng: &mut fastrand::Rng) -> (&'static str, Value) {
    let labels = json!({"metadata": {"labels": {"patched": variant.to_string()}}});
    match rng.u8(0..3) {
        0 => ("application/merge-patch+json", labels),
        1 if kind != "Gadget" => ("application/strategic-merge-patch+json", labels),
        _ => (
            "application/json-patch+json",
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"v": variant.to_string()}}]),
        ),
    }
}

/// A random operation.
fn random_operation(rng: &mut fastrand::Rng) -> Operation {
    let (collection, kind, api_version) = RESOURCES[rng.usize(..RESOURCES.len())];
    let name = NAMES[rng.usize(..NAMES.len())];
    let item = format!("/{collection}/{name}");
    let variant = rng.u8(0..6);
    let op = |category, method, path: String, content_type, body, needs_rv| Operation {
        category,
        method,
        path,
        content_type,
        body,
        needs_rv,
    };
    match rng.u8(0..14) {
        0 | 1 => op(
            "create",
            Method::POST,
            format!("/{collection}"),
            "application/json",
            object(kind, api_version, name, variant),
            false,
        ),
        2 => op(
            "create (dry run)",
            Method::POST,
            format!("/{collection}?dryRun=All"),
            "application/json",
            object(kind, api_version, name, variant),
            false,
        ),
        3 => op("get", Method::GET, item, "", Value::Null, false),
        4 => {
            // Only the sequence's own objects: kube-controller-manager adds token Secrets.
            // (etcd pages before the selector filters, so a selected page's `continue`
            // depends on the objects it skipped: pages are taken without selectors, of
            // kinds without those objects.)
            let query = match rng.u8(0..4) {
                0 => "?labelSelector=app%3Ddiff,variant%3D1",
                1 => "?labelSelector=app%3Ddiff,variant!%3D2",
                2 if kind != "Secret" => "?limit=1",
                _ => "?labelSelector=app%3Ddiff",
            };
            op(
                "list",
                Method::GET,
                format!("/{collection}{query}"),
                "",
                Value::Null,
                false,
            )
        }
        5 | 6 if kind != "Service" => {
            let mut body = object(kind, api_version, name, variant);
            let (category, needs_rv) = match rng.u8(0..3) {
                0 => {
                    body["metadata"]["resourceVersion"] = json!("{rv}");
                    ("update (current version)", true)
                }
                1 => {
                    body["metadata"]["resourceVersion"] = json!("1");
                    ("update (stale version)", false)
                }
                _ => ("update (no version)", false),
            };
            op(
                category,
                Method::PUT,
                item,
                "application/json",
                body,
                needs_rv,
            )
        }
        // (v1.20 refuses a Service update without its clusterIP, which newer versions
        // keep: Services are patched instead.)
        5..=8 => {
            let (content_type, body) = patch_body(kind, variant, rng);
            let category = match content_type {
                "application/merge-patch+json" => "merge patch",
                "application/strategic-merge-patch+json" => "strategic merge patch",
                _ => "json patch",
            };
            op(category, Method::PATCH, item, content_type, body, false)
        }
        9 | 10 => {
            let manager = if rng.bool() { "alice" } else { "bob" };
            let force = rng.u8(0..3) == 0;
            op(
                "server-side apply",
                Method::PATCH,
                format!("{item}?fieldManager={manager}&force={force}"),
                "application/apply-patch+yaml",
                object(kind, api_version, name, variant),
                false,
            )
        }
        11 if kind == "Deployment" => {
            if rng.bool() {
                op(
                    "scale",
                    Method::PUT,
                    format!("{item}/scale"),
                    "application/json",
                    json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                        "metadata": {"name": name, "namespace": "{ns}"},
                        "spec": {"replicas": i32::from(variant) - 1}}),
                    false,
                )
            } else {
                op(
                    "status patch",
                    Method::PATCH,
                    format!("{item}/status"),
                    "application/merge-patch+json",
                    json!({"status": {"replicas": variant, "observedGeneration": 1}}),
                    false,
                )
            }
        }
        _ => {
            // v1.20's Service deletes answer a Status even when a finalizer holds the
            // object (newer versions answer the object): propagation is not compared there.
            // (kube-controller-manager's collector finds a new CRD's resource only at its
            // next discovery, up to 30 s later: propagation is not compared for it either.)
            let choices = if matches!(kind, "Service" | "Gadget") {
                2
            } else {
                4
            };
            let body = match rng.u8(0..choices) + 4 - choices {
                0 => json!({"propagationPolicy": "Orphan"}),
                1 => json!({"propagationPolicy": "Foreground"}),
                2 => json!({"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
                _ => Value::Null,
            };
            op(
                "delete",
                Method::DELETE,
                item,
                "application/json",
                body,
                false,
            )
        }
    }
}

/// The CRD of the sequences' custom resource, in the namespace's own group.
fn gadget_crd(namespace: &str) -> Value {
    let group = format!("{namespace}.diff.example.com");
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "colour": {"type": "string", "enum": ["red", "blue"]}}}}}}}]}})
}

/// Sends `request`, retrying the moments a new namespace's ServiceAccount or a new CRD's
/// resource is not visible yet (as a client would).
async fn send(client: &Client, request: Request) -> Result<bytes::Bytes, Error> {
    let mut outcome = client.request_bytes(request.clone()).await;
    for _ in 0..50 {
        match &outcome {
            Err(Error::Api(error))
                if error.code() == 404
                    && error.status.message
                        == "the server could not find the requested resource" =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                outcome = client.request_bytes(request.clone()).await;
            }
            _ => break,
        }
    }
    outcome
}

/// Runs `operation` on one server and gives its normalized answer.
async fn run(client: &Client, namespace: &str, operation: &Operation) -> Answer {
    let path = operation.path.replace("{ns}", namespace);
    let mut body = operation.body.to_string().replace("{ns}", namespace);
    if operation.needs_rv {
        let live = send(client, Request::new(Method::GET, path.clone())).await;
        let rv = live
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|v| v["metadata"]["resourceVersion"].as_str().map(str::to_owned))
            .unwrap_or_default();
        body = body.replace("{rv}", &rv);
    }
    let mut request = Request::new(operation.method.clone(), path);
    if !operation.body.is_null() {
        request = request.body(body, operation.content_type);
    }
    let outcome = send(client, request).await;
    let deleted = operation.method == Method::DELETE && outcome.is_ok();
    let mut return_both = None;
    let answer = match outcome {
        Ok(bytes) => {
            let mut value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if let Some(token) = value.pointer_mut("/metadata/continue") {
                *token = json!("<continue>");
            }
            let with_managed_fields = normalize(value.clone(), namespace, &["managedFields"]);
            return_both = Some(with_managed_fields);
            normalize(value, namespace, &[])
        }
        Err(Error::Api(error)) => json!({
            "code": error.code(),
            "reason": error.reason(),
            "message": without_uids(&error.status.message.replace(namespace, "{ns}")),
        }),
        Err(other) => json!({"transport": other.to_string()}),
    };
    if deleted {
        gone(client, &operation.path.replace("{ns}", namespace)).await;
    }
    Answer {
        with_managed_fields: return_both.unwrap_or_else(|| answer.clone()),
        answer,
    }
}

/// One server's answer to an operation, normalized, and also with its managedFields (but
/// their times) kept.
struct Answer {
    answer: Value,
    with_managed_fields: Value,
}

/// Waits (up to 10 s) until the object at `path` is gone, so the garbage collector's
/// pace on either server does not decide the next operation's answer.
async fn gone(client: &Client, path: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        match client
            .request_bytes(Request::new(Method::GET, path.to_owned()))
            .await
        {
            Err(Error::Api(error)) if error.code() == 404 => return,
            _ => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
}

/// `text` with every UUID replaced by `{uid}` (preconditions name the object's uid).
fn without_uids(text: &str) -> String {
    let is_uuid = |word: &str| {
        word.len() == 36
            && word.char_indices().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => c == '-',
                _ => c.is_ascii_hexdigit(),
            })
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        match rest.get(..36).filter(|word| is_uuid(word)) {
            Some(_) => {
                out.push_str("{uid}");
                rest = &rest[36..];
            }
            None => {
                let mut chars = rest.chars();
                if let Some(c) = chars.next() {
                    out.push(c);
                }
                rest = chars.as_str();
            }
        }
    }
    out
}

/// Why two answers differ where the real server is v1.20 and the embedded one follows a
/// newer version, or `None` for a real disagreement.
fn newer_behaviour(real: &Value, ours: &Value) -> Option<&'static str> {
    let message = |answer: &Value| answer["message"].as_str().unwrap_or("").to_owned();
    if message(ours).contains(r#"with subresource "scale""#) {
        return Some("managedFields of scale writes (1.22+)");
    }
    if real["kind"] == "Status" && ours["kind"] == "Service" {
        return Some("a Service's DELETE answers the object (1.23+)");
    }
    None
}

/// Sets up a sequence's namespace (and CRD) on one server.
async fn set_up(client: &Client, seed: u64) -> String {
    let namespace = fresh_namespace(client, &format!("diff-{seed}")).await;
    let crd = Request::new(
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .body(gadget_crd(&namespace).to_string(), "application/json");
    send(client, crd).await.expect("the CRD is created");
    // The real server in CI runs no service-account controller.
    let account = Request::new(
        Method::POST,
        format!("/api/v1/namespaces/{namespace}/serviceaccounts"),
    )
    .body(
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
            .to_string(),
        "application/json",
    );
    let _ = send(client, account).await;
    namespace
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_operation_sequences_agree_with_a_real_kube_apiserver() {
    // Against a real server with kube-controller-manager's garbage collector where there
    // is one; else against the plain one, with the embedded server's collector off too
    // (orphan and foreground deletes then wait for a collector on both).
    let (real, ours) =
        match real_server_named("KUBECLIENT_REALAPI_GC_KUBECONFIG", ContentType::Json).await {
            Some(real) => (real, start().await),
            None => match real_server().await {
                Some(real) => (
                    real,
                    start_with(ApiServer::builder().garbage_collector(false)).await,
                ),
                None => return,
            },
        };
    let mut tally: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut differences = Vec::new();
    let mut newer = Vec::new();
    let mut managed_fields_agree = 0;
    let mut managed_fields_differences = Vec::new();
    for seed in 0..SEEDS {
        let mut rng = fastrand::Rng::with_seed(seed);
        let (real_ns, our_ns) = tokio::join!(set_up(&real, seed), set_up(&ours.client, seed));
        for index in 0..OPERATIONS {
            let operation = random_operation(&mut rng);
            let (real_answer, our_answer) = tokio::join!(
                run(&real, &real_ns, &operation),
                run(&ours.client, &our_ns, &operation)
            );
            if real_answer.with_managed_fields == our_answer.with_managed_fields {
                managed_fields_agree += 1;
            } else if managed_fields_differences.len() < 5 {
                managed_fields_differences.push(format!(
                    "seed {seed} op {index} {} {}\n  real: {}\n  ours: {}",
                    operation.method,
                    operation.path,
                    real_answer.with_managed_fields["metadata"]["managedFields"],
                    our_answer.with_managed_fields["metadata"]["managedFields"]
                ));
            }
            let (real_answer, our_answer) = (real_answer.answer, our_answer.answer);
            let entry = tally.entry(operation.category).or_default();
            entry.1 += 1;
            if real_answer == our_answer {
                entry.0 += 1;
            } else if let Some(why) = newer_behaviour(&real_answer, &our_answer) {
                newer.push(format!(
                    "seed {seed} op {index} {} {}: {why}",
                    operation.method, operation.path
                ));
            } else {
                differences.push(format!(
                    "seed {seed} op {index} {} {} {}\n  body: {}\n  real: {real_answer}\n  ours: {our_answer}",
                    operation.category, operation.method, operation.path, operation.body
                ));
            }
        }
    }
    let (agree, total) = tally
        .values()
        .fold((0, 0), |(a, t), (agree, total)| (a + agree, t + total));
    eprintln!("agreement with the real server, by operation:");
    for (category, (agree, total)) in &tally {
        eprintln!("  {category:<28} {agree:>4}/{total:<4}");
    }
    #[allow(clippy::cast_precision_loss)]
    let share = agree as f64 / total.max(1) as f64;
    eprintln!(
        "  {:<28} {agree:>4}/{total:<4} ({:.1}%)",
        "all",
        share * 100.0
    );
    eprintln!(
        "  (of the rest, {} differ where newer Kubernetes versions answer as the embedded server)",
        newer.len()
    );
    eprintln!(
        "  with managedFields compared too (v1.20 records fields newer versions do not): {managed_fields_agree}/{total}"
    );
    for line in newer
        .iter()
        .chain(&differences)
        .chain(&managed_fields_differences)
    {
        eprintln!("{line}");
    }
    assert!(
        share >= REQUIRED_AGREEMENT,
        "{agree}/{total} answers agree, fewer than {:.0}%",
        REQUIRED_AGREEMENT * 100.0
    );
}
