//! Typed server-side apply (issue 29): two field managers apply overlapping apply
//! configurations of a Deployment, a Service (ports keyed by port and protocol), a ConfigMap,
//! a cluster-scoped PriorityClass (scheduling/v1, one of the other generated groups) and a
//! custom resource. Every scenario asserts its own expectations on the embedded
//! server over HTTP and writes a transcript (each step's outcome: the fields it touched, or
//! the conflict's code, reason and causes; then what `extract` gives for each manager);
//! with a real kube-apiserver (`KUBECLIENT_REALAPI_KUBECONFIG`) the same scenario runs there
//! and the two transcripts must be equal.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeclient::applyconfigurations::ApplyConfiguration;
use kubeclient::applyconfigurations::apps::v1::{
    DeploymentApplyConfiguration, DeploymentSpecApplyConfiguration,
};
use kubeclient::applyconfigurations::core::v1::{
    ConfigMapApplyConfiguration, ContainerApplyConfiguration, PodSpecApplyConfiguration,
    PodTemplateSpecApplyConfiguration, ServiceApplyConfiguration, ServicePortApplyConfiguration,
    ServiceSpecApplyConfiguration,
};
use kubeclient::applyconfigurations::meta::v1::{
    LabelSelectorApplyConfiguration, ObjectMetaApplyConfiguration,
};
use kubeclient::applyconfigurations::scheduling::v1::PriorityClassApplyConfiguration;
use kubeclient::customresource::{CustomResourceExt, install_crd};
use kubeclient::{Api, ApplyOptions, Client, CustomResource, Error};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::realapi::{fresh_namespace, real_server};
use crate::support::start;

/// A custom resource of this test's own (its CRD is cluster-wide on the real server).
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[kubeclient(
    group = "apply.kubeclient.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WidgetSpec {
    pub(crate) replicas: i32,
    pub(crate) image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_surge: Option<i32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ready_replicas: Option<i32>,
}

const ALPHA: &str = "alpha";
const BETA: &str = "beta";
/// The status writer of the custom resource scenario.
const GAMMA: &str = "gamma";

/// What a scenario observed, step by step.
#[derive(Default)]
struct Transcript(Vec<String>);

impl Transcript {
    fn note(&mut self, step: &str, value: Value) {
        self.0.push(format!("{step}: {value}"));
    }

    /// A step whose outcome depends on managedFields' `subresource` (Kubernetes 1.22+): a
    /// v1.20 server records a status apply in the manager's main entry.
    fn note_since_1_22(&mut self, step: &str, value: Value) {
        self.0.push(format!("{SINCE_1_22}{step}: {value}"));
    }
}

const SINCE_1_22: &str = "[1.22+] ";

/// A step's outcome: `Ok(fields)` or the error's code, reason and sorted causes.
fn outcome<T>(result: Result<T, Error>, fields: impl FnOnce(&T) -> Value) -> Value {
    match result {
        Ok(object) => json!({"ok": fields(&object)}),
        Err(Error::Api(err)) => {
            let mut causes: Vec<Value> = err
                .status
                .details
                .iter()
                .flat_map(|d| d.causes.iter())
                .map(|c| json!({"type": c.reason, "field": c.field, "message": c.message}))
                .collect();
            causes.sort_by_key(Value::to_string);
            json!({"code": err.status.code, "reason": err.status.reason, "causes": causes})
        }
        Err(other) => json!({"error": other.to_string()}),
    }
}

fn options(manager: &str) -> ApplyOptions {
    ApplyOptions::new(manager)
}

fn value<T: Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("serializes")
}

fn web_deployment(ns: &str) -> DeploymentApplyConfiguration {
    let labels = [("app", "web")];
    DeploymentApplyConfiguration::new("web", ns)
        .with_labels([("team", "a")])
        .with_spec(
            DeploymentSpecApplyConfiguration::default()
                .with_replicas(2)
                .with_selector(LabelSelectorApplyConfiguration::default().with_match_labels(labels))
                .with_template(
                    PodTemplateSpecApplyConfiguration::default()
                        .with_metadata(ObjectMetaApplyConfiguration::default().with_labels(labels))
                        .with_spec(
                            PodSpecApplyConfiguration::default().with_containers([
                                ContainerApplyConfiguration::default()
                                    .with_name("app")
                                    .with_image("nginx:1.27"),
                            ]),
                        ),
                ),
        )
}

