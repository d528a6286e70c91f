use kubeclient_derive::CustomResource;

#[derive(CustomResource)]
#[kubeclient(group = "Widgets", version = "v1", kind = "Widget")]
struct WidgetSpec {
    size: i32,
}

fn main() {}
