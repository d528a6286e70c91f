//! client-go's `tools/watch` against the embedded server: the retry watcher across a
//! server restart and a 410, and the `until` helpers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{ApiListWatch, Backoff, ListerWatcher, Store};
use kubeclient::machinery::{Object, WatchEvent};
use kubeclient::tools::watch::{
    ConditionFunc, PreconditionFunc, RetryWatcher, RetryWatcherError, UntilError, list_watch_until,
    until, until_with_sync, until_without_retry,
};
use kubeclient::{Api, Client, DeleteParams, ListParams, PostParams, WatchParams};
use kubeclient_apiserver::{ApiServer, Fault};
use tokio_util::sync::CancellationToken;

use crate::support::{WAIT, config_of, start, store_write};

fn configmap(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.meta_mut().name = Some(name.to_owned());
    cm.data = Some(BTreeMap::from([("v".to_owned(), value.to_owned())]));
    cm
}

fn api(client: &Client) -> Api<ConfigMap> {
    Api::namespaced(client.clone(), "default")
}

fn lister_watcher(client: &Client) -> Arc<dyn ListerWatcher<ConfigMap>> {
    Arc::new(ApiListWatch::new(api(client)))
}

/// A short backoff so that retries happen within the test's deadline.
fn quick() -> Backoff {
    Backoff::new(
        Duration::from_millis(20),
        Duration::from_millis(200),
        Duration::from_secs(120),
    )
}

async fn next_event(watcher: &mut RetryWatcher<ConfigMap>) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(WAIT, watcher.next())
        .await
        .expect("an event before the deadline")
        .expect("the watcher has not ended")
        .expect("a retry watcher never yields Err")
}

async fn current_rv(client: &Client) -> String {
    let list = api(client).list(&ListParams::default()).await.unwrap();
    list.metadata.resource_version.unwrap()
}

/// Creates ConfigMap `name`.
async fn create(client: &Client, name: &str) {
    api(client)
        .create(&PostParams::default(), &configmap(name, "1"))
        .await
        .unwrap();
}