fn deployment_fields(d: &Deployment) -> Value {
    let containers: Vec<Value> = d
        .spec
        .template
        .spec
        .iter()
        .flat_map(|p| p.containers.iter())
        .map(|c| json!([c.name, c.image]))
        .collect();
    json!({
        "labels": d.metadata.labels,
        "replicas": d.spec.replicas,
        "containers": containers,
    })
}

async fn deployment_scenario(client: &Client, ns: &str) -> Transcript {
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let mut t = Transcript::default();
    let applied = api
        .apply_configuration(&web_deployment(ns), &options(ALPHA))
        .await;
    t.note("alpha creates", outcome(applied, deployment_fields));

    let scale = |replicas| {
        DeploymentApplyConfiguration::new("web", ns)
            .with_spec(DeploymentSpecApplyConfiguration::default().with_replicas(replicas))
    };
    let conflict = api.apply_configuration(&scale(3), &options(BETA)).await;
    t.note("beta scales", outcome(conflict, deployment_fields));
    let forced = api
        .apply_configuration(&scale(3), &options(BETA).force())
        .await;
    t.note("beta forces", outcome(forced, deployment_fields));

    // beta adds a sidecar: another item of the containers list-map (keyed by name).
    let sidecar = scale(3).with_labels([("tier", "b")]);
    let sidecar = DeploymentApplyConfiguration {
        spec: sidecar.spec.map(|spec| {
            spec.with_template(
                PodTemplateSpecApplyConfiguration::default().with_spec(
                    PodSpecApplyConfiguration::default().with_containers([
                        ContainerApplyConfiguration::default()
                            .with_name("sidecar")
                            .with_image("busybox:1"),
                    ]),
                ),
            )
        }),
        ..sidecar
    };
    let both = api.apply_configuration(&sidecar, &options(BETA)).await;
    t.note("beta adds a sidecar", outcome(both, deployment_fields));

    // alpha reads what it owns, changes its image, applies it back: no conflict, and
    // neither beta's replicas nor its sidecar change hands.
    let current = api.get("web").await.expect("the deployment");
    let mut mine = DeploymentApplyConfiguration::extract(&current, ALPHA).expect("extracts");
    t.note("alpha extracts", value(&mine));
    t.note(
        "beta extracts",
        value(&DeploymentApplyConfiguration::extract(&current, BETA).expect("extracts")),
    );
    if let Some(container) = mine
        .spec
        .as_mut()
        .and_then(|s| s.template.as_mut())
        .and_then(|t| t.spec.as_mut())
        .and_then(|p| p.containers.as_mut())
        .and_then(|c| c.first_mut())
    {
        container.image = Some("nginx:1.28".to_owned());
    }
    let reapplied = api.apply_configuration(&mine, &options(ALPHA)).await;
    t.note(
        "alpha re-applies its extract",
        outcome(reapplied, deployment_fields),
    );

    // alpha drops its team label: it alone owned it, so it goes.
    let mut without_label = mine;
    if let Some(meta) = without_label.metadata.as_mut() {
        meta.labels = None;
    }
    let dropped = api
        .apply_configuration(&without_label, &options(ALPHA))
        .await;
    t.note("alpha drops its label", outcome(dropped, deployment_fields));
    t
}

fn service_ports(s: &Service) -> Value {
    let ports: Vec<Value> = s
        .spec
        .iter()
        .flat_map(|spec| spec.ports.iter().flatten())
        .map(|p| json!([p.name, p.port, p.protocol, p.target_port]))
        .collect();
    json!(ports)
}

fn port(name: &str, number: i32, protocol: &str) -> ServicePortApplyConfiguration {
    ServicePortApplyConfiguration::default()
        .with_name(name)
        .with_port(number)
        .with_protocol(protocol)
}

