//! [`DiskBackend`]: objects in one file on disk, for a single server process
//! (`kubeclient serve --data-dir`). The file is a [redb](https://docs.rs/redb) database, an
//! embedded ACID key-value store: every write is one transaction that checks the key's
//! revision, stores the object and the new global revision together, and is synced to
//! disk before it is answered, so an acknowledged write survives a crash (`kill -9`, a
//! power cut) and revisions never go back across restarts. redb locks the file: a second
//! process on the same directory is refused.
//!
//! Objects are stored under kube-apiserver's etcd keys (`/registry/configmaps/ns/name`,
//! see the shared `keys` module) as their revision and JSON (see [`record`]). The file
//! holds the latest state; the latest changes are also kept in memory ([`history`]) to
//! serve lists at older revisions, continued pages, and watches from older revisions
//! ([`watchers`]); what is older is compacted (410 Gone), and so is everything before a
//! restart.

mod history;
mod record;
#[cfg(test)]
mod tests;
mod watchers;

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::FutureExt;
use kubeclient_machinery::{ErrorChain, GroupResource};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::Value;

use super::{
    Backend, BackendError, BackendFuture, Change, ChangeKind, ChangeStream, Entry, EventStream,
    Everything, ListOptions, ListPage, StoredObject, keys,
};
use history::{History, Record};
use watchers::Watchers;

/// The objects: full key -> [`record`].
const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
/// Facts about the whole store: [`REVISION`].
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// The revision of the last write, in [`META`].
const REVISION: &str = "revision";
/// The prefix of every key, as kube-apiserver's default `--etcd-prefix`.
const PREFIX: &str = "/registry";
/// The database's file in the data directory.
const FILE_NAME: &str = "kubeclient.redb";
/// How many changes the in-memory history keeps by default.
const DEFAULT_HISTORY: usize = 10_000;

/// A [`Backend`] in a file of a data directory, for one process.
///
/// ```
/// use kubeclient_apiserver::storage::{Backend, DiskBackend};
/// use kubeclient_machinery::GroupResource;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = std::env::temp_dir().join(format!("kubeclient-doc-{}", std::process::id()));
/// let configmaps = GroupResource::new("", "configmaps");
/// let written = {
///     let disk = DiskBackend::open(&dir)?;
///     let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
///         "metadata": {"name": "cfg", "namespace": "default"}});
///     disk.create(&configmaps, "default/cfg", cm).await?.rv
/// };
/// // Reopened (after a restart): the object is there, at the revision it was written at.
/// let disk = DiskBackend::open(&dir)?;
/// let stored = disk.get(&configmaps, "default/cfg").await?;
/// assert_eq!(stored.map(|o| o.rv), Some(written));
/// # drop(disk);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), kubeclient_apiserver::storage::BackendError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct DiskBackend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for DiskBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskBackend")
            .field("file", &self.inner.file)
            .finish_non_exhaustive()
    }
}

struct Inner {
    file: PathBuf,
    db: Database,
    /// Writes commit, and watches and reads register, under this lock.
    state: Mutex<State>,
}

/// What the lock guards.
///
/// Invariant: `revision` is the revision stored in the file (the last committed write's),
/// and `history` ends with that write.
struct State {
    revision: u64,
    history: History,
    watchers: Watchers,
}

/// What a conditional write decided about the stored record (`None`: no key).
enum Step {
    /// Store this object (as `record::json` gave it).
    Put(Value, Vec<u8>),
    Delete,
    /// Nothing changes: answer the stored object.
    Keep,
}

