//! Garbage collection of the embedded server against a **real** kube-apiserver (CI: v1.20)
//! with kube-controller-manager's garbage collector, whose kubeconfig path is in
//! `KUBECLIENT_REALAPI_GC_KUBECONFIG` (`.ci/run` starts one on port 6543 and sets it; kind
//! runs a garbage collector too: docs/TESTING.md). The same owner and dependents are deleted in each
//! propagation mode on both servers, and both must go through the same states: what is
//! deleted, what is orphaned, what waits with which finalizer.
//!
//! By hand:
//! ```sh
//! KUBECLIENT_REALAPI_GC_KUBECONFIG=/path/to/kubeconfig \
//!   cargo test -p kubeclient --test it realapi_garbage_collection
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeclient::Client;
use kubeclient::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kubeclient::rest::ContentType;
use serde_json::{Value, json};

use crate::realapi::{fresh_namespace, real_server_named};
use crate::support::start;

/// How long a garbage collector may take to reach a state.
const SETTLE: Duration = Duration::from_secs(60);

/// The real server with a garbage collector, or `None` (skipped) where none was started.
async fn real_server_with_gc() -> Option<Client> {
    real_server_named("KUBECLIENT_REALAPI_GC_KUBECONFIG", ContentType::Json).await
}

/// The ConfigMaps of a scenario as the comparison sees them: for each name, its owners
/// (by name, with `blockOwnerDeletion`), finalizers and whether it is being deleted.
async fn snapshot(api: &Api<ConfigMap>) -> BTreeMap<String, Value> {
    let list = api
        .list(&ListParams::default())
        .await
        .expect("the ConfigMaps list");
    list.items
        .into_iter()
        .filter_map(|cm| {
            let name = cm.metadata.name.clone()?;
            if !(name.starts_with("owner") || name.starts_with("dep")) {
                return None;
            }
            let owners: Vec<Value> = cm
                .metadata
                .owner_references
                .unwrap_or_default()
                .into_iter()
                .map(|owner| json!([owner.name, owner.block_owner_deletion.unwrap_or(false)]))
                .collect();
            let state = json!({
                "owners": owners,
                "finalizers": cm.metadata.finalizers.unwrap_or_default(),
                "deleting": cm.metadata.deletion_timestamp.is_some(),
            });
            Some((name, state))
        })
        .collect()
}

/// Waits until the scenario's ConfigMaps are in `expected` (or the deadline passes) and
/// returns the state last seen.
async fn settle(api: &Api<ConfigMap>, expected: &Value) -> Value {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let seen = serde_json::to_value(snapshot(api).await).unwrap_or(Value::Null);
        if &seen == expected || tokio::time::Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn create_configmap(api: &Api<ConfigMap>, name: &str, owners: Vec<OwnerReference>) {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    if !owners.is_empty() {
        cm.metadata.owner_references = Some(owners);
    }
    api.create(&PostParams::default(), &cm)
        .await
        .expect("the ConfigMap is created");
}

fn owned_by(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        name: owner.metadata.name.clone().unwrap_or_default(),
        uid: owner.metadata.uid.clone().unwrap_or_default(),
        block_owner_deletion: block.then_some(true),
        controller: None,
    }
}

/// The `owners` of a snapshot entry owned by `owner` alone.
fn owners_of(owner: &str, block: bool) -> Value {
    json!([[owner, block]])
}

/// One propagation mode on one server: the states it went through, in order.
async fn run_scenario(client: &Client, mode: &str) -> Vec<Value> {
    let namespace = fresh_namespace(client, &format!("gc-{}", mode.to_lowercase())).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let mut owner = ConfigMap::default();
    owner.metadata.name = Some("owner".to_owned());
    let owner = api
        .create(&PostParams::default(), &owner)
        .await
        .expect("the owner is created");
    create_configmap(&api, "dep-blocking", vec![owned_by(&owner, true)]).await;
    create_configmap(&api, "dep-plain", vec![owned_by(&owner, false)]).await;
    // A dependent whose owner never existed (a uid nobody has) is collected in every mode.
    let mut ghost = owned_by(&owner, false);
    ghost.name = "owner-gone".to_owned();
    ghost.uid = "4d3c2b1a-0000-4000-8000-000000000000".to_owned();
    create_configmap(&api, "dep-dangling", vec![ghost]).await;
    // The blocking dependent is held by a finalizer, so a foreground delete has to wait.
    api.patch(
        "dep-blocking",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold"]}})),
    )
    .await
    .expect("the finalizer is added");
    let mut states = Vec::new();

    let params = DeleteParams {
        propagation_policy: Some(mode.to_owned()),
        ..DeleteParams::default()
    };
    api.delete("owner", &params)
        .await
        .expect("the owner's delete is accepted");
    let expected = match mode {
        "Background" => json!({
            "dep-blocking": {"deleting": true, "finalizers": ["example.com/hold"], "owners": owners_of("owner", true)},
        }),
        "Foreground" => json!({
            "owner": {"deleting": true, "finalizers": ["foregroundDeletion"], "owners": []},
            "dep-blocking": {"deleting": true, "finalizers": ["example.com/hold"], "owners": owners_of("owner", true)},
        }),
        _ => json!({
            "dep-blocking": {"deleting": false, "finalizers": ["example.com/hold"], "owners": []},
            "dep-plain": {"deleting": false, "finalizers": [], "owners": []},
        }),
    };
    states.push(settle(&api, &expected).await);

    // Let the held dependent go: whatever waited for it finishes.
    api.patch(
        "dep-blocking",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("the finalizer is removed");
    let expected = match mode {
        "Orphan" => json!({
            "dep-blocking": {"deleting": false, "finalizers": [], "owners": []},
            "dep-plain": {"deleting": false, "finalizers": [], "owners": []},
        }),
        _ => json!({}),
    };
    states.push(settle(&api, &expected).await);
    states
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collection_goes_through_the_real_servers_states_in_every_mode() {
    let Some(real) = real_server_with_gc().await else {
        return;
    };
    let ours = start().await;
    let mut agree = 0;
    let mut total = 0;
    let mut differences = Vec::new();
    for mode in ["Background", "Foreground", "Orphan"] {
        let (real_states, our_states) =
            tokio::join!(run_scenario(&real, mode), run_scenario(&ours.client, mode));
        for (step, (real_state, our_state)) in real_states.iter().zip(&our_states).enumerate() {
            total += 1;
            if real_state == our_state {
                agree += 1;
            } else {
                differences.push(format!(
                    "{mode} state {step}:\n  real: {real_state}\n  ours: {our_state}"
                ));
            }
        }
    }
    eprintln!("garbage collection: {agree}/{total} states agree with the real server");
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