/// A condition met by the `Added` event of ConfigMap `name`.
fn added(name: &'static str) -> ConditionFunc<'static, ConfigMap> {
    Box::new(move |event| Ok(matches!(event, WatchEvent::Added(cm) if cm.name() == name)))
}

/// The result of a spawned wait, which must succeed before the deadline.
async fn finished(
    task: tokio::task::JoinHandle<Result<Option<WatchEvent<ConfigMap>>, UntilError>>,
) -> Option<WatchEvent<ConfigMap>> {
    tokio::time::timeout(WAIT, task)
        .await
        .expect("the wait ends before the deadline")
        .expect("the task does not panic")
        .expect("the conditions are met")
}

/// A server, and a retry watcher that has seen the creation of ConfigMap `one`.
async fn watching_one() -> (crate::support::Fixture, RetryWatcher<ConfigMap>) {
    let fixture = start().await;
    let start_rv = current_rv(&fixture.client).await;
    let mut watcher =
        RetryWatcher::with_backoff(&start_rv, lister_watcher(&fixture.client), quick()).unwrap();
    create(&fixture.client, "one").await;
    let WatchEvent::Added(seen) = next_event(&mut watcher).await else {
        panic!("expected the creation of one");
    };
    assert_eq!(seen.name(), "one");
    (fixture, watcher)
}

#[tokio::test]
async fn a_retry_watcher_rejects_an_unresumable_start() {
    let fixture = start().await;
    for rv in ["", "0"] {
        let result = RetryWatcher::new(rv, lister_watcher(&fixture.client));
        assert!(matches!(
            result,
            Err(RetryWatcherError::UnsupportedResourceVersion(_))
        ));
    }
}

#[tokio::test]
async fn a_retry_watcher_resumes_from_its_last_resource_version_across_a_server_restart() {
    let first = ApiServer::builder().start().await.unwrap();
    let address = first.address();
    let client = Client::new(config_of(&first)).await.unwrap();
    let start_rv = current_rv(&client).await;
    let mut watcher =
        RetryWatcher::with_backoff(&start_rv, lister_watcher(&client), quick()).unwrap();

    let created = api(&client)
        .create(&PostParams::default(), &configmap("before", "1"))
        .await
        .unwrap();
    let WatchEvent::Added(seen) = next_event(&mut watcher).await else {
        panic!("expected the creation before the restart");
    };
    assert_eq!(seen.name(), "before");
    let last_rv: u64 = created.resource_version().parse().unwrap();

    first.shutdown().await;
    // The new server continues the revision numbering where the old one stopped, as etcd
    // would after an API server restart; everything before it is history it does not have.
    let second = ApiServer::builder()
        .listen(address)
        .initial_revision(last_rv)
        .start()
        .await
        .unwrap();
    let client = Client::new(config_of(&second)).await.unwrap();
    api(&client)
        .create(&PostParams::default(), &configmap("after", "2"))
        .await
        .unwrap();
    let WatchEvent::Added(seen) = next_event(&mut watcher).await else {
        panic!("expected the creation after the restart");
    };
    assert_eq!(seen.name(), "after");
    assert!(seen.resource_version().parse::<u64>().unwrap() > last_rv);

    watcher.stop();
    tokio::time::timeout(WAIT, watcher.done()).await.unwrap();
    second.shutdown().await;
}

#[tokio::test]
async fn a_retry_watcher_resumes_after_the_server_ends_the_watch() {
    let (fixture, mut watcher) = watching_one().await;
    let client = &fixture.client;
    fixture.server.drop_watches();
    api(client)
        .delete("one", &DeleteParams::default())
        .await
        .unwrap();
    let WatchEvent::Deleted(gone) = next_event(&mut watcher).await else {
        panic!("expected the deletion, delivered once, after the re-watch");
    };
    assert_eq!(gone.name(), "one");
}

#[tokio::test]
async fn a_retry_watcher_surfaces_a_410_and_ends() {
    let (fixture, mut watcher) = watching_one().await;

    // The next watch request is answered with 410 Expired: the watch must not retry.
    fixture.server.faults().fail_next(1, Fault::Expired);
    fixture.server.drop_watches();
    let WatchEvent::Error(status) = next_event(&mut watcher).await else {
        panic!("expected the 410 as an error event");
    };
    assert_eq!(status.code, 410);
    let end = tokio::time::timeout(WAIT, watcher.next()).await.unwrap();
    assert!(end.is_none(), "the stream ends after the 410");
    tokio::time::timeout(WAIT, watcher.done()).await.unwrap();
}

#[tokio::test]
async fn until_without_retry_offers_each_event_to_the_conditions_in_turn() {
    let fixture = start().await;
    let client = &fixture.client;
    let start_rv = current_rv(client).await;
    let watch = api(client)
        .watch(&WatchParams::default(), &start_rv)
        .await
        .unwrap();
    let writer = {
        let api = api(client);
        tokio::spawn(async move {
            api.create(&PostParams::default(), &configmap("a", "1"))
                .await?;
            api.create(&PostParams::default(), &configmap("b", "1"))
                .await?;
            api.delete("a", &DeleteParams::default()).await.map(drop)
        })
    };
    let added_b: ConditionFunc<ConfigMap> = added("b");
    // Met by the same event: conditions are re-checked against the last one.
    let any_added: ConditionFunc<ConfigMap> =
        Box::new(|event| Ok(matches!(event, WatchEvent::Added(_))));
    let deleted_a: ConditionFunc<ConfigMap> =
        Box::new(|event| Ok(matches!(event, WatchEvent::Deleted(cm) if cm.name() == "a")));
    let cancel = CancellationToken::new();
    let last = tokio::time::timeout(
        WAIT,
        until_without_retry(&cancel, watch, vec![added_b, any_added, deleted_a]),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(matches!(last, Some(WatchEvent::Deleted(cm)) if cm.name() == "a"));
    writer.await.unwrap().unwrap();
}

#[tokio::test]
async fn until_without_retry_reports_a_closed_watch_a_failing_condition_and_cancellation() {
    let fixture = start().await;
    let client = &fixture.client;
    let rv = current_rv(client).await;
    let never: fn() -> ConditionFunc<'static, ConfigMap> = || Box::new(|_| Ok(false));

    let watch = api(client)
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap();
    fixture.server.drop_watches();
    let closed = until_without_retry(&CancellationToken::new(), watch, vec![never()]).await;
    assert!(matches!(closed, Err(UntilError::WatchClosed)));

    let watch = api(client)
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let interrupted = until_without_retry(&cancel, watch, vec![never()]).await;
    assert!(matches!(interrupted, Err(UntilError::Interrupted)));

    let watch = api(client)
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap();
    create(client, "x").await;
    let failing: ConditionFunc<ConfigMap> = Box::new(|_| Err("bad object".into()));
    let failed = until_without_retry(&CancellationToken::new(), watch, vec![failing]).await;
    assert!(
        matches!(failed, Err(UntilError::Condition(cause)) if cause.to_string() == "bad object")
    );
}

#[tokio::test]
async fn until_watches_through_a_dropped_watch() {
    let fixture = start().await;
    let client = &fixture.client;
    let rv = current_rv(client).await;
    let cancel = CancellationToken::new();
    let waiting = {
        let lw = lister_watcher(client);
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let gone: ConditionFunc<ConfigMap> = added("late");
            until(&cancel, &rv, lw, vec![gone]).await
        })
    };
    fixture.server.drop_watches();
    create(client, "late").await;
    let last = finished(waiting).await;
    assert!(matches!(last, Some(WatchEvent::Added(cm)) if cm.name() == "late"));
}