impl DiskBackend {
    /// Opens (creating it and the directory when missing) the database in `dir`, with the
    /// default history (the latest 10 000 changes, at most 256 MiB of objects).
    ///
    /// # Errors
    ///
    /// [`BackendError::Config`], naming the directory, when it cannot be created, when
    /// another process has it open, or when its file is not a database (or is corrupted).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, BackendError> {
        Self::open_with_history(dir, DEFAULT_HISTORY)
    }

    /// [`open`](Self::open), keeping `changes` changes in memory for lists at older
    /// revisions and watches from them.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open).
    pub fn open_with_history(dir: impl AsRef<Path>, changes: usize) -> Result<Self, BackendError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|source| BackendError::Config {
            context: format!("cannot create the data directory {}", dir.display()),
            source: Some(Box::new(source)),
        })?;
        let file = dir.join(FILE_NAME);
        let db = Database::create(&file).map_err(|error| match error {
            redb::DatabaseError::DatabaseAlreadyOpen => BackendError::Config {
                context: format!(
                    "the data directory {} is in use by another process (its database {} is locked); stop that server or choose another --data-dir",
                    dir.display(),
                    file.display()
                ),
                source: Some(Box::new(error)),
            },
            other => BackendError::Config {
                context: format!(
                    "cannot open the database {} in the data directory {} (not a kubeclient database, or corrupted)",
                    file.display(),
                    dir.display()
                ),
                source: Some(Box::new(other)),
            },
        })?;
        let revision = initialize(&db).map_err(|error| BackendError::Config {
            context: format!("cannot read the database {}", file.display()),
            source: Some(Box::new(error)),
        })?;
        tracing::info!(file = %file.display(), revision, "opened the disk storage");
        Ok(DiskBackend {
            inner: Arc::new(Inner {
                file,
                db,
                state: Mutex::new(State {
                    revision,
                    history: History::new(changes, revision),
                    watchers: Watchers::default(),
                }),
            }),
        })
    }

    /// The database's file.
    pub fn file(&self) -> &Path {
        &self.inner.file
    }

    /// Runs `call` on a thread that may block on the file.
    fn blocking<T: Send + 'static>(
        &self,
        call: impl FnOnce(&Inner) -> Result<T, BackendError> + Send + 'static,
    ) -> BackendFuture<'static, T> {
        let inner = self.inner.clone();
        async move {
            tokio::task::spawn_blocking(move || call(&inner))
                .await
                .map_err(|error| BackendError::Unavailable {
                    context: "calling the disk storage".to_owned(),
                    source: Box::new(error),
                })?
        }
        .boxed()
    }
}

/// Creates the tables of a new database; the stored revision.
fn initialize(db: &Database) -> Result<u64, redb::Error> {
    let txn = db.begin_write()?;
    let revision = {
        txn.open_table(OBJECTS)?;
        let meta = txn.open_table(META)?;
        meta.get(REVISION)?.map_or(0, |r| r.value())
    };
    txn.commit()?;
    Ok(revision)
}

/// A failure of the database file.
fn failed(context: impl Into<String>, error: impl Into<redb::Error>) -> BackendError {
    BackendError::Unavailable {
        context: context.into(),
        source: Box::new(error.into()),
    }
}

/// The key of everything of one resource (`/registry/configmaps/`).
fn root(resource: &GroupResource) -> String {
    keys::resource_root(PREFIX, resource)
}

/// What a write leaves: the state before it and after it (`None`: no object).
type Written = (Option<Arc<StoredObject>>, Option<Arc<StoredObject>>);

/// An object of a scan: a record from the file, or a state the history gave back.
enum Found {
    Stored(redb::AccessGuard<'static, &'static [u8]>),
    Undone(Arc<StoredObject>),
}

/// One page read from the file at one revision.
struct Scan {
    revision: u64,
    /// Full keys and their objects.
    items: Vec<(String, Arc<StoredObject>)>,
    /// Whether keys remain after the last item, and how many (when counted).
    more: bool,
    remaining: u64,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A write changes the state only after its commit succeeded, and completely.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(
        &self,
        resource: &GroupResource,
        key: &str,
    ) -> Result<Option<Arc<StoredObject>>, BackendError> {
        let full = format!("{}{key}", root(resource));
        let txn = self
            .db
            .begin_read()
            .map_err(|e| failed(format!("reading {full}"), e))?;
        let table = txn
            .open_table(OBJECTS)
            .map_err(|e| failed(format!("reading {full}"), e))?;
        let stored = table
            .get(full.as_str())
            .map_err(|e| failed(format!("reading {full}"), e))?;
        stored
            .map(|record| record::decode(&full, record.value()))
            .transpose()
    }

