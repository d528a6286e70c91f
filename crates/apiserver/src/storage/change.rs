//! [`Change`]: one write to one object, as kept in a resource's history and sent to watchers.

use std::sync::{Arc, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};

use super::StoredObject;

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// The object was created.
    Created,
    /// The object was updated.
    Updated,
    /// The object left storage.
    Deleted,
}

/// One write to one object. Watch events are derived from it per watcher (a watcher with a
/// selector may see an update as ADDED or DELETED), and their lines are encoded once and
/// shared by every watcher that sends the same event.
#[derive(Debug)]
pub struct Change {
    /// The revision of the write.
    pub rv: u64,
    /// What happened.
    pub kind: ChangeKind,
    /// The object's store key (`namespace/name` or `name`).
    pub key: String,
    /// The state before the write (`None` for a create).
    pub prev: Option<Arc<StoredObject>>,
    /// The state after the write (`None` for a delete).
    pub new: Option<Arc<StoredObject>>,
    /// The previous state stamped with this change's revision: the object of a DELETED
    /// event (for a delete, or for an update that leaves a watcher's selector).
    prev_at_rv: OnceLock<Arc<StoredObject>>,
    added_line: OnceLock<Bytes>,
    modified_line: OnceLock<Bytes>,
    deleted_line: OnceLock<Bytes>,
}

impl Change {
    /// A change record.
    pub fn new(
        rv: u64,
        kind: ChangeKind,
        key: String,
        prev: Option<Arc<StoredObject>>,
        new: Option<Arc<StoredObject>>,
    ) -> Self {
        Change {
            rv,
            kind,
            key,
            prev,
            new,
            prev_at_rv: OnceLock::new(),
            added_line: OnceLock::new(),
            modified_line: OnceLock::new(),
            deleted_line: OnceLock::new(),
        }
    }

    /// The previous state with this change's resourceVersion.
    pub fn prev_at_rv(&self) -> Option<&Arc<StoredObject>> {
        let prev = self.prev.as_ref()?;
        Some(
            self.prev_at_rv
                .get_or_init(|| Arc::new(StoredObject::new(prev.value.clone(), self.rv))),
        )
    }

    /// The encoded `{"type":"ADDED","object":...}\n` line for the new state.
    pub fn added_line(&self) -> Option<Bytes> {
        let new = self.new.as_ref()?;
        Some(
            self.added_line
                .get_or_init(|| event_line("ADDED", &new.bytes))
                .clone(),
        )
    }

    /// The encoded MODIFIED line for the new state.
    pub fn modified_line(&self) -> Option<Bytes> {
        let new = self.new.as_ref()?;
        Some(
            self.modified_line
                .get_or_init(|| event_line("MODIFIED", &new.bytes))
                .clone(),
        )
    }

    /// The encoded DELETED line: the previous state with this change's revision.
    pub fn deleted_line(&self) -> Option<Bytes> {
        let prev = self.prev_at_rv()?;
        Some(
            self.deleted_line
                .get_or_init(|| event_line("DELETED", &prev.bytes))
                .clone(),
        )
    }
}

/// `{"type":"<TYPE>","object":<object>}\n`, built from the stored bytes without re-encoding.
pub fn event_line(event_type: &str, object: &[u8]) -> Bytes {
    let mut line = BytesMut::with_capacity(object.len() + event_type.len() + 24);
    line.put_slice(b"{\"type\":\"");
    line.put_slice(event_type.as_bytes());
    line.put_slice(b"\",\"object\":");
    line.put_slice(object);
    line.put_slice(b"}\n");
    line.freeze()
}
