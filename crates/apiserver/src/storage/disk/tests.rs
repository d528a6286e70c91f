//! The disk backend: the shared suite, restarts, the watch cache's feed, refusals.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kubeclient_machinery::GroupResource;
use serde_json::{Value, json};

use super::{DiskBackend, OBJECTS};
use crate::storage::backend::suite;
use crate::storage::{Backend, BackendError};

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let name = format!("kubeclient-disk-{label}-{}", uuid::Uuid::new_v4().simple());
        TempDir(std::env::temp_dir().join(name))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn configmaps() -> GroupResource {
    GroupResource::new("", "configmaps")
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"}, "data": {"v": value}})
}

#[tokio::test]
async fn the_disk_backend_passes_the_backend_suite() {
    let dirs: std::sync::Mutex<Vec<TempDir>> = std::sync::Mutex::default();
    suite::run("disk", || {
        let dir = TempDir::new("suite");
        let backend = DiskBackend::open(&dir.0).expect("a fresh database");
        dirs.lock().expect("the directories").push(dir);
        async move { Arc::new(backend) as Arc<dyn Backend> }
    })
    .await;
}

#[tokio::test]
async fn a_reopened_database_has_every_object_and_its_revisions_go_on() {
    let dir = TempDir::new("reopen");
    let cms = configmaps();
    let (a, b) = {
        let disk = DiskBackend::open(&dir.0).expect("open");
        let a = disk
            .create(&cms, "ns/a", configmap("a", "1"))
            .await
            .expect("create");
        let b = disk
            .create(&cms, "ns/b", configmap("b", "1"))
            .await
            .expect("create");
        let b = disk
            .update(&cms, "ns/b", configmap("b", "2"), b.rv)
            .await
            .expect("update");
        (a, b)
    };
    let disk = DiskBackend::open(&dir.0).expect("reopen");
    assert_eq!(disk.revision().await.expect("revision"), b.rv);
    let page = disk.list(&cms, Default::default()).await.expect("list");
    let seen: Vec<_> = page
        .items
        .iter()
        .map(|o| (o.name().to_owned(), o.rv))
        .collect();
    assert_eq!(seen, [("a".to_owned(), a.rv), ("b".to_owned(), b.rv)]);
    assert_eq!(page.items[1].value["data"]["v"], "2");
    let c = disk
        .create(&cms, "ns/c", configmap("c", "1"))
        .await
        .expect("create");
    assert!(c.rv > b.rv, "revisions never go back");

    // Older revisions went with the process (the history is in memory): 410.
    let older = disk.watch(&cms, "", a.rv).await;
    assert!(
        matches!(older, Err(BackendError::Expired { .. })),
        "{older:?}"
    );
    let at = crate::storage::ListOptions {
        at: Some(a.rv),
        ..Default::default()
    };
    let older = disk.list(&cms, at).await;
    assert!(
        matches!(older, Err(BackendError::Expired { .. })),
        "{older:?}"
    );
}

