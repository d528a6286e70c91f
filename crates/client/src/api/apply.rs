//! Server-side apply of typed apply configurations (client-go's typed `Apply` and
//! `ApplyStatus`).

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Api, Patch, PatchParams};
use crate::applyconfigurations::ApplyConfiguration;
use crate::error::{Error, Result};

/// The options of an apply (client-go's `metav1.ApplyOptions`): the field manager, which is
/// required, and whether to take fields other managers own (`force`).
///
/// # Examples
///
/// ```
/// use kubeclient::ApplyOptions;
///
/// let options = ApplyOptions::new("my-controller").force();
/// assert!(options.force && options.field_manager == "my-controller");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct ApplyOptions {
    /// The manager whose fields the configuration states.
    pub field_manager: String,
    /// Take over fields other managers own instead of failing with a conflict.
    pub force: bool,
    /// Do everything but persist.
    pub dry_run: bool,
}

impl ApplyOptions {
    /// Options applying as `field_manager`.
    pub fn new(field_manager: impl Into<String>) -> Self {
        ApplyOptions {
            field_manager: field_manager.into(),
            ..ApplyOptions::default()
        }
    }

    /// Take over conflicting fields.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    fn patch_params(&self) -> PatchParams {
        PatchParams {
            dry_run: self.dry_run,
            field_manager: Some(self.field_manager.clone()),
            force: self.force,
        }
    }
}

impl<K> Api<K>
where
    K: DeserializeOwned + Serialize + Send + 'static,
{
    /// Applies `configuration` server-side as `options.field_manager` and returns the
    /// object (client-go's typed `Apply`): the manager then owns exactly the fields the
    /// configuration sets, and fields it set before but leaves out now are removed unless
    /// another manager also owns them.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: kubeclient::Client) -> kubeclient::Result<()> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kubeclient::applyconfigurations::core::v1::ConfigMapApplyConfiguration;
    /// use kubeclient::{Api, ApplyOptions};
    ///
    /// let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    /// let settings = ConfigMapApplyConfiguration::new("settings", "default").with_data([("mode", "fast")]);
    /// let applied = configmaps.apply_configuration(&settings, &ApplyOptions::new("ops")).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] without a name or a field manager; [`Error::Api`] (409
    /// Conflict naming the fields other managers own, unless `force`; 422 ...).
    #[doc(alias = "Apply")]
    pub async fn apply_configuration<A>(
        &self,
        configuration: &A,
        options: &ApplyOptions,
    ) -> Result<K>
    where
        A: ApplyConfiguration<Object = K>,
    {
        let name = checked_name(configuration, options)?;
        self.patch_at(
            name,
            None,
            &options.patch_params(),
            &Patch::Apply(configuration),
        )
        .await
    }

    /// As [`apply_configuration`](Self::apply_configuration), through the status
    /// subresource (client-go's `ApplyStatus`): only the configuration's `status` counts.
    ///
    /// # Errors
    ///
    /// As [`apply_configuration`](Self::apply_configuration); 404 if the resource has no
    /// status subresource.
    #[doc(alias = "ApplyStatus")]
    pub async fn apply_configuration_status<A>(
        &self,
        configuration: &A,
        options: &ApplyOptions,
    ) -> Result<K>
    where
        A: ApplyConfiguration<Object = K>,
    {
        let name = checked_name(configuration, options)?;
        self.patch_at(
            name,
            Some("status"),
            &options.patch_params(),
            &Patch::Apply(configuration),
        )
        .await
    }
}

/// client-go's two preconditions of `Apply`: a name and a field manager.
fn checked_name<'a, A: ApplyConfiguration>(
    configuration: &'a A,
    options: &ApplyOptions,
) -> Result<&'a str> {
    if options.field_manager.is_empty() {
        return Err(Error::InvalidRequest(
            "ApplyOptions.field_manager is required for apply".to_owned(),
        ));
    }
    match configuration.name() {
        Some(name) if !name.is_empty() => Ok(name),
        _ => Err(Error::InvalidRequest(
            "the apply configuration's metadata.name must be provided to apply".to_owned(),
        )),
    }
}
