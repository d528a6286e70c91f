//! The `InterPodAffinity` filter: the required Pod affinity and anti-affinity terms of
//! the Pod being scheduled, and the required anti-affinity of the Pods already placed,
//! over the topology domains their `topologyKey` labels make of the nodes
//! (`kubernetes.io/hostname`: one node each).

use std::collections::{BTreeMap, HashMap};

use kubeclient_machinery::LabelSelector;
use serde_json::Value;

use super::PodInfo;
use super::filters::Rejection;
use crate::cluster::node::NodeInfo;
use crate::object::label_selector;

/// One required `PodAffinityTerm`, resolved for the Pod that carries it.
#[derive(Debug)]
struct Term {
    selector: LabelSelector,
    /// The namespaces it selects Pods in (`None`: every namespace).
    namespaces: Option<Vec<String>>,
    topology_key: String,
}

impl Term {
    fn matches(&self, pod: &PodInfo) -> bool {
        self.namespaces
            .as_ref()
            .is_none_or(|namespaces| namespaces.contains(&pod.namespace))
            && self
                .selector
                .matches_with(&|key| pod.labels.get(key).map(String::as_str))
    }
}

/// The required terms of `pod` at `path` (`podAffinity` or `podAntiAffinity`); terms
/// whose selector does not parse are left out.
fn terms(pod: &PodInfo, kind: &str, namespace_labels: &NamespaceLabels) -> Vec<Term> {
    let pointer = format!("/spec/affinity/{kind}/requiredDuringSchedulingIgnoredDuringExecution");
    pod.object
        .pointer(&pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|term| {
            let selector = label_selector(term.get("labelSelector")).ok()?;
            let listed: Vec<String> = term["namespaces"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect();
            let namespaces = match term.get("namespaceSelector") {
                None | Some(Value::Null) if listed.is_empty() => Some(vec![pod.namespace.clone()]),
                None | Some(Value::Null) => Some(listed),
                Some(selector) => {
                    let selector = label_selector(Some(selector)).ok()?;
                    if selector.is_empty() {
                        None
                    } else {
                        let mut chosen = listed;
                        chosen.extend(namespace_labels.matching(&selector));
                        Some(chosen)
                    }
                }
            };
            Some(Term {
                selector,
                namespaces,
                topology_key: term["topologyKey"].as_str().unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// The labels of every namespace, for `namespaceSelector`s.
#[derive(Debug, Default)]
pub(super) struct NamespaceLabels(pub(super) HashMap<String, BTreeMap<String, String>>);

impl NamespaceLabels {
    fn matching(&self, selector: &LabelSelector) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, labels)| selector.matches(labels))
            .map(|(name, _)| name.clone())
            .collect()
    }
}

/// Whether `object` (a Pod) has required Pod affinity or anti-affinity terms.
pub(super) fn has_required_terms(object: &Value) -> bool {
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        object
            .pointer(&format!(
                "/spec/affinity/{kind}/requiredDuringSchedulingIgnoredDuringExecution"
            ))
            .and_then(Value::as_array)
            .is_some_and(|terms| !terms.is_empty())
    })
}

/// The required affinity and anti-affinity terms of the Pod being scheduled, resolved
/// once for every node it is tried on.
#[derive(Debug, Default)]
pub(super) struct PodTerms {
    affinity: Vec<Term>,
    anti_affinity: Vec<Term>,
}

impl PodTerms {
    pub(super) fn of(pod: &PodInfo, namespace_labels: &NamespaceLabels) -> PodTerms {
        PodTerms {
            affinity: terms(pod, "podAffinity", namespace_labels),
            anti_affinity: terms(pod, "podAntiAffinity", namespace_labels),
        }
    }
}

/// The Pods on nodes, with the required anti-affinity terms of those that have some.
#[derive(Debug, Default)]
pub(super) struct Placed {
    pods: Vec<PodInfo>,
    /// Indexes into `pods`, with their terms.
    anti_affinity: Vec<(usize, Vec<Term>)>,
}

impl Placed {
    /// Adds a Pod placed on its node (`pod.node`).
    pub(super) fn push(&mut self, pod: PodInfo, namespace_labels: &NamespaceLabels) {
        let anti_affinity = terms(&pod, "podAntiAffinity", namespace_labels);
        if !anti_affinity.is_empty() {
            self.anti_affinity.push((self.pods.len(), anti_affinity));
        }
        self.pods.push(pod);
    }
}

/// The filter for `pod` (with its `terms`) on `node`, in kube-scheduler's order (the
/// Pod's affinity, its anti-affinity, then the placed Pods' anti-affinity); the placed
/// Pods' nodes' labels are looked up in `nodes`.
pub(super) fn inter_pod_affinity(
    pod: &PodInfo,
    terms: &PodTerms,
    node: &NodeInfo,
    placed: &Placed,
    nodes: &HashMap<&str, &NodeInfo>,
) -> Option<Rejection> {
    let same_domain = |other: &PodInfo, key: &str| -> bool {
        let Some(value) = node.labels.get(key) else {
            return false;
        };
        nodes
            .get(other.node.as_str())
            .and_then(|n| n.labels.get(key))
            == Some(value)
    };
    for term in &terms.affinity {
        let satisfied = placed
            .pods
            .iter()
            .any(|other| term.matches(other) && same_domain(other, &term.topology_key));
        // The first Pod of a group that selects itself may go anywhere its topology
        // key exists.
        let first_of_its_kind = !placed.pods.iter().any(|other| term.matches(other))
            && term.matches(pod)
            && node.labels.contains_key(&term.topology_key);
        if !satisfied && !first_of_its_kind {
            return Some(Rejection {
                reasons: vec!["node(s) didn't match pod affinity rules".to_owned()],
                resolvable: false,
            });
        }
    }
    if terms.anti_affinity.iter().any(|term| {
        placed
            .pods
            .iter()
            .any(|other| term.matches(other) && same_domain(other, &term.topology_key))
    }) {
        return Some(Rejection {
            reasons: vec!["node(s) didn't match pod anti-affinity rules".to_owned()],
            resolvable: true,
        });
    }
    // The Pods already placed whose anti-affinity keeps this one away.
    for (index, existing) in &placed.anti_affinity {
        let Some(other) = placed.pods.get(*index) else {
            continue;
        };
        if existing
            .iter()
            .any(|term| term.matches(pod) && same_domain(other, &term.topology_key))
        {
            return Some(Rejection {
                reasons: vec![
                    "node(s) didn't satisfy existing pods anti-affinity rules".to_owned(),
                ],
                resolvable: true,
            });
        }
    }
    None
}
