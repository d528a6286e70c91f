//! The scale client (client-go's `k8s.io/client-go/scale`): read and write the `scale`
//! subresource of any resource by its [`GroupResource`](kubeclient_machinery::GroupResource),
//! as `kubectl scale` and the horizontal pod autoscaler do.
//!
//! The resource's preferred version comes from discovery's REST mapper, and the kind of
//! its scale subresource from the server's resource list for that version
//! ([`ScaleKindResolver`]): `autoscaling/v1` `Scale` for every resource of current
//! servers, custom resources included.

mod scale_client;
mod scale_kind_resolver;

pub use scale_client::{ScaleClient, ScaleError};
pub use scale_kind_resolver::ScaleKindResolver;