async fn service_scenario(client: &Client, ns: &str) -> Transcript {
    let api: Api<Service> = Api::namespaced(client.clone(), ns);
    let mut t = Transcript::default();
    let service = |ports: Vec<ServicePortApplyConfiguration>| {
        ServiceApplyConfiguration::new("web", ns)
            .with_spec(ServiceSpecApplyConfiguration::default().with_ports(ports))
    };
    let alpha = service(vec![
        port("http", 80, "TCP").with_target_port(IntOrString::Int(8080)),
    ]);
    let alpha = ServiceApplyConfiguration {
        spec: alpha.spec.map(|s| s.with_selector([("app", "web")])),
        ..alpha
    };
    t.note(
        "alpha creates",
        outcome(
            api.apply_configuration(&alpha, &options(ALPHA)).await,
            service_ports,
        ),
    );
    // Port 80 over UDP is another item of the list-map: no conflict with 80/TCP.
    let beta = service(vec![port("dns", 53, "UDP"), port("http-udp", 80, "UDP")]);
    t.note(
        "beta adds ports",
        outcome(
            api.apply_configuration(&beta, &options(BETA)).await,
            service_ports,
        ),
    );
    let retarget = service(vec![
        port("http", 80, "TCP").with_target_port(IntOrString::Int(9090)),
    ]);
    t.note(
        "beta retargets 80/TCP",
        outcome(
            api.apply_configuration(&retarget, &options(BETA)).await,
            service_ports,
        ),
    );
    let forced = api
        .apply_configuration(&retarget, &options(BETA).force())
        .await;
    t.note("beta forces", outcome(forced, service_ports));
    let current = api.get("web").await.expect("the service");
    for manager in [ALPHA, BETA] {
        let owned = ServiceApplyConfiguration::extract(&current, manager).expect("extracts");
        t.note(&format!("{manager} extracts"), value(&owned));
    }
    t
}

/// A ConfigMap step: its name, the manager, the data it applies, whether it forces.
type Step = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    bool,
);

async fn configmap_scenario(client: &Client, ns: &str) -> Transcript {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let mut t = Transcript::default();
    let data = |entries: &[(&str, &str)]| {
        ConfigMapApplyConfiguration::new("settings", ns).with_data(entries.iter().copied())
    };
    let fields = |cm: &ConfigMap| json!(cm.data);
    let steps: [Step; 6] = [
        (
            "alpha sets a and b",
            ALPHA,
            &[("a", "1"), ("b", "2")],
            false,
        ),
        ("beta changes b", BETA, &[("b", "3")], false),
        (
            "beta sets c and a as it is",
            BETA,
            &[("c", "3"), ("a", "1")],
            false,
        ),
        ("alpha drops a and b", ALPHA, &[], false),
        (
            "beta forces b",
            BETA,
            &[("b", "4"), ("c", "3"), ("a", "1")],
            true,
        ),
        ("alpha sets b again", ALPHA, &[("b", "5")], false),
    ];
    for (step, manager, entries, force) in steps {
        let mut opts = options(manager);
        opts.force = force;
        t.note(
            step,
            outcome(api.apply_configuration(&data(entries), &opts).await, fields),
        );
    }
    let current = api.get("settings").await.expect("the configmap");
    for manager in [ALPHA, BETA, "nobody"] {
        let owned = ConfigMapApplyConfiguration::extract(&current, manager).expect("extracts");
        t.note(&format!("{manager} extracts"), value(&owned));
    }
    t
}

/// A cluster-scoped object of a group outside the first six generated: alpha creates a
/// PriorityClass, beta takes its description by force and labels it.
async fn priority_class_scenario(client: &Client, ns: &str) -> Transcript {
    let api: Api<PriorityClass> = Api::all(client.clone());
    let mut t = Transcript::default();
    // Cluster-scoped: named after the test's namespace so runs on one server do not meet.
    let name = format!("{ns}-batch");
    let fields = |pc: &PriorityClass| json!({"value": pc.value, "description": pc.description, "labels": pc.metadata.labels});
    let create = PriorityClassApplyConfiguration::new(&name)
        .with_value(1000)
        .with_description("alpha's");
    t.note(
        "alpha creates",
        outcome(
            api.apply_configuration(&create, &options(ALPHA)).await,
            fields,
        ),
    );
    let describe = PriorityClassApplyConfiguration::new(&name).with_description("beta's");
    t.note(
        "beta describes",
        outcome(
            api.apply_configuration(&describe, &options(BETA)).await,
            fields,
        ),
    );
    let describe = describe.with_labels([("team", "b")]);
    let forced = api
        .apply_configuration(&describe, &options(BETA).force())
        .await;
    t.note("beta forces", outcome(forced, fields));
    let current = api.get(&name).await.expect("the priority class");
    for manager in [ALPHA, BETA] {
        let owned = PriorityClassApplyConfiguration::extract(&current, manager).expect("extracts");
        t.note(&format!("{manager} extracts"), value(&owned));
    }
    t
}