    /// Up to `limit` objects (0: all) of the keys that start with `root`, after
    /// `start_after` (a full key), at revision `at` (`None`: the latest); with
    /// `count_remaining`, how many keys remain after them (which reads every key).
    fn scan(
        &self,
        root: &str,
        start_after: Option<&str>,
        at: Option<u64>,
        limit: usize,
        count_remaining: bool,
    ) -> Result<Scan, BackendError> {
        let context = || format!("listing {root}");
        let (txn, revision, undo) = {
            let state = self.lock();
            let revision = match at {
                Some(at) if at > 0 => at,
                _ => state.revision,
            };
            if revision > state.revision {
                return Err(BackendError::TooLarge {
                    requested: revision,
                    current: state.revision,
                });
            }
            if revision < state.history.compacted() {
                return Err(BackendError::Expired {
                    requested: revision,
                    oldest: Some(state.history.compacted()),
                });
            }
            // The file's snapshot and the history agree: both are taken under the lock
            // that writes commit under.
            let txn = self.db.begin_read().map_err(|e| failed(context(), e))?;
            (txn, revision, state.history.undo_after(revision, root))
        };
        let table = txn.open_table(OBJECTS).map_err(|e| failed(context(), e))?;
        let start = match start_after {
            Some(after) if after >= root => Bound::Excluded(after),
            _ => Bound::Included(root),
        };
        let mut stored = table
            .range::<&str>((start, Bound::Unbounded))
            .map_err(|e| failed(context(), e))?
            .map(|entry| {
                entry
                    .map(|(key, record)| (key.value().to_owned(), record))
                    .map_err(|e| failed(context(), e))
            })
            .take_while(|entry| {
                entry
                    .as_ref()
                    .map_or(true, |(key, _)| key.starts_with(root))
            })
            .peekable();
        let after_start = |key: &String| match start {
            Bound::Excluded(after) => key.as_str() > after,
            _ => key.as_str() >= root,
        };
        let mut undone = undo
            .into_iter()
            .filter(|(key, _)| after_start(key))
            .peekable();
        let mut scan = Scan {
            revision,
            items: Vec::new(),
            more: false,
            remaining: 0,
        };
        // Merge the file's keys with the undone ones (which replace or add to them).
        loop {
            let from_undo = match (stored.peek(), undone.peek()) {
                (None, None) => break,
                (Some(Err(_)), _) => false,
                (Some(Ok((key, _))), Some((undone_key, _))) => undone_key <= key,
                (None, Some(_)) => true,
                (Some(_), None) => false,
            };
            let (key, object) = if from_undo {
                let Some((key, state)) = undone.next() else {
                    break;
                };
                if stored
                    .peek()
                    .is_some_and(|e| e.as_ref().is_ok_and(|(k, _)| *k == key))
                {
                    stored.next();
                }
                match state {
                    Some(object) => (key, Found::Undone(object)),
                    None => continue,
                }
            } else {
                let Some(entry) = stored.next() else { break };
                let (key, bytes) = entry?;
                (key, Found::Stored(bytes))
            };
            if limit > 0 && scan.items.len() >= limit {
                scan.more = true;
                if !count_remaining {
                    break;
                }
                scan.remaining += 1;
                continue;
            }
            let object = match object {
                Found::Undone(object) => object,
                Found::Stored(record) => match record::decode(&key, record.value()) {
                    Ok(object) => object,
                    // As kube-apiserver: report and skip what does not decode, so one bad
                    // value does not make a whole resource unlistable.
                    Err(error) => {
                        let error = ErrorChain(&error).to_string();
                        tracing::warn!(key = %key, %error, "skipping a stored object that does not decode");
                        continue;
                    }
                },
            };
            scan.items.push((key, object));
        }
        Ok(scan)
    }

