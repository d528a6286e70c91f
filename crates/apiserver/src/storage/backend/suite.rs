//! The one test suite every [`Backend`] passes: [`run`] calls each case with a fresh
//! backend from the factory. The cases state the seam's contract (see the trait's
//! invariants) in scenarios.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use kubeclient_machinery::GroupResource;
use serde_json::{Value, json};

use super::super::{ChangeKind, StoredObject};
use super::{Backend, BackendError, ChangeStream, ListOptions};

type Case = fn(Arc<dyn Backend>) -> BoxFuture<'static, ()>;

const CASES: [(&str, Case); 7] = [
    ("create_and_get", |b| create_and_get(b).boxed()),
    ("updates_are_conditional", |b| {
        updates_are_conditional(b).boxed()
    }),
    ("deletes_are_conditional", |b| {
        deletes_are_conditional(b).boxed()
    }),
    ("lists_page_at_one_revision", |b| {
        lists_page_at_one_revision(b).boxed()
    }),
    ("lists_read_older_revisions", |b| {
        lists_read_older_revisions(b).boxed()
    }),
    ("watches_replay_then_follow", |b| {
        watches_replay_then_follow(b).boxed()
    }),
    ("compaction_expires_old_revisions", |b| {
        compaction_expires_old_revisions(b).boxed()
    }),
];

/// Runs every case against a fresh backend from `factory`; `name` labels the output.
pub(crate) async fn run<F, Fut>(name: &str, mut factory: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Arc<dyn Backend>>,
{
    for (case, test) in CASES {
        eprintln!("{name}: {case}");
        test(factory().await).await;
    }
}

fn configmaps() -> GroupResource {
    GroupResource::new("", "configmaps")
}

fn configmap(key: &str, value: &str) -> Value {
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}, "data": {"v": value}})
}

fn data(object: &StoredObject) -> &str {
    object.value["data"]["v"].as_str().unwrap_or("<none>")
}

fn keys(items: &[Arc<StoredObject>]) -> Vec<String> {
    items
        .iter()
        .map(|o| format!("{}/{}", o.namespace(), o.name()))
        .collect()
}

/// The next change, failing the test when none comes (a hang guard, not a timing check).
async fn next(stream: &mut ChangeStream) -> Arc<super::super::Change> {
    match tokio::time::timeout(Duration::from_secs(30), stream.next()).await {
        Ok(Some(Ok(change))) => change,
        Ok(Some(Err(error))) => panic!("the watch failed: {error}"),
        Ok(None) => panic!("the watch ended"),
        Err(_) => panic!("no change within 30 s"),
    }
}

async fn create_and_get(backend: Arc<dyn Backend>) {
    let cms = configmaps();
    let before = backend.revision().await.expect("revision");
    let a = backend
        .create(&cms, "default/a", configmap("default/a", "1"))
        .await
        .expect("create");
    assert!(a.rv > before, "a write takes a new revision");
    assert_eq!(
        a.value["metadata"]["resourceVersion"],
        json!(a.rv.to_string())
    );
    assert_eq!(backend.revision().await.expect("revision"), a.rv);
    let got = backend.get(&cms, "default/a").await.expect("get");
    let got = got.expect("the object is stored");
    assert_eq!((got.rv, data(&got)), (a.rv, "1"));
    assert_eq!(got.bytes, a.bytes, "a read gives what the write returned");

    let again = backend
        .create(&cms, "default/a", configmap("default/a", "2"))
        .await;
    assert!(
        matches!(again, Err(BackendError::AlreadyExists { .. })),
        "{again:?}"
    );
    assert!(backend.get(&cms, "default/b").await.expect("get").is_none());
    let secrets = GroupResource::new("", "secrets");
    let other = backend.get(&secrets, "default/a").await.expect("get");
    assert!(other.is_none(), "resources do not share keys");
}

async fn updates_are_conditional(backend: Arc<dyn Backend>) {
    let cms = configmaps();
    let a = backend
        .create(&cms, "default/a", configmap("default/a", "1"))
        .await
        .expect("create");
    let b = backend
        .update(&cms, "default/a", configmap("default/a", "2"), a.rv)
        .await
        .expect("update at the current revision");
    assert!(b.rv > a.rv);
    let stored = backend.get(&cms, "default/a").await.expect("get");
    assert_eq!(stored.as_deref().map(data), Some("2"));

    let stale = backend
        .update(&cms, "default/a", configmap("default/a", "3"), a.rv)
        .await;
    match stale {
        Err(BackendError::Conflict {
            expected, found, ..
        }) => assert_eq!((expected, found), (a.rv, b.rv)),
        other => panic!("a stale update must conflict: {other:?}"),
    }

    let same = backend
        .update(&cms, "default/a", configmap("default/a", "2"), b.rv)
        .await
        .expect("a no-op update");
    assert_eq!(same.rv, b.rv, "a no-op update keeps the revision");
    assert_eq!(backend.revision().await.expect("revision"), b.rv);

    let missing = backend
        .update(&cms, "default/none", configmap("default/none", "1"), b.rv)
        .await;
    assert!(
        matches!(missing, Err(BackendError::NotFound { .. })),
        "{missing:?}"
    );
}