async fn widget_scenario(client: &Client, ns: &str) -> Transcript {
    install_crd(client, &Widget::crd(), Duration::from_secs(30))
        .await
        .expect("the Widget CRD installs");
    let api: Api<Widget> = Api::namespaced(client.clone(), ns);
    let mut t = Transcript::default();
    let fields = |w: &Widget| json!({"spec": w.spec, "status": w.status});
    let spec = WidgetSpecApplyConfiguration::default;
    let create =
        WidgetApplyConfiguration::new("w", ns).with_spec(spec().with_replicas(1).with_image("a:1"));
    // The CRD's schema is checked on the merged object: a spec without `image` is refused.
    let partial = WidgetApplyConfiguration::new("p", ns).with_spec(spec().with_replicas(1));
    let refused = api.apply_configuration(&partial, &options(ALPHA)).await;
    let refused = outcome(refused, fields);
    t.note(
        "alpha creates without image: refused",
        json!(refused.get("code")),
    );
    t.note(
        "alpha creates",
        outcome(
            api.apply_configuration(&create, &options(ALPHA)).await,
            fields,
        ),
    );
    let scale =
        WidgetApplyConfiguration::new("w", ns).with_spec(spec().with_replicas(3).with_max_surge(1));
    t.note(
        "beta scales",
        outcome(
            api.apply_configuration(&scale, &options(BETA)).await,
            fields,
        ),
    );
    let forced = api
        .apply_configuration(&scale, &options(BETA).force())
        .await;
    t.note("beta forces", outcome(forced, fields));
    let status = WidgetApplyConfiguration::new("w", ns).with_status(WidgetStatus {
        ready_replicas: Some(2),
    });
    let status = api
        .apply_configuration_status(&status, &options(GAMMA))
        .await;
    t.note("gamma applies status", outcome(status, fields));
    let current = api.get("w").await.expect("the widget");
    for manager in [ALPHA, BETA] {
        let owned = WidgetApplyConfiguration::extract(&current, manager).expect("extracts");
        t.note(&format!("{manager} extracts"), value(&owned));
    }
    let status = WidgetApplyConfiguration::extract_status(&current, GAMMA).expect("extracts");
    t.note_since_1_22("gamma extracts status", value(&status));
    let main = WidgetApplyConfiguration::extract(&current, GAMMA).expect("extracts");
    t.note_since_1_22("gamma extracts", value(&main));
    t
}

/// Runs `scenario` on the embedded server, checks `expect` on its transcript, and compares
/// with the real server's when one is configured.
async fn on_both<F, Fut>(name: &str, scenario: F, expect: impl FnOnce(&[String]))
where
    F: Fn(Client, String) -> Fut,
    Fut: std::future::Future<Output = Transcript>,
{
    let fixture = start().await;
    let ns = fresh_namespace(&fixture.client, name).await;
    let embedded = scenario(fixture.client.clone(), ns.clone()).await.0;
    let embedded: Vec<String> = embedded
        .iter()
        .map(|line| line.replace(&ns, "NS"))
        .collect();
    for line in &embedded {
        eprintln!("embedded {name}: {line}");
    }
    if let Some(real) = real_server().await {
        let version: Value = real
            .request_json(kubeclient::rest::Request::get("/version"))
            .await
            .expect("the real server's version");
        let minor: u32 = version["minor"]
            .as_str()
            .map(|m| m.trim_end_matches('+'))
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        let real_ns = fresh_namespace(&real, name).await;
        let real: Vec<String> = scenario(real, real_ns.clone())
            .await
            .0
            .iter()
            .map(|line| line.replace(&real_ns, "NS"))
            .collect();
        for line in &real {
            eprintln!("real {name}: {line}");
        }
        assert_eq!(embedded.len(), real.len());
        for (at, (ours, theirs)) in embedded.iter().zip(&real).enumerate() {
            if minor < 22 && ours.starts_with(SINCE_1_22) {
                continue;
            }
            assert_eq!(
                ours, theirs,
                "{name}: step {at} differs from the real kube-apiserver"
            );
        }
    }
    let embedded: Vec<String> = embedded
        .iter()
        .map(|line| line.trim_start_matches(SINCE_1_22).to_owned())
        .collect();
    expect(&embedded);
}

fn line<'a>(lines: &'a [String], step: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.starts_with(&format!("{step}: ")))
        .map_or("", |l| &l[step.len() + 2..])
}

fn parsed(lines: &[String], step: &str) -> Value {
    serde_json::from_str(line(lines, step)).expect("a JSON outcome")
}

