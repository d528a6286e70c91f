//! Test helpers: objects, a recording pop, a scripted [`KnownObjects`], and the
//! controller's delta-to-store mapping.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodSpec};
use kubeclient_machinery::{DeletedObject, Object, split_meta_namespace_key};

use super::{Delta, Deltas, Error, KnownObjects, Queue, Result, Store};

/// A ConfigMap with key `key` (`ns/name` or `name`) and resource version `rv`.
pub(crate) fn cm(key: &str, rv: &str) -> Arc<ConfigMap> {
    let (ns, name) = split_meta_namespace_key(key).expect("test keys are valid");
    let mut cm = ConfigMap::default();
    cm.meta_mut().name = Some(name.to_owned());
    if !ns.is_empty() {
        cm.meta_mut().namespace = Some(ns.to_owned());
    }
    cm.meta_mut().resource_version = Some(rv.to_owned());
    Arc::new(cm)
}

/// A Pod `ns/name` scheduled on `node` (if any).
pub(crate) fn pod(ns: &str, name: &str, node: Option<&str>) -> Arc<Pod> {
    let mut pod = Pod::default();
    pod.meta_mut().name = Some(name.to_owned());
    pod.meta_mut().namespace = Some(ns.to_owned());
    pod.spec = Some(PodSpec {
        node_name: node.map(str::to_owned),
        ..PodSpec::default()
    });
    Arc::new(pod)
}

/// One line per delta: `"<Type> <rv>"`, tombstones as `"Tombstone <rv>"` or `"Tombstone -"`.
pub(crate) fn summary<K: Object>(deltas: &Deltas<K>) -> Vec<String> {
    deltas
        .iter()
        .map(|delta| {
            let rv = delta.object().map_or("-", |obj| obj.resource_version());
            if delta.is_tombstone() {
                format!("Tombstone {rv}")
            } else {
                format!("{:?} {rv}", delta.delta_type())
            }
        })
        .collect()
}

/// Pops the head without blocking; panics if nothing is queued.
pub(crate) fn pop<K: Object>(queue: &dyn Queue<K>) -> (Deltas<K>, bool) {
    let mut popped = None;
    let done = queue
        .try_pop(&mut |deltas, initial| popped = Some((deltas, initial)))
        .expect("queue is open");
    assert!(done, "queue is empty");
    popped.expect("process was called")
}

/// Pops everything queued; each entry is (key, summary, is_in_initial_list).
pub(crate) fn drain<K: Object>(queue: &dyn Queue<K>) -> Vec<(String, Vec<String>, bool)> {
    let mut out = Vec::new();
    while !queue.is_empty() {
        let (deltas, initial) = pop(queue);
        let key = deltas
            .newest()
            .map(|d| d.key(None).expect("key"))
            .unwrap_or_default();
        out.push((key, summary(&deltas), initial));
    }
    out
}

/// The controller's mapping of popped deltas onto the store (Go's `processDeltas`).
pub(crate) fn apply<K: Object>(store: &dyn Store<K>, deltas: Deltas<K>) {
    for delta in deltas {
        match delta {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                store.update(obj).expect("update");
            }
            Delta::Deleted(DeletedObject::Final(obj)) => store.delete(&obj).expect("delete"),
            Delta::Deleted(DeletedObject::FinalStateUnknown(tombstone)) => {
                store.delete_by_key(&tombstone.key);
            }
            Delta::ReplacedAll(info) => {
                store
                    .replace(info.objects, &info.resource_version)
                    .expect("replace");
            }
            Delta::SyncAll => {}
        }
    }
}

/// Known objects set by hand, with keys whose lookup fails.
#[derive(Default)]
pub(crate) struct ScriptedKnown {
    pub(crate) objects: Mutex<BTreeMap<String, Arc<ConfigMap>>>,
    pub(crate) failing: Mutex<BTreeSet<String>>,
}

impl ScriptedKnown {
    pub(crate) fn with(objects: &[Arc<ConfigMap>]) -> Arc<Self> {
        let known = ScriptedKnown::default();
        for obj in objects {
            known.objects.lock().unwrap().insert(
                kubeclient_machinery::meta_namespace_key(obj.as_ref()),
                obj.clone(),
            );
        }
        Arc::new(known)
    }

    pub(crate) fn fail(&self, key: &str) {
        self.failing.lock().unwrap().insert(key.to_owned());
    }
}

impl KnownObjects<ConfigMap> for ScriptedKnown {
    fn list_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.objects.lock().unwrap().keys().cloned().collect();
        keys.extend(self.failing.lock().unwrap().iter().cloned());
        keys.sort();
        keys.dedup();
        keys
    }

    fn get_by_key(&self, key: &str) -> Result<Option<Arc<ConfigMap>>> {
        if self.failing.lock().unwrap().contains(key) {
            return Err(Error::KnownObjects {
                key: key.to_owned(),
                source: "lookup failed".into(),
            });
        }
        Ok(self.objects.lock().unwrap().get(key).cloned())
    }
}
