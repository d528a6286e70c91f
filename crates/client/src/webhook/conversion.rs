//! [`Convertible`], [`Conversion`] and [`convert_review`]: a CRD's conversion webhook as
//! controller-runtime writes it (`pkg/conversion` and `pkg/webhook/conversion`): one
//! version is the hub, every other version (a spoke) converts to and from it, so n
//! versions need n - 1 pairs of functions, and any version reaches any other through the
//! hub.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ConversionResponse, ConversionReview};

/// Why an object could not be converted: the message the API server reports (as
/// `conversion webhook for <kind> failed: <message>`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConversionError {
    /// What went wrong.
    pub message: String,
}

impl ConversionError {
    /// A conversion error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ConversionError {
            message: message.into(),
        }
    }
}

impl From<String> for ConversionError {
    fn from(message: String) -> Self {
        ConversionError::new(message)
    }
}

impl From<&str> for ConversionError {
    fn from(message: &str) -> Self {
        ConversionError::new(message)
    }
}

/// A spoke version of a custom resource: converts itself to the hub version `Hub` and
/// back (controller-runtime's `conversion.Convertible`). The functions get and give whole
/// objects: keep `metadata` as it is (the API server refuses a conversion that changes
/// more of it than labels and annotations).
///
/// # Examples
///
/// ```
/// use kubeclient::webhook::{ConversionError, Convertible};
///
/// mod v1 {
///     #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
///     #[kubeclient(group = "example.com", version = "v1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub replicas: i32 }
/// }
/// mod v1alpha1 {
///     #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
///     #[kubeclient(group = "example.com", version = "v1alpha1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub size: String }
/// }
///
/// impl Convertible<v1::Widget> for v1alpha1::Widget {
///     fn convert_to(self) -> Result<v1::Widget, ConversionError> {
///         let replicas = self.spec.size.parse().map_err(|_| format!("size {:?} is not a number", self.spec.size))?;
///         Ok(v1::Widget { metadata: self.metadata, spec: v1::WidgetSpec { replicas } })
///     }
///     fn convert_from(hub: v1::Widget) -> Result<Self, ConversionError> {
///         Ok(v1alpha1::Widget { metadata: hub.metadata, spec: v1alpha1::WidgetSpec { size: hub.spec.replicas.to_string() } })
///     }
/// }
/// ```
pub trait Convertible<Hub>: Sized {
    /// This object in the hub version.
    ///
    /// # Errors
    ///
    /// When it has no form in the hub version.
    fn convert_to(self) -> Result<Hub, ConversionError>;

    /// The hub object `hub` in this version.
    ///
    /// # Errors
    ///
    /// When it has no form in this version.
    fn convert_from(hub: Hub) -> Result<Self, ConversionError>;
}

type ToHub<H> = Arc<dyn Fn(Value) -> Result<H, ConversionError> + Send + Sync>;
type FromHub<H> = Arc<dyn Fn(H) -> Result<Value, ConversionError> + Send + Sync>;

/// One version of the kind: how it reaches the hub and comes back from it.
struct Version<H> {
    to_hub: ToHub<H>,
    from_hub: FromHub<H>,
}

/// The versions of one kind a conversion webhook converts between: the hub `H` and its
/// spokes (controller-runtime's scheme of Hub and Convertible types). Serve it with
/// [`WebhookServerBuilder::conversion`](super::WebhookServerBuilder::conversion).
///
/// # Examples
///
/// ```
/// # mod v1 {
/// #     #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #     #[kubeclient(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// #     pub struct WidgetSpec { pub replicas: i32 }
/// # }
/// # mod v1alpha1 {
/// #     #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #     #[kubeclient(group = "example.com", version = "v1alpha1", kind = "Widget", namespaced)]
/// #     pub struct WidgetSpec { pub size: String }
/// # }
/// # use kubeclient::webhook::{ConversionError, Convertible};
/// # impl Convertible<v1::Widget> for v1alpha1::Widget {
/// #     fn convert_to(self) -> Result<v1::Widget, ConversionError> {
/// #         Ok(v1::Widget { metadata: self.metadata, spec: v1::WidgetSpec { replicas: self.spec.size.parse().map_err(|_| "not a number")? } })
/// #     }
/// #     fn convert_from(hub: v1::Widget) -> Result<Self, ConversionError> {
/// #         Ok(v1alpha1::Widget { metadata: hub.metadata, spec: v1alpha1::WidgetSpec { size: hub.spec.replicas.to_string() } })
/// #     }
/// # }
/// use kubeclient::webhook::Conversion;
/// use serde_json::json;
///
/// let conversion = Conversion::<v1::Widget>::hub().spoke::<v1alpha1::Widget>();
/// let old = json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget",
///                  "metadata": {"name": "w"}, "spec": {"size": "3"}});
/// let new = conversion.convert(old, "example.com/v1").unwrap();
/// assert_eq!(new["spec"], json!({"replicas": 3}));
/// assert_eq!(new["apiVersion"], "example.com/v1");
/// ```
pub struct Conversion<H> {
    /// Keyed by `apiVersion`.
    versions: HashMap<String, Version<H>>,
}