#[tokio::test]
async fn deployment_two_managers_conflict_force_and_extract() {
    on_both(
        "apply-deploy",
        |c, ns| async move { deployment_scenario(&c, &ns).await },
        |t| {
            assert_eq!(parsed(t, "alpha creates")["ok"]["replicas"], 2);
            let conflict = parsed(t, "beta scales");
            assert_eq!(conflict["code"], 409);
            assert_eq!(conflict["causes"][0]["field"], ".spec.replicas");
            assert_eq!(parsed(t, "beta forces")["ok"]["replicas"], 3);
            assert_eq!(
                parsed(t, "beta adds a sidecar")["ok"]["containers"],
                json!([["app", "nginx:1.27"], ["sidecar", "busybox:1"]])
            );
            let alpha = parsed(t, "alpha extracts");
            assert_eq!(
                alpha["spec"].get("replicas"),
                None,
                "forced away from alpha"
            );
            assert_eq!(
                alpha["spec"]["template"]["spec"]["containers"],
                json!([{"name": "app", "image": "nginx:1.27"}])
            );
            assert_eq!(
                alpha["metadata"],
                json!({"name": "web", "namespace": "NS", "labels": {"team": "a"}})
            );
            let beta = parsed(t, "beta extracts");
            assert_eq!(beta["spec"]["replicas"], 3);
            assert_eq!(
                beta["spec"]["template"]["spec"]["containers"],
                json!([{"name": "sidecar", "image": "busybox:1"}])
            );
            let reapplied = parsed(t, "alpha re-applies its extract");
            assert_eq!(reapplied["ok"]["replicas"], 3);
            assert_eq!(
                reapplied["ok"]["containers"],
                json!([["app", "nginx:1.28"], ["sidecar", "busybox:1"]])
            );
            assert_eq!(
                parsed(t, "alpha drops its label")["ok"]["labels"],
                json!({"tier": "b"})
            );
        },
    )
    .await;
}

#[tokio::test]
async fn service_ports_are_a_list_map_keyed_by_port_and_protocol() {
    on_both(
        "apply-svc",
        |c, ns| async move { service_scenario(&c, &ns).await },
        |t| {
            assert_eq!(
                parsed(t, "beta adds ports")["ok"],
                json!([
                    ["http", 80, "TCP", 8080],
                    ["dns", 53, "UDP", 53],
                    ["http-udp", 80, "UDP", 80]
                ])
            );
            let conflict = parsed(t, "beta retargets 80/TCP");
            assert_eq!(conflict["code"], 409);
            assert_eq!(
                conflict["causes"][0]["field"],
                ".spec.ports[port=80,protocol=\"TCP\"].targetPort"
            );
            // Forcing takes the target port; beta's earlier ports, which it no longer applies
            // and nobody else owns, go.
            assert_eq!(
                parsed(t, "beta forces")["ok"],
                json!([["http", 80, "TCP", 9090]])
            );
            let alpha = parsed(t, "alpha extracts");
            assert_eq!(
                alpha["spec"]["ports"],
                json!([{"name": "http", "port": 80, "protocol": "TCP"}])
            );
            let beta = parsed(t, "beta extracts");
            assert_eq!(
                beta["spec"]["ports"],
                json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 9090}])
            );
        },
    )
    .await;
}

#[tokio::test]
async fn configmap_shared_and_forced_ownership() {
    on_both("apply-cm", |c, ns| async move { configmap_scenario(&c, &ns).await }, |t| {
        assert_eq!(parsed(t, "beta changes b")["code"], 409);
        assert_eq!(parsed(t, "beta sets c and a as it is")["ok"], json!({"a": "1", "b": "2", "c": "3"}));
        // a is shared, so it stays; b was alpha's alone, so it goes.
        assert_eq!(parsed(t, "alpha drops a and b")["ok"], json!({"a": "1", "c": "3"}));
        assert_eq!(parsed(t, "beta forces b")["ok"], json!({"a": "1", "b": "4", "c": "3"}));
        assert_eq!(parsed(t, "alpha sets b again")["code"], 409);
        assert_eq!(parsed(t, "alpha extracts")["data"], Value::Null, "alpha owns no data now");
        assert_eq!(parsed(t, "beta extracts")["data"], json!({"a": "1", "b": "4", "c": "3"}));
        assert_eq!(
            parsed(t, "nobody extracts"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "NS"}})
        );
    })
    .await;
}

