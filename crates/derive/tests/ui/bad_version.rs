use kubeclient_derive::CustomResource;

#[derive(CustomResource)]
#[kubeclient(group = "example.com", version = "1.0", kind = "Widget")]
struct WidgetSpec {
    size: i32,
}

fn main() {}
