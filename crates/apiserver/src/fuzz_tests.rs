//! Property-based fuzzing (proptest, stable toolchain) of everything the server parses from
//! a request: the path router, query parameters, and bodies and patches of every content
//! type. Requests go straight to the handler (no sockets), thousands per property. Each
//! asserts: no panic, an error is a proper `Status`, and every stored ConfigMap still
//! decodes into its type (one bad object would poison every informer).
//!
//! `PROPTEST_CASES=20000 cargo test -p kubeclient-apiserver --lib fuzz` runs longer;
//! `scripts/fuzz-long` runs each property for a fixed time.

use std::sync::Arc;
use std::time::Duration;

use crate::Limits;
use crate::faults::Faults;
use crate::registry::Registry;
use crate::state::{Config, State};
use crate::storage::Store;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use proptest::prelude::*;
use serde_json::{Value, json};

fn state() -> Arc<State> {
    Arc::new(State {
        store: Arc::new(Store::new(1000)),
        registry: Registry::new(),
        faults: Faults::default(),
        config: Config {
            token: None,
            server_address: "127.0.0.1:1".to_owned(),
            bookmark_interval: Duration::from_secs(60),
            kubernetes_minor_version: 37,
            admin_enabled: true,
            limits: Limits::default(),
            service_account_issuer: crate::authentication::DEFAULT_SERVICE_ACCOUNT_ISSUER
                .to_owned(),
            api_audiences: vec![crate::authentication::DEFAULT_SERVICE_ACCOUNT_ISSUER.to_owned()],
            authorization_mode: crate::authorization::AuthorizationMode::AlwaysAllow,
            webhooks: Default::default(),
        },
        sessions: Default::default(),
        // No controller task runs here: writes wake nothing.
        write_hook: Arc::new(crate::registry::store::NoHook),
        tokens: Default::default(),
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Sends one request to the handler; returns the status and (for non-streaming answers)
/// the body.
async fn call(
    state: &Arc<State>,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Option<(u16, Bytes)> {
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .ok()?;
    let response = crate::server::respond(state.clone(), request, None).await;
    let status = response.status().as_u16();
    // Watches stream for a long time: take what is there and drop the rest.
    let body = tokio::time::timeout(Duration::from_millis(200), response.into_body().collect())
        .await
        .ok()
        .and_then(Result::ok)
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    Some((status, body))
}

/// An error answer is a Status object with the same code (or plain-text 404 / 406 bodies
/// of unknown paths), never a dropped connection or an empty 200.
fn assert_proper(status: u16, body: &[u8], what: &str) {
    if status < 400 {
        return;
    }
    if status == 404 && body.starts_with(b"404 page not found") {
        return;
    }
    let parsed: Value = serde_json::from_slice(body).unwrap_or_else(|err| {
        panic!(
            "{what}: a {status} answer is not JSON ({err}): {}",
            String::from_utf8_lossy(body)
        )
    });
    assert_eq!(parsed["kind"], "Status", "{what}: {parsed}");
    assert_eq!(parsed["code"], status, "{what}: {parsed}");
}

/// Every stored ConfigMap decodes as a k8s-openapi ConfigMap.
fn assert_store_decodes(state: &State) {
    let configmaps = kubeclient_machinery::GroupResource::new("", "configmaps");
    for object in state.store.snapshot(&configmaps, "").objects {
        serde_json::from_slice::<k8s_openapi::api::core::v1::ConfigMap>(&object.bytes)
            .unwrap_or_else(|err| {
                panic!(
                    "a stored ConfigMap does not decode ({err}): {:?}",
                    object.value
                )
            });
    }
}

async fn seed(state: &Arc<State>) {
    let namespace = json!({"metadata": {"name": "default"}})
        .to_string()
        .into_bytes();
    call(
        state,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        namespace,
    )
    .await;
    let cm =
        json!({"metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v", "n": "1"}});
    call(
        state,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        cm.to_string().into_bytes(),
    )
    .await;
}

const CONTENT_TYPES: [&str; 9] = [
    "",
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain; charset=utf-8",
];

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("api".to_owned()),
        Just("apis".to_owned()),
        Just("v1".to_owned()),
        Just("namespaces".to_owned()),
        Just("default".to_owned()),
        Just("configmaps".to_owned()),
        Just("cm".to_owned()),
        Just("status".to_owned()),
        Just("scale".to_owned()),
        Just("watch".to_owned()),
        Just("apps".to_owned()),
        Just("_kubeclient".to_owned()),
        Just("faults".to_owned()),
        "[a-z%0-9.~-]{0,8}",
        any::<String>().prop_map(|s| percent_encoding::utf8_percent_encode(
            &s,
            percent_encoding::NON_ALPHANUMERIC
        )
        .to_string()),
    ]
}

fn query() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("watch"),
        Just("timeoutSeconds"),
        Just("limit"),
        Just("continue"),
        Just("resourceVersion"),
        Just("resourceVersionMatch"),
        Just("labelSelector"),
        Just("fieldSelector"),
        Just("sendInitialEvents"),
        Just("allowWatchBookmarks"),
        Just("dryRun"),
        Just("fieldManager"),
        Just("force"),
        Just("count"),
        Just("includeObject"),
        Just("propagationPolicy"),
    ];
    let value = prop_oneof![
        Just("1".to_owned()),
        Just("-1".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("All".to_owned()),
        "[ -~]{0,12}",
    ];
    proptest::collection::vec((name, value), 0..4).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(n, v)| {
                format!(
                    "{n}={}",
                    percent_encoding::utf8_percent_encode(&v, percent_encoding::NON_ALPHANUMERIC)
                )
            })
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z/~0-9 ]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("metadata".to_owned()),
                    Just("data".to_owned()),
                    Just("labels".to_owned()),
                    Just("finalizers".to_owned()),
                    Just("name".to_owned()),
                    Just("k".to_owned()),
                    "[a-z]{1,4}",
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_patch_ops() -> impl Strategy<Value = Value> {
    let path = prop_oneof![
        Just("".to_owned()),
        Just("/data".to_owned()),
        Just("/data/k".to_owned()),
        Just("/metadata".to_owned()),
        Just("/metadata/labels".to_owned()),
        Just("/metadata/finalizers".to_owned()),
        Just("/metadata/finalizers/0".to_owned()),
        Just("/nope".to_owned()),
        "(/[a-z0-9~-]{0,3}){0,3}",
    ];
    let op = prop_oneof![
        Just("add"),
        Just("remove"),
        Just("replace"),
        Just("move"),
        Just("copy"),
        Just("test"),
        Just("bogus")
    ];
    proptest::collection::vec((op, path.clone(), path, json_value()), 0..5).prop_map(|ops| {
        Value::Array(
            ops.into_iter()
                .map(|(op, path, from, value)| json!({"op": op, "path": path, "from": from, "value": value}))
                .collect(),
        )
    })
}

