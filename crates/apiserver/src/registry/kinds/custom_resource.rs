//! Custom resources (apiextensions-apiserver's `pkg/registry/customresource`): defaults
//! and pruning from their version's structural schema (`structural_schema.rs`); a PUT
//! needs a resourceVersion; a DELETE answers with a Status. Their schema validation runs
//! for every kind in `validate.rs` (`validate_schema.rs`, `schema_formats.rs`), their
//! version conversion in `version_conversion.rs`.

use serde_json::{Map, Value};

use crate::registry::apiextensions::structural_schema;
use crate::registry::strategy::{Strategy, StrategyContext};

/// The strategy of every custom resource.
pub(crate) struct CustomResourceStrategy;

impl Strategy for CustomResourceStrategy {
    fn defaults(&self, context: StrategyContext<'_>, object: &mut Map<String, Value>) {
        default_and_prune(context, object);
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }
}

fn default_and_prune(context: StrategyContext<'_>, object: &mut Map<String, Value>) {
    if let Some(schema) = context.resource.schema.as_deref() {
        structural_schema::default_and_prune(schema, object);
    }
}
