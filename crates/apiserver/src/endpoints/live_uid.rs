//! [`live_uid`]: the uid a bound token's object has in storage now, which the token's
//! own must match (kube-apiserver's service-account token authenticator and
//! TokenReview check it).

use kubeclient_machinery::GroupResource;
use serde_json::Value;

use crate::object::store_key;
use crate::state::State;

/// The uid of the stored ServiceAccount, Pod or Secret a token is bound to
/// (`kind`, `namespace`, `name`), if it exists.
pub(crate) fn live_uid(state: &State) -> impl Fn(&str, &str, &str) -> Option<String> + '_ {
    move |kind, namespace, name| {
        let plural = match kind {
            "ServiceAccount" => "serviceaccounts",
            "Pod" => "pods",
            "Secret" => "secrets",
            _ => return None,
        };
        let stored = state.store.get(
            &GroupResource::new("", plural),
            &store_key(Some(namespace), name),
        )?;
        stored
            .value
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}
