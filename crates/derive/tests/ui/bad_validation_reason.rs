use kubeclient_derive::CustomResource;

#[derive(CustomResource)]
#[kubeclient(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    validation(rule = "self.size > 0", reason = "Invalid")
)]
struct WidgetSpec {
    size: i32,
}

fn main() {}
