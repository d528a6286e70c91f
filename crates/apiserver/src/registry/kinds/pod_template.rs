//! PodTemplates (kube-apiserver's `pkg/registry/core/podtemplate`): their template gets
//! the pod spec defaults; a DELETE answers with the object.

use serde_json::{Map, Value};

use crate::registry::defaults::template;
use crate::registry::strategy::{Strategy, StrategyContext};

/// The PodTemplate strategy.
pub(crate) struct PodTemplateStrategy;

impl Strategy for PodTemplateStrategy {
    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        template(object.get_mut("template"));
    }

    fn return_deleted_object(&self) -> bool {
        true
    }
}
