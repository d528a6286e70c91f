//! The whole server over the disk backend (`ApiServerBuilder::data_dir`, `kubeclient serve
//! --data-dir`): objects survive a restart and resourceVersions keep growing, a watch
//! resumes across a restart (or gets 410 and relists), a second server on the same
//! directory is refused naming it, and a stored value that does not decode is skipped in
//! lists and answers 500 to a GET.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kubeclient_apiserver::{ApiServer, StartError};
use kubeclient_machinery::ErrorChain;
use serde_json::{Value, json};

use crate::support::{TestServer, describe};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A fresh data directory, removed when dropped.
struct DataDir(PathBuf);

impl DataDir {
    fn new(label: &str) -> Self {
        let name = format!(
            "kubeclient-it-disk-{label}-{}",
            uuid::Uuid::new_v4().simple()
        );
        DataDir(std::env::temp_dir().join(name))
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server on `dir`. A server shut down in this process closes its database on the
/// storage thread it stops: a restart waits (at most 10 s) for the lock to go.
async fn server_on(dir: &Path) -> TestServer {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let started = ApiServer::builder().data_dir(dir).start().await;
        match started {
            Ok(server) => return TestServer::over(server),
            Err(error)
                if ErrorChain(&error)
                    .to_string()
                    .contains("in use by another process")
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!(
                "the server starts on {}: {}",
                dir.display(),
                ErrorChain(&error)
            ),
        }
    }
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}})
}

fn rv(reply: &Value) -> u64 {
    reply["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("a numeric resourceVersion: {reply}"))
}

async fn create(server: &TestServer, name: &str, value: &str) -> Value {
    let created = server.post(CONFIGMAPS, &configmap(name, value)).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    created.json()
}

#[tokio::test]
async fn objects_survive_a_restart_and_resource_versions_keep_growing() {
    let dir = DataDir::new("restart");
    let first = server_on(&dir.0).await;
    let created = create(&first, "kept", "1").await;
    let namespace = first
        .post("/api/v1/namespaces", &json!({"metadata": {"name": "team"}}))
        .await;
    assert_eq!(namespace.status, 201);
    let before = rv(&first.get(CONFIGMAPS).await.json());
    first.server.shutdown().await;

    let second = server_on(&dir.0).await;
    let read = second.get(&format!("{CONFIGMAPS}/kept")).await;
    assert_eq!(read.status, 200, "{}", String::from_utf8_lossy(&read.body));
    let read = read.json();
    assert_eq!(read["data"], json!({"k": "1"}));
    assert_eq!(read["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(rv(&read), rv(&created));
    assert_eq!(second.get("/api/v1/namespaces/team").await.status, 200);
    assert_eq!(
        second
            .post(CONFIGMAPS, &configmap("kept", "2"))
            .await
            .status,
        409
    );
    let list = second.get(CONFIGMAPS).await.json();
    assert!(
        rv(&list) >= before,
        "the list's revision never goes back: {list}"
    );
    let mut update = read.clone();
    update["data"] = json!({"k": "2"});
    let updated = second.put(&format!("{CONFIGMAPS}/kept"), &update).await;
    assert_eq!(
        updated.status,
        200,
        "{}",
        String::from_utf8_lossy(&updated.body)
    );
    assert!(
        rv(&updated.json()) > before,
        "writes after the restart go on from the stored revision"
    );
    second.server.shutdown().await;

    let third = server_on(&dir.0).await;
    let read = third.get(&format!("{CONFIGMAPS}/kept")).await.json();
    assert_eq!(
        (read["data"].clone(), rv(&read)),
        (json!({"k": "2"}), rv(&updated.json()))
    );
}

#[tokio::test]
async fn a_watch_resumes_after_a_restart_or_gets_410() {
    let dir = DataDir::new("watch");
    let first = server_on(&dir.0).await;
    let old = rv(&create(&first, "a", "1").await);
    create(&first, "b", "1").await;
    let last = rv(&first.get(CONFIGMAPS).await.json());
    first.server.shutdown().await;

    let second = server_on(&dir.0).await;
    // From the last revision the client saw: the watch goes on with the new writes.
    let mut resumed = second
        .watch(&format!("{CONFIGMAPS}?watch=true&resourceVersion={last}"))
        .await;
    let c = rv(&create(&second, "c", "1").await);
    let event = resumed.next().await.expect("the resumed watch stays open");
    assert_eq!(describe(&event), ("ADDED".to_owned(), "c".to_owned()));
    assert_eq!(rv(&event["object"]), c);
    assert!(c > last);
    // From before the restart: the history went with the process, 410 (the client relists).
    let mut stale = second
        .watch(&format!("{CONFIGMAPS}?watch=true&resourceVersion={old}"))
        .await;
    let error = stale.next().await.expect("an ERROR event");
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"].as_i64(), Some(410), "{error}");
}

#[tokio::test]
async fn a_second_server_on_the_same_directory_is_refused_naming_it() {
    let dir = DataDir::new("locked");
    let first = server_on(&dir.0).await;
    let second = tokio::time::timeout(
        Duration::from_secs(30),
        ApiServer::builder().data_dir(&dir.0).start(),
    )
    .await
    .expect("the start gives up without hanging");
    let error = second.expect_err("one process per directory");
    assert!(matches!(error, StartError::Storage(_)), "{error:?}");
    let message = ErrorChain(&error).to_string();
    assert!(message.contains(&dir.0.display().to_string()), "{message}");
    assert!(message.contains("in use by another process"), "{message}");
    // The first one is unharmed.
    create(&first, "still", "1").await;
}

#[tokio::test]
async fn a_value_that_does_not_decode_is_skipped_in_lists_and_a_get_answers_500() {
    let dir = DataDir::new("undecodable");
    let first = server_on(&dir.0).await;
    for name in ["a", "b", "c"] {
        create(&first, name, "1").await;
    }
    first.server.shutdown().await;
    corrupt(&dir.0, "/registry/configmaps/default/b").await;

    let second = server_on(&dir.0).await;
    let list = second.get(CONFIGMAPS).await;
    assert_eq!(list.status, 200, "{}", String::from_utf8_lossy(&list.body));
    let names: Vec<_> = list.json()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(second.get(&format!("{CONFIGMAPS}/a")).await.status, 200);
    // As kube-apiserver: a GET of b answers 500, naming its key; the rest goes on.
    let get = second.get(&format!("{CONFIGMAPS}/b")).await;
    assert_eq!(get.status, 500, "{}", String::from_utf8_lossy(&get.body));
    let message = get.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.contains("/registry/configmaps/default/b"),
        "{message}"
    );
    assert_eq!(second.get(&format!("{CONFIGMAPS}/none")).await.status, 404);
    create(&second, "d", "1").await;
}

/// Replaces the value under `key` in the database of `dir` with bytes that are no JSON
/// (the record's layout: the revision, 8 bytes little endian, then JSON).
async fn corrupt(dir: &Path, key: &str) {
    let file = dir.join("kubeclient.redb");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let db = loop {
        match redb::Database::open(&file) {
            Ok(db) => break db,
            Err(redb::DatabaseError::DatabaseAlreadyOpen)
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("the database opens: {error}"),
        }
    };
    let table: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("objects");
    let txn = db.begin_write().expect("a write");
    {
        let mut objects = txn.open_table(table).expect("the objects");
        let mut broken = 2u64.to_le_bytes().to_vec();
        broken.extend_from_slice(b"{\"apiVersion\": \"v1\", \"kind\": ");
        objects.insert(key, broken.as_slice()).expect("insert");
    }
    txn.commit().expect("commit");
}
