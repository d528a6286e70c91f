//! kubectl against the embedded server as against a cluster: type errors and custom
//! resource schemas rejected by the server, unknown custom resource fields pruned, the
//! server's defaults visible in `get -o yaml`, and cascading deletes in all three modes.
//! Each runs with the kubectl found and, where it sits beside it, kubectl 1.27.

use serde_json::Value;

use crate::kubectl::Kubectl;
use crate::support::TestServer;

/// The kubectl found, and kubectl 1.27 if it is beside it.
fn kubectls(t: &TestServer) -> Vec<Kubectl> {
    let newest = Kubectl::for_server(t);
    let older = newest.other_version("kubectl.1.27");
    if older.is_none() {
        eprintln!("kubectl.1.27 is not beside kubectl: checked with one kubectl");
    }
    std::iter::once(newest).chain(older).collect()
}

const WRONG_TYPE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: wrong}
spec:
  replicas: "two"
  selector: {matchLabels: {app: w}}
  template:
    metadata: {labels: {app: w}}
    spec:
      containers:
      - name: web
        image: "nginx:1"
        env: [{name: A, value: 1}]
"#;

const GIZMO_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
              colour: {type: string, enum: [red, blue]}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_sees_type_errors_and_schema_violations_and_unknown_custom_fields_pruned() {
    let t = TestServer::start().await;
    for (round, kubectl) in kubectls(&t).iter().enumerate() {
        let refused = kubectl
            .run(&["apply", "-f", &kubectl.write("wrong.yaml", WRONG_TYPE)])
            .await;
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success());
        assert!(
            stderr.contains(r#"Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"#),
            "{stderr}"
        );

        if round == 0 {
            kubectl
                .ok(&["apply", "-f", &kubectl.write("crd.yaml", GIZMO_CRD)])
                .await;
            kubectl
                .ok(&[
                    "wait",
                    "--for=condition=Established",
                    "crd/gizmos.example.com",
                ])
                .await;
        }
        let bad = "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: bad}\nspec: {size: big, colour: green}\n";
        let refused = kubectl
            .run(&["apply", "-f", &kubectl.write("bad.yaml", bad)])
            .await;
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success());
        for cause in [
            r#"The Gizmo "bad" is invalid"#,
            r#"spec.colour: Unsupported value: "green": supported values: "red", "blue""#,
            r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#,
        ] {
            assert!(stderr.contains(cause), "{cause} in:\n{stderr}");
        }

        let name = format!("extra-{round}");
        let extra = format!(
            "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {{name: {name}}}\nspec: {{size: 2, colour: red, shape: round}}\n"
        );
        kubectl
            .ok(&["apply", "-f", &kubectl.write("extra.yaml", &extra)])
            .await;
        let spec = kubectl
            .ok(&["get", "gizmo", &name, "-o", "jsonpath={.spec}"])
            .await;
        let spec: Value = serde_json::from_str(&spec).expect("the spec as JSON");
        assert_eq!(spec, serde_json::json!({"size": 2, "colour": "red"}));
    }
}

const SERVICE_AND_DEPLOYMENT: &str = r#"apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1"}]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_o_yaml_shows_the_servers_defaults() {
    let t = TestServer::start().await;
    for (round, kubectl) in kubectls(&t).iter().enumerate() {
        let namespace = format!("defaults-{round}");
        kubectl.ok(&["create", "namespace", &namespace]).await;
        kubectl
            .ok(&[
                "apply",
                "-n",
                &namespace,
                "-f",
                &kubectl.write("web.yaml", SERVICE_AND_DEPLOYMENT),
            ])
            .await;
        let service = kubectl
            .ok(&["get", "-n", &namespace, "service", "web", "-o", "yaml"])
            .await;
        for line in [
            "type: ClusterIP",
            "sessionAffinity: None",
            "protocol: TCP",
            "targetPort: 80",
            "clusterIP: 10.96.",
        ] {
            assert!(service.contains(line), "{line} in:\n{service}");
        }
        let deployment = kubectl
            .ok(&["get", "-n", &namespace, "deployment", "web", "-o", "yaml"])
            .await;
        for line in [
            "replicas: 1",
            "revisionHistoryLimit: 10",
            "progressDeadlineSeconds: 600",
            "type: RollingUpdate",
            "maxSurge: 25%",
            "maxUnavailable: 25%",
            "restartPolicy: Always",
            "dnsPolicy: ClusterFirst",
            "terminationGracePeriodSeconds: 30",
            "imagePullPolicy: IfNotPresent",
            "schedulerName: default-scheduler",
            "terminationMessagePath: /dev/termination-log",
        ] {
            assert!(deployment.contains(line), "{line} in:\n{deployment}");
        }
    }
}

/// An owner ConfigMap and two dependents that name it (by uid) in `namespace`.
async fn owner_and_dependents(kubectl: &Kubectl, namespace: &str) {
    kubectl
        .ok(&["create", "configmap", "owner", "-n", namespace])
        .await;
    let uid = kubectl
        .ok(&[
            "get",
            "configmap",
            "owner",
            "-n",
            namespace,
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await;
    let dependents: String = ["dep-a", "dep-b"]
        .iter()
        .map(|name| {
            format!(
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}, blockOwnerDeletion: true}}\n"
            )
        })
        .collect();
    kubectl
        .ok(&[
            "apply",
            "-n",
            namespace,
            "-f",
            &kubectl.write(&format!("{namespace}.yaml"), &dependents),
        ])
        .await;
}

/// The names of the ConfigMaps in `namespace` that the scenario made, once `done` holds
/// for the listing (or after 30 s).
async fn configmaps_once(
    kubectl: &Kubectl,
    namespace: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let names = kubectl
            .ok(&[
                "get",
                "configmaps",
                "-n",
                namespace,
                "-o",
                r#"jsonpath={range .items[?(@.metadata.name!="kube-root-ca.crt")]}{.metadata.name}:{.metadata.ownerReferences[0].name} {end}"#,
            ])
            .await;
        if done(&names) || tokio::time::Instant::now() > deadline {
            return names.trim().to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_delete_cascades_in_background_foreground_and_orphan_mode() {
    let t = TestServer::start().await;
    for (round, kubectl) in kubectls(&t).iter().enumerate() {
        for mode in ["background", "foreground", "orphan"] {
            let namespace = format!("cascade-{mode}-{round}");
            kubectl.ok(&["create", "namespace", &namespace]).await;
            owner_and_dependents(kubectl, &namespace).await;
            assert_eq!(
                configmaps_once(kubectl, &namespace, |_| true).await,
                "dep-a:owner dep-b:owner owner:"
            );
            // kubectl waits until the owner is gone (foreground: after its dependents).
            kubectl
                .ok(&[
                    "delete",
                    "configmap",
                    "owner",
                    "-n",
                    &namespace,
                    &format!("--cascade={mode}"),
                ])
                .await;
            let expected = if mode == "orphan" {
                "dep-a: dep-b:"
            } else {
                ""
            };
            assert_eq!(
                configmaps_once(kubectl, &namespace, |names| names.trim() == expected).await,
                expected,
                "{mode} with {round}"
            );
        }
    }
}