#[tokio::test]
async fn list_watch_until_meets_conditions_from_the_list_then_from_the_watch() {
    let fixture = start().await;
    let client = &fixture.client;
    create(client, "listed").await;
    let cancel = CancellationToken::new();
    let listed: ConditionFunc<ConfigMap> = added("listed");
    let only_listed = list_watch_until(&cancel, lister_watcher(client), vec![listed])
        .await
        .unwrap();
    assert!(matches!(only_listed, Some(WatchEvent::Added(cm)) if cm.name() == "listed"));

    let waiting = {
        let lw = lister_watcher(client);
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let listed: ConditionFunc<ConfigMap> = added("listed");
            let modified: ConditionFunc<ConfigMap> = Box::new(|event| {
                Ok(matches!(event, WatchEvent::Modified(cm) if cm.name() == "listed"))
            });
            list_watch_until(&cancel, lw, vec![listed, modified]).await
        })
    };
    // Written after the list or not: a watch from the list's version sees the change.
    let mut changed = configmap("listed", "2");
    let current = api(client).get("listed").await.unwrap();
    changed.meta_mut().resource_version = Some(current.resource_version().to_owned());
    api(client)
        .replace("listed", &PostParams::default(), &changed)
        .await
        .unwrap();
    let last = finished(waiting).await;
    assert!(matches!(last, Some(WatchEvent::Modified(_))));
}

#[tokio::test]
async fn until_with_sync_checks_the_synced_cache_then_survives_a_410() {
    let fixture = start().await;
    let client = &fixture.client;
    create(client, "present").await;
    let cancel = CancellationToken::new();

    let already: PreconditionFunc<ConfigMap> = Box::new(|store: &dyn Store<ConfigMap>| {
        Ok(store.list().iter().any(|cm| cm.name() == "present"))
    });
    let never: ConditionFunc<ConfigMap> = Box::new(|_| Ok(false));
    let done = tokio::time::timeout(
        WAIT,
        until_with_sync(&cancel, lister_watcher(client), Some(already), vec![never]),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(done.is_none(), "the precondition was already met");

    let (synced, was_synced) = tokio::sync::oneshot::channel();
    let waiting = {
        let lw = lister_watcher(client);
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let not_yet: PreconditionFunc<ConfigMap> =
                Box::new(move |store: &dyn Store<ConfigMap>| {
                    let _ = synced.send(());
                    Ok(store.list().iter().any(|cm| cm.name() == "wanted"))
                });
            let wanted: ConditionFunc<ConfigMap> = added("wanted");
            until_with_sync(&cancel, lw, Some(not_yet), vec![wanted]).await
        })
    };
    tokio::time::timeout(WAIT, was_synced)
        .await
        .unwrap()
        .unwrap();
    // Break the informer's watch; its re-watch gets 410, so it must relist to see the
    // object, which is written straight into storage (no request to take the fault).
    fixture.server.faults().fail_next(1, Fault::Expired);
    fixture.server.drop_watches();
    store_write(
        &fixture.server,
        "wanted",
        serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "wanted", "namespace": "default", "uid": "uid-wanted"}}),
    );
    let last = finished(waiting).await;
    assert!(matches!(last, Some(WatchEvent::Added(cm)) if cm.name() == "wanted"));
}