    /// Runs one conditional write: `decide` sees the stored revision and JSON of the key.
    fn write(
        &self,
        resource: &GroupResource,
        key: &str,
        decide: impl FnOnce(Option<(u64, &[u8])>) -> Result<Step, BackendError>,
    ) -> Result<Written, BackendError> {
        let full = format!("{}{key}", root(resource));
        let context = || format!("writing {full}");
        let mut state = self.lock();
        let txn = self.db.begin_write().map_err(|e| failed(context(), e))?;
        let rv = state.revision + 1;
        let (previous, new) = {
            let mut objects = txn.open_table(OBJECTS).map_err(|e| failed(context(), e))?;
            let current = objects
                .get(full.as_str())
                .map_err(|e| failed(context(), e))?
                .map(|record| record.value().to_vec());
            let split = current
                .as_deref()
                .map(|r| record::split(&full, r))
                .transpose()?;
            let step = decide(split)?;
            let previous = current
                .as_deref()
                .map(|current| record::decode(&full, current))
                .transpose()?;
            let new = match step {
                Step::Keep => return Ok((previous.clone(), previous)),
                Step::Put(value, json) => {
                    objects
                        .insert(full.as_str(), record::encode(rv, &json).as_slice())
                        .map_err(|e| failed(context(), e))?;
                    Some(Arc::new(StoredObject::new(value, rv)))
                }
                Step::Delete => {
                    objects
                        .remove(full.as_str())
                        .map_err(|e| failed(context(), e))?;
                    None
                }
            };
            let mut meta = txn.open_table(META).map_err(|e| failed(context(), e))?;
            meta.insert(REVISION, rv)
                .map_err(|e| failed(context(), e))?;
            (previous, new)
        };
        // Synced to disk (redb's default durability) before anyone hears of it.
        txn.commit().map_err(|e| failed(context(), e))?;
        state.revision = rv;
        let kind = match (&previous, &new) {
            (None, _) => ChangeKind::Created,
            (Some(_), Some(_)) => ChangeKind::Updated,
            (Some(_), None) => ChangeKind::Deleted,
        };
        let change = Change::new(rv, kind, key.to_owned(), previous.clone(), new.clone());
        let record = Arc::new(Record {
            full_key: full,
            resource: resource.clone(),
            change: Arc::new(change),
        });
        state.watchers.send(&record);
        state.history.push(record);
        Ok((previous, new))
    }
}

/// The precondition of an update or delete: the key exists and, when `expected` is given,
/// is still at that revision.
fn check(
    key: &str,
    current: Option<(u64, &[u8])>,
    expected: Option<u64>,
) -> Result<(), BackendError> {
    let Some((found, _)) = current else {
        return Err(BackendError::NotFound {
            key: key.to_owned(),
        });
    };
    match expected {
        Some(expected) if expected != found => Err(BackendError::Conflict {
            key: key.to_owned(),
            expected,
            found,
        }),
        _ => Ok(()),
    }
}

/// The object a write reports; a decided write always has one.
fn reported(
    key: &str,
    object: Option<Arc<StoredObject>>,
) -> Result<Arc<StoredObject>, BackendError> {
    object.ok_or_else(|| BackendError::NotFound {
        key: key.to_owned(),
    })
}

