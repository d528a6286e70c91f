//! `util::retry` against the embedded server: a read-modify-write that lost a race is
//! read and written again; one that always loses gives up with the conflict.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::util::retry::{RetryBackoff, retry_on_conflict};
use kubeclient::{Api, PostParams};
use kubeclient_machinery::Object;

use crate::support::start;

async fn counter(api: &Api<ConfigMap>) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.meta_mut().name = Some("counter".into());
    cm.data = Some(BTreeMap::new());
    api.create(&PostParams::default(), &cm).await.unwrap()
}

fn with(mut cm: ConfigMap, key: &str, value: &str) -> ConfigMap {
    cm.data
        .get_or_insert_default()
        .insert(key.to_owned(), value.to_owned());
    cm
}

#[tokio::test]
async fn a_write_that_lost_a_race_is_read_and_written_again() {
    let f = start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    counter(&api).await;
    let attempts = AtomicUsize::new(0);
    let written = retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || async {
        let attempt = attempts.fetch_add(1, Ordering::SeqCst);
        let read = api.get("counter").await?;
        if attempt == 0 {
            // Another writer changes the object between our read and our write.
            let other = with(read.clone(), "by", "other");
            api.replace("counter", &PostParams::default(), &other)
                .await?;
        }
        api.replace(
            "counter",
            &PostParams::default(),
            &with(read, "mine", "yes"),
        )
        .await
    })
    .await
    .unwrap();
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        2,
        "one conflict, one retry"
    );
    let data = written.data.unwrap_or_default();
    assert_eq!(
        data.get("by").map(String::as_str),
        Some("other"),
        "{data:?}"
    );
    assert_eq!(
        data.get("mine").map(String::as_str),
        Some("yes"),
        "{data:?}"
    );
}

#[tokio::test]
async fn a_write_that_always_loses_gives_up_with_the_conflict() {
    let f = start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let stale = counter(&api).await;
    api.replace(
        "counter",
        &PostParams::default(),
        &with(stale.clone(), "k", "v"),
    )
    .await
    .unwrap();
    let attempts = AtomicUsize::new(0);
    let err = retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || {
        attempts.fetch_add(1, Ordering::SeqCst);
        // Always the resourceVersion of the first read.
        let stale = with(stale.clone(), "mine", "yes");
        let api = api.clone();
        async move { api.replace("counter", &PostParams::default(), &stale).await }
    })
    .await
    .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        5,
        "DEFAULT_RETRY's five attempts"
    );
    let mut again = ConfigMap::default();
    again.meta_mut().name = Some("counter".into());
    let taken = api
        .create(&PostParams::default(), &again)
        .await
        .unwrap_err();
    assert!(
        taken.api().is_some_and(|e| e.is_already_exists()) && !taken.is_conflict(),
        "a taken name is AlreadyExists, not a conflict: {taken}"
    );
}
