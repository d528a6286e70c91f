use kubeclient_derive::CustomResource;

#[derive(CustomResource)]
#[kubeclient(group = "example.com", version = "v1", kind = "Widget")]
enum WidgetSpec {
    Small,
    Large,
}

fn main() {}
