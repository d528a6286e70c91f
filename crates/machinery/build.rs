//! Tells the generated protobuf decoders which Kubernetes version `k8s-openapi` was built
//! for (the final binary picks it): `cfg(kubeclient_k8s_minor = "37")` and so on. The
//! version comes from k8s-openapi's build script (its `links` metadata).

fn main() {
    println!(
        "cargo::rustc-check-cfg=cfg(kubeclient_k8s_minor, values(\"33\", \"34\", \"35\", \"36\", \"37\"))"
    );
    for (key, value) in std::env::vars() {
        if key.starts_with("DEP_K8S_OPENAPI_")
            && key.ends_with("_VERSION")
            && let Ok(version) = value.parse::<u32>()
        {
            let minor = (version >> 8) & 0xff;
            println!("cargo::rustc-cfg=kubeclient_k8s_minor=\"{minor}\"");
        }
    }
}