async fn deletes_are_conditional(backend: Arc<dyn Backend>) {
    let cms = configmaps();
    let a = backend
        .create(&cms, "default/a", configmap("default/a", "1"))
        .await
        .expect("create");
    let stale = backend.delete(&cms, "default/a", Some(a.rv + 1000)).await;
    assert!(
        matches!(stale, Err(BackendError::Conflict { .. })),
        "{stale:?}"
    );
    let deleted = backend
        .delete(&cms, "default/a", Some(a.rv))
        .await
        .expect("delete at the current revision");
    assert_eq!((deleted.rv, data(&deleted)), (a.rv, "1"));
    assert!(backend.get(&cms, "default/a").await.expect("get").is_none());
    assert!(backend.revision().await.expect("revision") > a.rv);
    let again = backend.delete(&cms, "default/a", None).await;
    assert!(
        matches!(again, Err(BackendError::NotFound { .. })),
        "{again:?}"
    );
    backend
        .create(&cms, "default/a", configmap("default/a", "2"))
        .await
        .expect("the key is free again");
    let deleted = backend
        .delete(&cms, "default/a", None)
        .await
        .expect("an unconditional delete");
    assert_eq!(data(&deleted), "2");
}

async fn lists_page_at_one_revision(backend: Arc<dyn Backend>) {
    let cms = configmaps();
    for key in ["a/1", "a/2", "a/3", "a/4", "a/5", "b/1", "b/2"] {
        backend
            .create(&cms, key, configmap(key, key))
            .await
            .expect("create");
    }
    let page = |prefix, at, start_after, limit| ListOptions {
        prefix,
        at,
        start_after,
        limit,
    };
    let first = backend
        .list(&cms, page("a/", None, None, 2))
        .await
        .expect("first page");
    assert_eq!(keys(&first.items), ["a/1", "a/2"]);
    assert_eq!(first.continue_after.as_deref(), Some("a/2"));
    assert_eq!(first.remaining, 3);
    assert_eq!(first.revision, backend.revision().await.expect("revision"));

    backend
        .create(&cms, "a/6", configmap("a/6", "late"))
        .await
        .expect("a write between pages");
    let second = backend
        .list(&cms, page("a/", Some(first.revision), Some("a/2"), 2))
        .await
        .expect("second page");
    assert_eq!(keys(&second.items), ["a/3", "a/4"]);
    assert_eq!(second.continue_after.as_deref(), Some("a/4"));
    assert_eq!((second.remaining, second.revision), (1, first.revision));
    let last = backend
        .list(&cms, page("a/", Some(first.revision), Some("a/4"), 2))
        .await
        .expect("last page");
    assert_eq!(
        keys(&last.items),
        ["a/5"],
        "the later write is not in the list"
    );
    assert_eq!((last.continue_after, last.remaining), (None, 0));

    let all = backend
        .list(&cms, page("", None, None, 0))
        .await
        .expect("everything");
    let expected = ["a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "b/1", "b/2"];
    assert_eq!(keys(&all.items), expected);
    assert_eq!(all.continue_after, None);
}

async fn lists_read_older_revisions(backend: Arc<dyn Backend>) {
    let cms = configmaps();
    let a = backend
        .create(&cms, "default/a", configmap("default/a", "1"))
        .await
        .expect("create");
    let b = backend
        .update(&cms, "default/a", configmap("default/a", "2"), a.rv)
        .await
        .expect("update");
    backend
        .delete(&cms, "default/a", None)
        .await
        .expect("delete");
    let at = |rv| ListOptions {
        at: Some(rv),
        ..ListOptions::default()
    };
    let then = backend.list(&cms, at(a.rv)).await.expect("list at a");
    assert_eq!(then.revision, a.rv);
    let seen: Vec<_> = then.items.iter().map(|o| (o.rv, data(o))).collect();
    assert_eq!(seen, [(a.rv, "1")]);
    let later = backend.list(&cms, at(b.rv)).await.expect("list at b");
    let seen: Vec<_> = later.items.iter().map(|o| (o.rv, data(o))).collect();
    assert_eq!(seen, [(b.rv, "2")]);
    let now = backend
        .list(&cms, ListOptions::default())
        .await
        .expect("list now");
    assert!(now.items.is_empty());

    let current = backend.revision().await.expect("revision");
    let future = backend.list(&cms, at(current + 1000)).await;
    assert!(
        matches!(future, Err(BackendError::TooLarge { .. })),
        "{future:?}"
    );
}

async fn watches_replay_then_follow(backend: Arc<dyn Backend>) {
    let cms = configmaps();
    let start = backend.revision().await.expect("revision");
    let a = backend
        .create(&cms, "default/a", configmap("default/a", "1"))
        .await
        .expect("create");
    let a2 = backend
        .update(&cms, "default/a", configmap("default/a", "2"), a.rv)
        .await
        .expect("update");
    backend
        .create(&cms, "other/b", configmap("other/b", "1"))
        .await
        .expect("create elsewhere");
    backend
        .delete(&cms, "default/a", None)
        .await
        .expect("delete");

    let mut watch = backend
        .watch(&cms, "default/", start)
        .await
        .expect("watch from the start");
    let created = next(&mut watch).await;
    assert_eq!(
        (created.kind, created.rv, created.key.as_str()),
        (ChangeKind::Created, a.rv, "default/a")
    );
    assert!(created.prev.is_none());
    let updated = next(&mut watch).await;
    assert_eq!((updated.kind, updated.rv), (ChangeKind::Updated, a2.rv));
    assert_eq!(updated.prev.as_deref().map(data), Some("1"));
    assert_eq!(updated.new.as_deref().map(data), Some("2"));
    let deleted = next(&mut watch).await;
    assert_eq!(deleted.kind, ChangeKind::Deleted);
    assert!(deleted.rv > a2.rv);
    assert_eq!(
        deleted.prev.as_deref().map(|o| (o.rv, data(o))),
        Some((a2.rv, "2"))
    );
    assert!(deleted.new.is_none());

    let c = backend
        .create(&cms, "default/c", configmap("default/c", "1"))
        .await
        .expect("a live write");
    let live = next(&mut watch).await;
    assert_eq!(
        (live.kind, live.rv, live.key.as_str()),
        (ChangeKind::Created, c.rv, "default/c")
    );

    let mut everything = backend
        .watch(&cms, "", a2.rv)
        .await
        .expect("watch from the update");
    let keys: Vec<_> = [
        next(&mut everything).await,
        next(&mut everything).await,
        next(&mut everything).await,
    ]
    .iter()
    .map(|c| (c.kind, c.key.clone()))
    .collect();
    assert_eq!(
        keys,
        [
            (ChangeKind::Created, "other/b".to_owned()),
            (ChangeKind::Deleted, "default/a".to_owned()),
            (ChangeKind::Created, "default/c".to_owned()),
        ]
    );
}

async fn compaction_expires_old_revisions(backend: Arc<dyn Backend>) {
    let cms = configmaps();
    let a = backend
        .create(&cms, "default/a", configmap("default/a", "1"))
        .await
        .expect("create");
    let b = backend
        .update(&cms, "default/a", configmap("default/a", "2"), a.rv)
        .await
        .expect("update");
    let c = backend
        .update(&cms, "default/a", configmap("default/a", "3"), b.rv)
        .await
        .expect("update");
    let compacted = backend.compact().await.expect("compact");
    assert!(compacted >= c.rv);

    let watch = backend.watch(&cms, "", a.rv).await;
    assert!(
        matches!(watch, Err(BackendError::Expired { requested, .. }) if requested == a.rv),
        "{watch:?}"
    );
    let options = ListOptions {
        at: Some(a.rv),
        ..ListOptions::default()
    };
    let list = backend.list(&cms, options).await;
    assert!(
        matches!(list, Err(BackendError::Expired { .. })),
        "{list:?}"
    );

    let mut watch = backend
        .watch(&cms, "", compacted)
        .await
        .expect("a watch from the compacted revision");
    let d = backend
        .update(&cms, "default/a", configmap("default/a", "4"), c.rv)
        .await
        .expect("update");
    let change = next(&mut watch).await;
    assert_eq!((change.rv, change.kind), (d.rv, ChangeKind::Updated));
    assert_eq!(change.prev.as_deref().map(data), Some("3"));
}