#[tokio::test]
async fn everything_pages_at_one_revision_and_its_watch_misses_nothing() {
    let dir = TempDir::new("everything");
    let disk = DiskBackend::open(&dir.0).expect("open");
    let cms = configmaps();
    let deployments = GroupResource::new("apps", "deployments");
    let widgets = GroupResource::new("example.com", "widgets");
    for name in ["a", "b", "c"] {
        disk.create(&cms, &format!("ns/{name}"), configmap(name, "1"))
            .await
            .expect("create");
    }
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"}});
    disk.create(&deployments, "ns/d", deployment)
        .await
        .expect("create");
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    disk.create(&widgets, "w", widget).await.expect("create");

    let first = disk
        .list_everything(None, None, 2)
        .await
        .expect("first page");
    let at = first.revision;
    // Writes between the pages are not in them, and the watch from the page's revision
    // brings them.
    disk.delete(&cms, "ns/b", None).await.expect("delete");
    disk.create(&cms, "ns/e", configmap("e", "1"))
        .await
        .expect("create");
    let mut entries = first.entries;
    let mut next = first.continue_after;
    while let Some(after) = next {
        let page = disk
            .list_everything(Some(at), Some(&after), 2)
            .await
            .expect("a page");
        assert_eq!(page.revision, at);
        entries.extend(page.entries);
        next = page.continue_after;
    }
    let mut seen: Vec<_> = entries
        .iter()
        .map(|e| {
            (
                e.resource.group.clone(),
                e.resource.resource.clone(),
                e.key.clone(),
            )
        })
        .collect();
    seen.sort();
    let expected = [
        ("", "configmaps", "ns/a"),
        ("", "configmaps", "ns/b"),
        ("", "configmaps", "ns/c"),
        ("apps", "deployments", "ns/d"),
        ("example.com", "widgets", "w"),
    ]
    .map(|(g, r, k)| (g.to_owned(), r.to_owned(), k.to_owned()));
    assert_eq!(seen, expected);

    let mut events = disk
        .watch_everything(at)
        .await
        .expect("a watch of everything");
    let mut next_event =
        async || match tokio::time::timeout(Duration::from_secs(30), events.next()).await {
            Ok(Some(Ok(event))) => (event.key, event.object.is_some()),
            other => panic!("no event: {other:?}"),
        };
    assert_eq!(next_event().await, ("ns/b".to_owned(), false));
    assert_eq!(next_event().await, ("ns/e".to_owned(), true));
    disk.create(&cms, "ns/f", configmap("f", "1"))
        .await
        .expect("a live write");
    assert_eq!(next_event().await, ("ns/f".to_owned(), true));
}

#[tokio::test]
async fn a_second_opening_of_the_directory_is_refused_and_names_it() {
    let dir = TempDir::new("locked");
    let _first = DiskBackend::open(&dir.0).expect("open");
    let second = DiskBackend::open(&dir.0).expect_err("the directory is in use");
    let message = second.to_string();
    assert!(matches!(second, BackendError::Config { .. }));
    assert!(message.contains(&dir.0.display().to_string()), "{message}");
    assert!(message.contains("in use by another process"), "{message}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused() {
    let dir = TempDir::new("garbage");
    std::fs::create_dir_all(&dir.0).expect("a directory");
    let garbage: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.0.join(super::FILE_NAME), garbage).expect("garbage");
    let error = DiskBackend::open(&dir.0).expect_err("garbage is no database");
    let message = kubeclient_machinery::ErrorChain(&error).to_string();
    assert!(message.contains(super::FILE_NAME), "{message}");
    assert!(message.contains("corrupted"), "{message}");
}

#[tokio::test]
async fn values_that_do_not_decode_are_skipped_in_lists_and_fail_a_get() {
    let dir = TempDir::new("undecodable");
    let cms = configmaps();
    {
        let disk = DiskBackend::open(&dir.0).expect("open");
        for name in ["a", "b", "c"] {
            disk.create(&cms, &format!("ns/{name}"), configmap(name, "1"))
                .await
                .expect("create");
        }
        let txn = disk.inner.db.begin_write().expect("a write");
        {
            let mut table = txn.open_table(OBJECTS).expect("the objects");
            let broken = super::record::encode(2, b"{not json");
            table
                .insert("/registry/configmaps/ns/b", broken.as_slice())
                .expect("insert");
        }
        txn.commit().expect("commit");
    }
    let disk = DiskBackend::open(&dir.0).expect("reopen");
    let page = disk
        .list(&cms, Default::default())
        .await
        .expect("the list still answers");
    let names: Vec<_> = page.items.iter().map(|o| o.name().to_owned()).collect();
    assert_eq!(names, ["a", "c"]);
    let everything = disk
        .list_everything(None, None, 0)
        .await
        .expect("everything");
    assert_eq!(everything.entries.len(), 2);
    let get = disk.get(&cms, "ns/b").await;
    match get {
        Err(error @ BackendError::Decode { .. }) => {
            assert_eq!(error.status(&cms, "b").code, 500);
            assert!(error.to_string().contains("/registry/configmaps/ns/b"));
        }
        other => panic!("a GET of an undecodable value fails: {other:?}"),
    }
}
