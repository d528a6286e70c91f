use kubeclient_derive::CustomResource;

#[derive(CustomResource)]
#[kubeclient(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    printcolumn(name = "Size", type = "int", json_path = ".spec.size")
)]
struct WidgetSpec {
    size: i32,
}

fn main() {}
