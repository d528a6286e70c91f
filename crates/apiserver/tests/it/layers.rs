//! The import rule of the server's layers (docs/ARCHITECTURE.md, "Inside the embedded
//! server"): every `crate::<module>` path in `src/**/*.rs` must point to a layer its
//! file's layer may use. Leaves import nothing of the crate (but the lock helpers); the
//! registry imports only leaves; the context (`state`, `sessions`, `response`, `query`)
//! the registry and leaves; endpoints and streams the context, the registry and leaves,
//! never each other; controllers and bootstrap the registry and leaves, never each other;
//! only the server wires them all.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layer of each top-level module of `src/`.
const LAYERS: &[(&str, Layer)] = &[
    ("sync", Layer::Base),
    ("object", Layer::Leaf),
    ("storage", Layer::Leaf),
    ("patch", Layer::Leaf),
    ("authentication", Layer::Leaf),
    ("faults", Layer::Leaf),
    ("tls", Layer::Leaf),
    ("pod_logs", Layer::Leaf),
    ("port_forward_allowlist", Layer::Leaf),
    ("yaml_body", Layer::Leaf),
    ("cron_schedule", Layer::Leaf),
    ("quantity", Layer::Leaf),
    ("webhook_client", Layer::Leaf),
    ("registry", Layer::Registry),
    ("authorization", Layer::Registry),
    ("state", Layer::Context),
    ("sessions", Layer::Context),
    ("response", Layer::Context),
    ("query", Layer::Context),
    ("endpoints", Layer::Endpoints),
    ("streams", Layer::Streams),
    ("controllers", Layer::Controllers),
    ("cluster", Layer::Controllers),
    ("bootstrap", Layer::Bootstrap),
    ("server", Layer::Server),
    ("lib", Layer::Server),
    ("testing", Layer::Server),
    ("container_runtime", Layer::Server),
    ("fuzz_tests", Layer::Server),
];

/// Edges that break the rule and are still to be removed, as `file -> module`. Empty:
/// keep it so. (A listed edge that no longer exists fails the test too, so the list
/// only shrinks.)
const STILL_TO_REMOVE: &[&str] = &[];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    /// Lock helpers every layer may use.
    Base,
    Leaf,
    Registry,
    Context,
    Endpoints,
    /// The Pod streams (the kubelet's part), beside the endpoints.
    Streams,
    Controllers,
    Bootstrap,
    Server,
}

impl Layer {
    /// Whether a file of this layer may import a module of `to` (its own layer aside).
    fn may_import(self, to: Layer) -> bool {
        use Layer::*;
        match self {
            Base | Leaf => to == Base,
            Registry => matches!(to, Base | Leaf),
            Context => matches!(to, Base | Leaf | Registry),
            Endpoints | Streams => matches!(to, Base | Leaf | Registry | Context),
            Controllers | Bootstrap => matches!(to, Base | Leaf | Registry),
            Server => true,
        }
    }
}

fn layer_of(module: &str) -> Option<Layer> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, layer)| *layer)
}

pub(crate) fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The top-level modules a line of code names through `crate::` (`crate::a::b`,
/// `crate::{a, b::c}`); comments are not code.
fn crate_modules(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut modules = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `kubeclient_apiserver_crate::` and the like
        }
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            modules.extend(
                inner
                    .split(',')
                    .map(|item| item.trim().split("::").next().unwrap_or("").to_owned()),
            );
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            modules.push(name);
        }
    }
    modules
}

/// Every import edge that breaks the rule, as `file -> module`.
fn forbidden_edges() -> BTreeSet<String> {
    let src = crate::support::manifest_dir().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 50,
        "found only {} files under {}",
        files.len(),
        src.display()
    );
    let mut edges = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap_or(&file);
        let top = relative
            .components()
            .next()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_owned()
            })
            .unwrap_or_default();
        let from = layer_of(&top).unwrap_or_else(|| {
            panic!(
                "{top} (src/{}) has no layer: add it to LAYERS",
                relative.display()
            )
        });
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for line in text.lines() {
            for module in crate_modules(line) {
                // Items the crate root re-exports (`crate::ApiServer`) are the server's.
                let to = if module.starts_with(|c: char| c.is_ascii_uppercase()) {
                    Layer::Server
                } else {
                    match layer_of(&module) {
                        Some(layer) => layer,
                        None => continue,
                    }
                };
                // A layer uses itself freely, but a leaf stands alone.
                let same_layer = to == from && from != Layer::Leaf;
                if module != top && !same_layer && !from.may_import(to) {
                    edges.insert(format!("src/{} -> crate::{module}", relative.display()));
                }
            }
        }
    }
    edges
}

#[test]
fn server_modules_import_only_the_layers_below_them() {
    let edges = forbidden_edges();
    let allowed: BTreeSet<String> = STILL_TO_REMOVE.iter().map(|e| (*e).to_owned()).collect();
    let new: Vec<&String> = edges.difference(&allowed).collect();
    let gone: Vec<&String> = allowed.difference(&edges).collect();
    assert!(
        new.is_empty(),
        "imports that break the layer rule (docs/ARCHITECTURE.md):\n  {}",
        new.iter()
            .map(|e| e.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    assert!(
        gone.is_empty(),
        "removed edges still listed in STILL_TO_REMOVE (delete them there):\n  {}",
        gone.iter()
            .map(|e| e.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn the_import_scan_sees_every_form_of_crate_path() {
    assert_eq!(
        crate_modules("use crate::registry::store::WriteRequest;"),
        ["registry"]
    );
    assert_eq!(
        crate_modules("use crate::{Limits, endpoints::Call};"),
        ["Limits", "endpoints"]
    );
    assert_eq!(
        crate_modules("    let x = crate::object::now(); crate::sync::lock(&a)"),
        ["object", "sync"]
    );
    assert!(crate_modules("/// See [`crate::controllers`].").is_empty());
    assert!(crate_modules("// crate::endpoints").is_empty());
    assert!(Layer::Controllers.may_import(Layer::Registry));
    assert!(!Layer::Controllers.may_import(Layer::Bootstrap));
    assert!(!Layer::Registry.may_import(Layer::Endpoints));
    assert!(!Layer::Endpoints.may_import(Layer::Streams));
    assert!(!Layer::Streams.may_import(Layer::Endpoints));
    assert!(Layer::Streams.may_import(Layer::Context));
    assert!(!Layer::Leaf.may_import(Layer::Leaf));
}
