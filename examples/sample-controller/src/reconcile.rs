//! The reconcile: behind a finalizer for cleanup (it does not rely on a garbage collector),
//! a Service per Installation owned by it and the status, both written by server-side
//! apply of apply configurations, and an event for each outcome.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use kubeclient::applyconfigurations::core::v1::{
    ServiceApplyConfiguration, ServicePortApplyConfiguration, ServiceSpecApplyConfiguration,
};
use kubeclient::applyconfigurations::meta::v1::OwnerReferenceApplyConfiguration;
use kubeclient::controller::{
    Action, FinalizerError, FinalizerEvent, ReconcileRequest, finalizer, is_controlled_by,
};
use kubeclient::machinery::Object;
use kubeclient::record::{EventRecorder, EventType};
use kubeclient::{Api, ApplyOptions, Client, DeleteParams};

use crate::installation::{
    Installation, InstallationApplyConfiguration, InstallationCondition, InstallationStatus,
};

/// Holds an Installation until its Service is gone.
pub(crate) const FINALIZER: &str = "example.kubeclient.dev/cleanup";

/// What the reconcile needs.
pub(crate) struct Context {
    /// The leader's client.
    pub(crate) client: Client,
    /// Events about Installations.
    pub(crate) recorder: EventRecorder,
}

/// Why a reconcile failed (it is retried with backoff).
#[derive(Debug)]
pub(crate) enum ReconcileError {
    /// A request failed.
    Api(kubeclient::Error),
    /// A Service of that name exists and is not ours (client-go's sample-controller
    /// `ErrResourceExists`).
    NotOwned(String),
}

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReconcileError::Api(_) => write!(f, "a request failed"),
            ReconcileError::NotOwned(name) => write!(
                f,
                "Service {name} already exists and is not managed by an Installation"
            ),
        }
    }
}

impl std::error::Error for ReconcileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReconcileError::Api(err) => Some(err),
            ReconcileError::NotOwned(_) => None,
        }
    }
}

impl From<kubeclient::Error> for ReconcileError {
    fn from(err: kubeclient::Error) -> Self {
        ReconcileError::Api(err)
    }
}

/// The field manager of the controller's writes.
pub(crate) const FIELD_MANAGER: &str = "sample-controller";

/// The Service an Installation wants: the fields this controller owns, applied server-side.
pub(crate) fn desired_service(installation: &Installation) -> ServiceApplyConfiguration {
    let name = installation.name();
    let owner = OwnerReferenceApplyConfiguration::default()
        .with_api_version("example.kubeclient.dev/v1")
        .with_kind("Installation")
        .with_name(name)
        .with_uid(installation.uid())
        .with_controller(true)
        .with_block_owner_deletion(true);
    // The protocol is a key of the ports list-map: stated, since v1.20 has no default for it.
    let port = ServicePortApplyConfiguration::default()
        .with_port(installation.spec.service_port)
        .with_protocol("TCP");
    ServiceApplyConfiguration::new(name, installation.namespace().unwrap_or("default"))
        .with_labels([("app", name)])
        .with_owner_references([owner])
        .with_spec(
            ServiceSpecApplyConfiguration::default()
                .with_selector([("app", name)])
                .with_ports([port]),
        )
}

/// The port of a Service.
pub(crate) fn service_port(service: &Service) -> Option<i32> {
    service
        .spec
        .as_ref()?
        .ports
        .as_ref()?
        .first()
        .map(|p| p.port)
}

/// Reconciles one Installation key behind the finalizer; records an event for the outcome.
pub(crate) async fn reconcile(
    request: ReconcileRequest<Installation>,
    ctx: Arc<Context>,
) -> Result<Action, FinalizerError<ReconcileError>> {
    let Some(installation) = request.object else {
        return Ok(Action::done()); // gone: the finalizer already cleaned up
    };
    let installations: Api<Installation> = Api::namespaced(ctx.client.clone(), &request.namespace);
    let outcome = finalizer(
        &installations,
        FINALIZER,
        installation.clone(),
        |event| async {
            match event {
                FinalizerEvent::Apply(installation) => sync(&ctx, &installation).await,
                FinalizerEvent::Cleanup(installation) => cleanup(&ctx, &installation).await,
            }
        },
    )
    .await;
    match &outcome {
        Ok(_) => {}
        Err(err) => ctx.recorder.event(
            installation.as_ref(),
            EventType::Warning,
            "SyncFailed",
            &kubeclient::machinery::ErrorChain(err).to_string(),
        ),
    }
    outcome
}

/// Deletes the Installation's Service (it may be gone already).
async fn cleanup(ctx: &Context, installation: &Installation) -> Result<Action, ReconcileError> {
    let name = installation.name();
    let services: Api<Service> = Api::namespaced(
        ctx.client.clone(),
        installation.namespace().unwrap_or("default"),
    );
    match services.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(err) if err.is_not_found() => {}
        Err(err) => return Err(err.into()),
    }
    let message = format!("Service {name} deleted with its Installation");
    ctx.recorder
        .event(installation, EventType::Normal, "Synced", &message);
    Ok(Action::done())
}

/// Applies the Service and the status.
async fn sync(ctx: &Context, installation: &Installation) -> Result<Action, ReconcileError> {
    let namespace = installation.namespace().unwrap_or("default");
    let name = installation.name();
    let installations: Api<Installation> = Api::namespaced(ctx.client.clone(), namespace);
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), namespace);
    let current = services.get_opt(name).await?;
    if let Some(current) = &current
        && !is_controlled_by(current, installation)
    {
        return Err(ReconcileError::NotOwned(name.to_owned()));
    }
    let apply = ApplyOptions::new(FIELD_MANAGER).force();
    let applied = services
        .apply_configuration(&desired_service(installation), &apply)
        .await?;
    let action = match current {
        None => "created",
        Some(current) if current.resource_version() != applied.resource_version() => "updated",
        Some(_) => "unchanged",
    };
    let status = InstallationStatus {
        observed_generation: Some(installation.generation()),
        service: Some(name.to_owned()),
        conditions: vec![InstallationCondition {
            type_: "Ready".to_owned(),
            status: "True".to_owned(),
            reason: "ServiceReady".to_owned(),
            message: format!(
                "Service {name} serves port {}",
                installation.spec.service_port
            ),
        }],
    };
    if installation.status.as_ref() != Some(&status) {
        let status = InstallationApplyConfiguration::new(name, namespace).with_status(status);
        installations
            .apply_configuration_status(&status, &apply)
            .await?;
    }
    let message = format!("Installation synced: Service {name} {action}");
    ctx.recorder
        .event(installation, EventType::Normal, "Synced", &message);
    Ok(Action::done())
}