impl<H> Conversion<H>
where
    H: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// Converts between `H`, the hub, and the spokes added with [`spoke`](Self::spoke).
    #[must_use]
    pub fn hub() -> Self {
        let mut versions = HashMap::new();
        versions.insert(
            H::API_VERSION.to_owned(),
            Version {
                to_hub: Arc::new(|object| decode::<H>(object)),
                from_hub: Arc::new(|hub| encode::<H>(&hub)),
            },
        );
        Conversion { versions }
    }

    /// Adds the spoke version `S` (of the same kind as the hub).
    #[must_use]
    pub fn spoke<S>(mut self) -> Self
    where
        S: Resource + Convertible<H> + Serialize + DeserializeOwned + 'static,
    {
        self.versions.insert(
            S::API_VERSION.to_owned(),
            Version {
                to_hub: Arc::new(|object| decode::<S>(object)?.convert_to()),
                from_hub: Arc::new(|hub| encode::<S>(&S::convert_from(hub)?)),
            },
        );
        self
    }

    /// The `apiVersion`s it converts between.
    #[must_use]
    pub fn api_versions(&self) -> Vec<&str> {
        let mut versions: Vec<&str> = self.versions.keys().map(String::as_str).collect();
        versions.sort_unstable();
        versions
    }

    /// `object` in `desired_api_version`, through the hub (an object already in it is
    /// returned as it is).
    ///
    /// # Errors
    ///
    /// When the object is not of the hub's kind, either version is not registered, the
    /// object does not decode as its version's type, or a conversion function fails.
    pub fn convert(
        &self,
        object: Value,
        desired_api_version: &str,
    ) -> Result<Value, ConversionError> {
        let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or("");
        let (kind, api_version) = (field("kind").to_owned(), field("apiVersion").to_owned());
        if kind != H::KIND {
            return Err(ConversionError::new(format!(
                "kind {kind:?} is not converted here (this webhook converts {})",
                H::KIND
            )));
        }
        if api_version == desired_api_version {
            return Ok(object);
        }
        let registered = |version: &str| {
            self.versions.get(version).ok_or_else(|| {
                ConversionError::new(format!(
                    "{} {version:?} is not a version this webhook converts (it knows {})",
                    H::KIND,
                    self.api_versions().join(", ")
                ))
            })
        };
        let (source, target) = (registered(&api_version)?, registered(desired_api_version)?);
        let hub = (source.to_hub)(object)?;
        let mut converted = (target.from_hub)(hub)?;
        if let Some(fields) = converted.as_object_mut() {
            fields.insert("apiVersion".to_owned(), desired_api_version.into());
            fields.insert("kind".to_owned(), H::KIND.into());
        }
        Ok(converted)
    }
}

impl<H> std::fmt::Debug for Conversion<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut versions: Vec<&String> = self.versions.keys().collect();
        versions.sort_unstable();
        f.debug_struct("Conversion")
            .field("versions", &versions)
            .finish()
    }
}

fn decode<K: Resource + DeserializeOwned>(object: Value) -> Result<K, ConversionError> {
    serde_json::from_value(object).map_err(|err| {
        ConversionError::new(format!(
            "the object does not decode as {} {}: {err}",
            K::API_VERSION,
            K::KIND
        ))
    })
}

fn encode<K: Resource + Serialize>(object: &K) -> Result<Value, ConversionError> {
    serde_json::to_value(object).map_err(|err| {
        ConversionError::new(format!(
            "the {} {} does not encode: {err}",
            K::API_VERSION,
            K::KIND
        ))
    })
}

/// Answers a conversion webhook's review with `conversion`: every object converted to
/// the desired version, in order, or a `Failure` naming the first object that could not
/// be (controller-runtime's conversion webhook; the API server then fails the request).
/// The answer has the request's `apiVersion` (v1 or v1beta1).
///
/// # Examples
///
/// ```
/// # mod v1 {
/// #     #[derive(kubeclient::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #     #[kubeclient(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// #     pub struct WidgetSpec { pub replicas: i32 }
/// # }
/// use kubeclient::webhook::{Conversion, ConversionReview, convert_review};
/// use serde_json::json;
///
/// let review: ConversionReview = serde_json::from_value(json!({
///     "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
///     "request": {"uid": "1f4e", "desiredAPIVersion": "example.com/v2",
///                 "objects": [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 1}}]},
/// })).unwrap();
/// let answer = convert_review(&Conversion::<v1::Widget>::hub(), review).response.unwrap();
/// assert_eq!(answer.result.status, "Failure"); // v2 is not registered
/// assert_eq!(answer.uid, "1f4e");
/// ```
pub fn convert_review<H>(conversion: &Conversion<H>, review: ConversionReview) -> ConversionReview
where
    H: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    let api_version = if review.api_version.is_empty() {
        "apiextensions.k8s.io/v1".to_owned()
    } else {
        review.api_version
    };
    let Some(request) = review.request else {
        return ConversionReview::answer(
            &api_version,
            ConversionResponse::failure("", "the review has no request"),
        );
    };
    let mut converted = Vec::with_capacity(request.objects.len());
    for (index, object) in request.objects.into_iter().enumerate() {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match conversion.convert(object, &request.desired_api_version) {
            Ok(object) => converted.push(object),
            Err(err) => {
                let message = format!(
                    "converting object {index} ({name:?}) to {}: {err}",
                    request.desired_api_version
                );
                return ConversionReview::answer(
                    &api_version,
                    ConversionResponse::failure(&request.uid, &message),
                );
            }
        }
    }
    ConversionReview::answer(
        &api_version,
        ConversionResponse::success(&request.uid, converted),
    )
}
