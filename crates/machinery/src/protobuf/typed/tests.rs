//! The generated decoders against the schema-driven serde decoder: the same struct from the
//! same bytes, for real API server responses and for objects with every field set
//! (`kinds_tests` holds every kind's generated decode to the JSON round trip too).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};

use super::super::de::item_from_protobuf_by_serde;
use super::super::envelope;
use crate::manifest_dir;

fn testdata(name: &str) -> Vec<u8> {
    let path = manifest_dir().join("src/protobuf/testdata").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn both<K: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + 'static>(
    bytes: &[u8],
    strip: bool,
) -> K {
    let (api_version, kind, raw) = envelope::open(bytes).unwrap();
    let generated: K = super::decode(api_version, kind, raw, strip)
        .expect("the kind has a generated decoder")
        .unwrap();
    let serde: K = item_from_protobuf_by_serde(api_version, kind, raw, strip).unwrap();
    assert_eq!(generated, serde);
    generated
}

#[test]
fn real_server_objects_decode_as_the_serde_path_decodes_them() {
    let pod: Pod = both(&testdata("namespaces_default_pods_web-0.pb"), false);
    assert!(pod.metadata.managed_fields.is_some());
    let stripped: Pod = both(&testdata("namespaces_default_pods_web-0.pb"), true);
    assert!(stripped.metadata.managed_fields.is_none());
    let _: Deployment = both(
        &testdata("apps_v1_namespaces_default_deployments_web.pb"),
        false,
    );
    let _: Service = both(&testdata("namespaces_default_services_web.pb"), false);
    let _: Secret = both(&testdata("namespaces_default_secrets_s.pb"), false);
}

#[test]
fn a_kind_other_than_the_type_asked_for_is_refused() {
    let bytes = testdata("namespaces_default_pods_web-0.pb");
    let (api_version, kind, raw) = envelope::open(&bytes).unwrap();
    let err = super::decode::<ConfigMap>(api_version, kind, raw, false)
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("not v1, Kind=ConfigMap"), "{err}");
}

#[test]
fn truncated_and_corrupted_bytes_are_errors_never_panics() {
    let bytes = testdata("namespaces_default_pods_web-0.pb");
    let (api_version, kind, raw) = envelope::open(&bytes).unwrap();
    for end in 0..raw.len() {
        let _ = super::decode::<Pod>(api_version, kind, &raw[..end], false);
    }
    let mut corrupted = raw.to_vec();
    for i in 0..corrupted.len() {
        let saved = corrupted[i];
        corrupted[i] = saved ^ 0xa5;
        let generated = super::decode::<Pod>(api_version, kind, &corrupted, false).unwrap();
        // Where both decoders accept the bytes, they build the same Pod.
        if let (Ok(g), Ok(s)) = (
            &generated,
            item_from_protobuf_by_serde::<Pod>(api_version, kind, &corrupted, false),
        ) {
            assert_eq!(g, &s, "byte {i}");
        }
        corrupted[i] = saved;
    }
}

#[test]
fn types_without_a_generated_decoder_use_the_serde_path() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    assert!(
        super::decode::<CustomResourceDefinition>(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &[],
            false
        )
        .is_none()
    );
    assert!(super::has_generated_codec::<Pod>());
}

/// The k8s-openapi sources the decoders are generated from: `KUBECLIENT_K8S_OPENAPI_SRC`,
/// else the copy cargo unpacked in its registry (`$CARGO_HOME`, or `~/.cargo`).
fn k8s_openapi_sources() -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("KUBECLIENT_K8S_OPENAPI_SRC") {
        return Some(dir.into());
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")))?;
    let registry = cargo_home.join("registry/src");
    std::fs::read_dir(registry)
        .ok()?
        .flatten()
        .map(|index| index.path().join("k8s-openapi-0.29.0"))
        .find(|dir| dir.is_dir())
}

/// Regenerating the decoders from schema.txt and the k8s-openapi sources changes nothing
/// (prints `skipped` when neither the variable nor cargo's registry copy is there).
#[test]
fn regenerating_the_decoders_changes_nothing() {
    let Some(sources) = k8s_openapi_sources() else {
        eprintln!("skipped: no k8s-openapi sources (set KUBECLIENT_K8S_OPENAPI_SRC)");
        return;
    };
    let root = manifest_dir();
    let output = std::process::Command::new(root.join("../../scripts/gen-protobuf-decoders"))
        .arg(root.join("src/protobuf/schema.txt"))
        .arg(&sources)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let checked_in = std::fs::read_to_string(root.join("src/protobuf/typed/generated.rs")).unwrap();
    assert!(
        String::from_utf8_lossy(&output.stdout) == checked_in,
        "generated.rs differs from what scripts/gen-protobuf-decoders generates"
    );
}

/// The build script found the version k8s-openapi was built for (the tests enable 1.37):
/// without it every version-dependent field would be left out silently.
#[test]
fn the_build_script_tells_the_decoders_the_kubernetes_version() {
    #[cfg(kubeclient_k8s_minor = "37")]
    const BUILT_FOR: &str = "1.37";
    #[cfg(not(kubeclient_k8s_minor = "37"))]
    const BUILT_FOR: &str = "no version cfg";
    assert_eq!(BUILT_FOR, "1.37");
}