impl Backend for DiskBackend {
    fn revision(&self) -> BackendFuture<'_, u64> {
        let revision = self.inner.lock().revision;
        async move { Ok(revision) }.boxed()
    }

    fn get<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
    ) -> BackendFuture<'a, Option<Arc<StoredObject>>> {
        let (resource, key) = (resource.clone(), key.to_owned());
        self.blocking(move |inner| inner.get(&resource, &key))
    }

    fn list<'a>(
        &'a self,
        resource: &'a GroupResource,
        options: ListOptions<'a>,
    ) -> BackendFuture<'a, ListPage> {
        let root = root(resource);
        let from = format!("{root}{}", options.prefix);
        let start_after = options.start_after.map(|after| format!("{root}{after}"));
        let (at, limit) = (options.at, options.limit);
        self.blocking(move |inner| {
            let scan = inner.scan(&from, start_after.as_deref(), at, limit, true)?;
            let continue_after = scan
                .more
                .then(|| scan.items.last())
                .flatten()
                .and_then(|(key, _)| key.strip_prefix(&root))
                .map(str::to_owned);
            Ok(ListPage {
                revision: scan.revision,
                remaining: if continue_after.is_some() {
                    scan.remaining
                } else {
                    0
                },
                continue_after,
                items: scan.items.into_iter().map(|(_, object)| object).collect(),
            })
        })
    }

    fn create<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        let (resource, key) = (resource.clone(), key.to_owned());
        self.blocking(move |inner| {
            let full = format!("{}{key}", root(&resource));
            let (value, json) = record::json(&full, object)?;
            let (_, new) = inner.write(&resource, &key, |current| match current {
                Some(_) => Err(BackendError::AlreadyExists { key: key.clone() }),
                None => Ok(Step::Put(value, json)),
            })?;
            reported(&key, new)
        })
    }

    fn update<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
        expected_revision: u64,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        let (resource, key) = (resource.clone(), key.to_owned());
        self.blocking(move |inner| {
            let full = format!("{}{key}", root(&resource));
            let (value, json) = record::json(&full, object)?;
            let (previous, new) = inner.write(&resource, &key, |current| {
                check(&key, current, Some(expected_revision))?;
                // An update that changes nothing stores nothing and keeps the revision.
                match current {
                    Some((_, stored)) if stored == json.as_slice() => Ok(Step::Keep),
                    _ => Ok(Step::Put(value, json)),
                }
            })?;
            reported(&key, new.or(previous))
        })
    }

    fn delete<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        expected_revision: Option<u64>,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        let (resource, key) = (resource.clone(), key.to_owned());
        self.blocking(move |inner| {
            let (previous, _) = inner.write(&resource, &key, |current| {
                check(&key, current, expected_revision)?;
                Ok(Step::Delete)
            })?;
            reported(&key, previous)
        })
    }

    fn watch<'a>(
        &'a self,
        resource: &'a GroupResource,
        prefix: &'a str,
        after: u64,
    ) -> BackendFuture<'a, ChangeStream> {
        let opened = self.inner.register(after, |state| {
            state
                .watchers
                .watch(&state.history, resource, prefix, after)
        });
        async move { opened }.boxed()
    }

    fn compact(&self) -> BackendFuture<'_, u64> {
        let mut state = self.inner.lock();
        let revision = state.revision;
        state.history.compact(revision);
        async move { Ok(revision) }.boxed()
    }

    fn list_everything<'a>(
        &'a self,
        at: Option<u64>,
        start_after: Option<&'a str>,
        limit: usize,
    ) -> BackendFuture<'a, Everything> {
        let start_after = start_after.map(str::to_owned);
        self.blocking(move |inner| {
            let everything = format!("{PREFIX}/");
            let scan = inner.scan(&everything, start_after.as_deref(), at, limit, false)?;
            let continue_after = scan
                .more
                .then(|| scan.items.last().map(|(key, _)| key.clone()))
                .flatten();
            let entries = scan
                .items
                .into_iter()
                .filter_map(|(full, object)| {
                    let relative = full.strip_prefix(&everything)?;
                    let Some((group, resource, key)) = keys::parse(relative) else {
                        tracing::warn!(key = %full, "skipping a stored key that names no object");
                        return None;
                    };
                    Some(Entry {
                        resource: keys::group_resource(group, resource, &object.value),
                        key: key.to_owned(),
                        object,
                    })
                })
                .collect();
            Ok(Everything {
                revision: scan.revision,
                entries,
                continue_after,
            })
        })
    }

    fn watch_everything(&self, after: u64) -> BackendFuture<'_, EventStream> {
        let opened = self.inner.register(after, |state| {
            state.watchers.watch_everything(&state.history, after)
        });
        async move { opened }.boxed()
    }
}

impl Inner {
    /// Registers a watch from `after`, if the history still reaches back to it.
    fn register<T>(
        &self,
        after: u64,
        open: impl FnOnce(&mut State) -> T,
    ) -> Result<T, BackendError> {
        let mut state = self.lock();
        if after < state.history.compacted() {
            return Err(BackendError::Expired {
                requested: after,
                oldest: Some(state.history.compacted()),
            });
        }
        if after > state.revision {
            return Err(BackendError::TooLarge {
                requested: after,
                current: state.revision,
            });
        }
        Ok(open(&mut state))
    }
}