#[tokio::test]
async fn cluster_scoped_priority_class_conflict_force_and_extract() {
    on_both(
        "apply-pc",
        |c, ns| async move { priority_class_scenario(&c, &ns).await },
        |t| {
            assert_eq!(
                parsed(t, "alpha creates")["ok"],
                json!({"value": 1000, "description": "alpha's", "labels": null})
            );
            let conflict = parsed(t, "beta describes");
            assert_eq!(conflict["code"], 409);
            assert_eq!(conflict["causes"][0]["field"], ".description");
            assert_eq!(
                parsed(t, "beta forces")["ok"],
                json!({"value": 1000, "description": "beta's", "labels": {"team": "b"}})
            );
            assert_eq!(
                parsed(t, "alpha extracts"),
                json!({
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": "NS-batch"},
                    "value": 1000,
                })
            );
            let beta = parsed(t, "beta extracts");
            assert_eq!(beta["description"], "beta's");
            assert_eq!(beta["metadata"]["labels"], json!({"team": "b"}));
            assert_eq!(beta.get("value"), None);
        },
    )
    .await;
}

#[tokio::test]
async fn custom_resource_apply_configuration_from_the_derive() {
    on_both(
        "apply-cr",
        |c, ns| async move { widget_scenario(&c, &ns).await },
        |t| {
            assert_eq!(line(t, "alpha creates without image: refused"), "422");
            assert_eq!(
                parsed(t, "alpha creates")["ok"]["spec"],
                json!({"replicas": 1, "image": "a:1"})
            );
            let conflict = parsed(t, "beta scales");
            assert_eq!(conflict["code"], 409);
            assert_eq!(conflict["causes"][0]["field"], ".spec.replicas");
            assert_eq!(
                parsed(t, "beta forces")["ok"]["spec"],
                json!({"replicas": 3, "image": "a:1", "maxSurge": 1})
            );
            assert_eq!(
                parsed(t, "gamma applies status")["ok"]["status"],
                json!({"readyReplicas": 2})
            );
            assert_eq!(parsed(t, "alpha extracts")["spec"], json!({"image": "a:1"}));
            assert_eq!(
                parsed(t, "beta extracts")["spec"],
                json!({"replicas": 3, "maxSurge": 1})
            );
            assert_eq!(
                parsed(t, "gamma extracts status")["status"],
                json!({"readyReplicas": 2})
            );
            assert_eq!(
                parsed(t, "gamma extracts").get("status"),
                None,
                "status is owned through the subresource"
            );
        },
    )
    .await;
}

#[tokio::test]
async fn apply_needs_a_name_and_a_field_manager() {
    let fixture = start().await;
    let api: Api<ConfigMap> = Api::namespaced(fixture.client.clone(), "default");
    let unnamed = ConfigMapApplyConfiguration::default();
    let err = api
        .apply_configuration(&unnamed, &options(ALPHA))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidRequest(ref m) if m.contains("name")),
        "{err}"
    );
    let named = ConfigMapApplyConfiguration::new("x", "default");
    let err = api
        .apply_configuration(&named, &ApplyOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidRequest(ref m) if m.contains("field_manager")),
        "{err}"
    );
}

/// A port applied without its `protocol` key is the item keyed by the default, `TCP`, as on
/// kube-apiserver since structured-merge-diff defaults key fields (v1.20 answered 500, so
/// this runs on the embedded server only).
#[tokio::test]
async fn a_port_without_protocol_is_keyed_by_the_default() {
    let fixture = start().await;
    let api: Api<Service> = Api::namespaced(fixture.client.clone(), "default");
    let service = |target: i32| {
        ServiceApplyConfiguration::new("noproto", "default").with_spec(
            ServiceSpecApplyConfiguration::default().with_ports([
                ServicePortApplyConfiguration::default()
                    .with_port(80)
                    .with_target_port(IntOrString::Int(target)),
            ]),
        )
    };
    api.apply_configuration(&service(8080), &options(ALPHA))
        .await
        .expect("applies");
    let again = api
        .apply_configuration(&service(9090), &options(ALPHA))
        .await
        .expect("applies again");
    assert_eq!(service_ports(&again), json!([[null, 80, "TCP", 9090]]));
    let owned = ServiceApplyConfiguration::extract(&again, ALPHA).expect("extracts");
    assert_eq!(
        value(&owned)["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 9090}])
    );
}
