use kubeclient_derive::CustomResource;

#[derive(CustomResource)]
#[kubeclient(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    scale(spec_replicas_path = ".spec.size", status_replicas_path = ".status.size")
)]
struct WidgetSpec {
    size: i32,
}

fn main() {}
