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

/// The latest committed changes.
///
/// Invariant: `records` holds exactly the changes with `rv > compacted`, in revision
/// order, at most `window` of them.
#[derive(Debug)]
pub(super) struct History {
    records: VecDeque<Arc<Record>>,
    window: usize,
    compacted: u64,
}

impl History {
    /// An empty history after `revision`.
    pub(super) fn new(window: usize, revision: u64) -> Self {
        History {
            records: VecDeque::new(),
            window: window.max(1),
            compacted: revision,
        }
    }

    /// The oldest revision whose state can still be rebuilt.
    pub(super) fn compacted(&self) -> u64 {
        self.compacted
    }

    /// Remembers a change, forgetting the oldest beyond the window.
    pub(super) fn push(&mut self, record: Arc<Record>) {
        while self.records.len() >= self.window {
            match self.records.pop_front() {
                Some(oldest) => self.compacted = oldest.change.rv,
                None => break,
            }
        }
        self.records.push_back(record);
    }

    /// Forgets everything up to `revision`.
    pub(super) fn compact(&mut self, revision: u64) {
        self.records.clear();
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
        let prev = prev.map(|rv| Arc::new(StoredObject::new(serde_json::json!({}), rv)));
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
}
