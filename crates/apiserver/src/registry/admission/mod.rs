//! The admission chain of the generic store (kube-apiserver's `plugin/pkg/admission` and
//! `k8s.io/apiserver/pkg/admission/plugin/webhook`): the webhooks of the stored
//! `MutatingWebhookConfiguration`s and `ValidatingWebhookConfiguration`s, called on the
//! writes of requests. Mutating webhooks run before the kind's preparation and
//! validation (their patches applied in order), validating ones after it, on the object
//! as it would be stored.
//!
//! [`attributes`] is what admission knows of a write, [`webhook`] a stored webhook,
//! [`match_resources`] what a webhook or policy names, [`matcher`] whether it is called,
//! [`review`] the `AdmissionReview` sent and the answer's checks, [`dispatcher`] the
//! calls and their outcome.
//!
//! Validating admission policies (`ValidatingAdmissionPolicy` + binding, CEL) run before
//! the validating webhooks, as kube-apiserver orders its plugins: [`policy`] the stored
//! policies and bindings, [`policy_evaluation`] one policy's expressions (compiled once
//! per text by [`policy_programs`]),
//! [`policy_dispatcher`] the matching, params and `validationActions`.

mod attributes;
mod dispatcher;
mod match_resources;
mod matcher;
mod policy;
mod policy_dispatcher;
pub(crate) mod policy_evaluation;
mod policy_programs;
mod review;
mod webhook;

pub(crate) use crate::webhook_client::WebhookPolicy;
pub(crate) use attributes::{Attributes, Operation};
pub(crate) use dispatcher::{admit, validate};
pub(crate) use policy_dispatcher::validate_policies;