/// Cases per property: `PROPTEST_CASES` when set, else 512.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(cases()) })]

    #[test]
    fn fuzz_paths_and_query_parameters(
        segments in proptest::collection::vec(segment(), 0..7),
        query in query(),
        method in prop_oneof![Just("GET"), Just("POST"), Just("DELETE"), Just("PUT"), Just("PATCH")],
        trailing_slash in any::<bool>(),
    ) {
        let rt = runtime();
        rt.block_on(async {
            let state = state();
            seed(&state).await;
            let mut uri = format!("/{}", segments.join("/"));
            if trailing_slash { uri.push('/'); }
            if !query.is_empty() { uri = format!("{uri}?{query}"); }
            if let Some((status, body)) = call(&state, method, &uri, "application/json", b"{}".to_vec()).await {
                assert_proper(status, &body, &format!("{method} {uri}"));
            }
            assert_store_decodes(&state);
        });
    }

    #[test]
    fn fuzz_bodies_of_every_content_type(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        content_type in proptest::sample::select(CONTENT_TYPES.to_vec()),
        target in 0..3usize,
    ) {
        let rt = runtime();
        rt.block_on(async {
            let state = state();
            seed(&state).await;
            let (method, uri) = [
                ("POST", "/api/v1/namespaces/default/configmaps"),
                ("PUT", "/api/v1/namespaces/default/configmaps/cm"),
                ("PATCH", "/api/v1/namespaces/default/configmaps/cm?fieldManager=f"),
            ][target];
            if let Some((status, body)) = call(&state, method, uri, content_type, bytes).await {
                assert_proper(status, &body, &format!("{method} {uri} {content_type}"));
            }
            assert_store_decodes(&state);
        });
    }

    #[test]
    fn fuzz_json_shaped_objects_and_patches(
        value in json_value(),
        ops in json_patch_ops(),
        content_type in proptest::sample::select(CONTENT_TYPES[..7].to_vec()),
        target in 0..3usize,
    ) {
        let rt = runtime();
        rt.block_on(async {
            let state = state();
            seed(&state).await;
            let (method, uri) = [
                ("POST", "/api/v1/namespaces/default/configmaps"),
                ("PUT", "/api/v1/namespaces/default/configmaps/cm"),
                ("PATCH", "/api/v1/namespaces/default/configmaps/cm?fieldManager=f&force=true"),
            ][target];
            let body = if content_type == "application/json-patch+json" { ops } else { value };
            let body = body.to_string().into_bytes();
            if let Some((status, answer)) = call(&state, method, uri, content_type, body).await {
                assert_proper(status, &answer, &format!("{method} {uri} {content_type}"));
            }
            assert_store_decodes(&state);
        });
    }
}
