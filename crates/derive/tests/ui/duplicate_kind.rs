use kubeclient_derive::CustomResource;

#[derive(CustomResource)]
#[kubeclient(group = "example.com", version = "v1", kind = "Widget", kind = "Gadget")]
struct WidgetSpec {
    size: i32,
}

fn main() {}
