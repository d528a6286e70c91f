//! [`History`]: the latest committed changes, in memory, bounded. They serve lists at older
//! revisions (the state at a revision is today's with the later changes undone) and
//! watches from older revisions (replayed before the live changes). The file itself only
//! holds the latest state, so after a restart the history starts empty at the stored
//! revision: older revisions are compacted (410 Gone), as after an etcd compaction.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use kubeclient_machinery::GroupResource;

use super::super::{Change, StoredObject};

/// One committed change, with where it is stored.
#[derive(Debug)]
pub(super) struct Record {
    /// The key in the file (`/registry/configmaps/ns/name`).
    pub full_key: String,
    /// The resource written.
    pub resource: GroupResource,
    /// The change (its `key` is the object's key within the resource).
    pub change: Arc<Change>,
}

/// How many bytes of encoded objects the history keeps at most (but for the newest
/// change), so that large objects do not make the window a memory hog.
const MAX_BYTES: usize = 256 * 1024 * 1024;

/// The latest committed changes.
///
/// Invariant: `records` holds exactly the changes with `rv > compacted`, in revision
/// order, at most `window` of them and (but for the newest) at most `max_bytes` of
/// encoded objects, counted in `bytes`.
#[derive(Debug)]
pub(super) struct History {
    records: VecDeque<Arc<Record>>,
    window: usize,
    bytes: usize,
    max_bytes: usize,
    compacted: u64,
}

/// The encoded bytes a record keeps alive.
fn size(record: &Record) -> usize {
    let change = &record.change;
    [&change.prev, &change.new]
        .into_iter()
        .flatten()
        .map(|object| object.bytes.len())
        .sum()
}

impl History {
    /// An empty history after `revision`.
    pub(super) fn new(window: usize, revision: u64) -> Self {
        History {
            records: VecDeque::new(),
            window: window.max(1),
            bytes: 0,
            max_bytes: MAX_BYTES,
            compacted: revision,
        }
    }

    /// The oldest revision whose state can still be rebuilt.
    pub(super) fn compacted(&self) -> u64 {
        self.compacted
    }

    /// Remembers a change, forgetting the oldest beyond the window and the bytes.
    pub(super) fn push(&mut self, record: Arc<Record>) {
        let added = size(&record);
        while self.records.len() >= self.window
            || (!self.records.is_empty() && self.bytes + added > self.max_bytes)
        {
            match self.records.pop_front() {
                Some(oldest) => {
                    self.bytes -= size(&oldest);
                    self.compacted = oldest.change.rv;
                }
                None => break,
            }
        }
        self.bytes += added;
        self.records.push_back(record);
    }

    /// Forgets everything up to `revision`.
    pub(super) fn compact(&mut self, revision: u64) {
        self.records.clear();
        self.bytes = 0;
        self.compacted = revision;
    }

    /// The changes after `after`, in order.
    pub(super) fn after(&self, after: u64) -> impl Iterator<Item = &Arc<Record>> {
        let start = self.records.partition_point(|r| r.change.rv <= after);
        self.records.range(start..)
    }

    /// What undoes the changes after `at` of the keys that start with `root`: for each such
    /// key, its state at `at` (`None`: it did not exist).
    pub(super) fn undo_after(
        &self,
        at: u64,
        root: &str,
    ) -> BTreeMap<String, Option<Arc<StoredObject>>> {
        let mut undo = BTreeMap::new();
        for record in self.after(at) {
            if record.full_key.starts_with(root) && !undo.contains_key(&record.full_key) {
                undo.insert(record.full_key.clone(), record.change.prev.clone());
            }
        }
        undo
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::ChangeKind;
    use super::*;

    fn record(rv: u64, key: &str, prev: Option<u64>) -> Arc<Record> {
        let prev = prev.map(|rv| Arc::new(StoredObject::new(serde_json::json!({"a": 1}), rv)));
        let change = Change::new(rv, ChangeKind::Updated, key.to_owned(), prev, None);
        Arc::new(Record {
            full_key: format!("/registry/configmaps/{key}"),
            resource: GroupResource::new("", "configmaps"),
            change: Arc::new(change),
        })
    }

    #[test]
    fn the_window_compacts_the_oldest_changes() {
        let mut history = History::new(2, 10);
        for (rv, prev) in [(11, None), (12, Some(11)), (13, Some(12))] {
            history.push(record(rv, "ns/a", prev));
        }
        assert_eq!(history.compacted(), 11);
        let rvs: Vec<_> = history.after(0).map(|r| r.change.rv).collect();
        assert_eq!(rvs, [12, 13]);
        let undo = history.undo_after(11, "/registry/configmaps/");
        let state = undo.get("/registry/configmaps/ns/a").cloned().flatten();
        assert_eq!(state.map(|o| o.rv), Some(11), "the state before 12");
        assert!(history.undo_after(11, "/registry/secrets/").is_empty());
        history.compact(13);
        assert_eq!((history.compacted(), history.after(0).count()), (13, 0));
    }

    #[test]
    fn the_bytes_compact_the_oldest_changes_but_keep_the_newest() {
        let mut history = History::new(100, 10);
        let one = size(&record(11, "ns/a", Some(10)));
        history.max_bytes = 2 * one;
        for (rv, prev) in [(11, Some(10)), (12, Some(11)), (13, Some(12))] {
            history.push(record(rv, "ns/a", prev));
        }
        let rvs: Vec<_> = history.after(0).map(|r| r.change.rv).collect();
        assert_eq!((rvs, history.compacted()), (vec![12, 13], 11));
        history.max_bytes = 1;
        history.push(record(14, "ns/a", Some(13)));
        let rvs: Vec<_> = history.after(0).map(|r| r.change.rv).collect();
        assert_eq!(
            (rvs, history.compacted()),
            (vec![14], 13),
            "the newest stays"
        );
    }
}
