//! No import circle between the server's files but inside one small module
//! (docs/ARCHITECTURE.md, "Inside the embedded server"): reading the files of `src/`,
//! every file that names an item of another file (a `use`, or a path such as
//! `super::store::fail(..)` or `crate::object::now()`) depends on it, seen through
//! re-exports (`pub(crate) use store::WriteRequest` leads to the file defining it). A set
//! of files that depend on each other in a circle must be one folder's files (a module's
//! `mod.rs` and its own files) and at most [`MAX_CIRCLE`] of them: a module may share
//! its vocabulary with its files, but the layers and the modules between them point one
//! way. Test modules (`#[cfg(test)] mod tests`) do not count.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

/// The most files one allowed circle may hold.
const MAX_CIRCLE: usize = 4;

/// A module's path from the crate root (`["registry", "store"]`; the root is `[]`).
type ModulePath = Vec<String>;

/// One file of `src/`: its module and its code without comments, string contents and
/// test modules.
struct Source {
    module: ModulePath,
    /// The folder its circle may stay in: its own module when it has files of its own
    /// (`mod.rs`, or `store.rs` beside `store/`), else its parent's.
    folder: ModulePath,
    code: String,
}

fn sources() -> Vec<Source> {
    let src = crate::support::manifest_dir().join("src");
    let mut files = Vec::new();
    crate::layers::rust_files(&src, &mut files);
    assert!(files.len() > 50, "found only {} files", files.len());
    files
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(&src).unwrap_or(file);
            let module = module_path(relative);
            let owns_folder = matches!(
                relative.file_name().and_then(|n| n.to_str()),
                Some("mod.rs" | "lib.rs")
            ) || file.with_extension("").is_dir();
            let folder = if owns_folder {
                module.clone()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            let text = std::fs::read_to_string(file).unwrap_or_default();
            Source {
                module,
                folder,
                code: without_test_modules(&code_only(&text)),
            }
        })
        .collect()
}

/// `registry/store/mod.rs` -> `registry::store`, `lib.rs` -> the root.
fn module_path(relative: &Path) -> ModulePath {
    let mut parts: ModulePath = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        parts.pop();
    }
    parts
}

/// `text` without comments and with every string and character literal emptied, so
/// that what is left is code.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < chars.len() {
                if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&h| h == '#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            i += 3; // the quote, the backslash and the escaped character
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_before(chars: &[char], at: usize) -> bool {
    at > 0 && is_ident(chars[at - 1])
}

/// `code` without its `#[cfg(test)]` modules and imports.
fn without_test_modules(code: &str) -> String {
    let mut rest = code.to_owned();
    let mut out = String::with_capacity(code.len());
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let item = after.trim_start();
        let item = item
            .strip_prefix("pub(crate)")
            .or_else(|| item.strip_prefix("pub(super)"))
            .or_else(|| item.strip_prefix("pub"))
            .unwrap_or(item)
            .trim_start();
        let end = if item.starts_with("mod ") && item.find('{') < item.find(';') {
            let open = item.find('{').unwrap_or(0);
            let mut depth = 0usize;
            let mut end = item.len();
            for (offset, c) in item[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + offset + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        } else if item.starts_with("use ") {
            item.find(';').map_or(item.len(), |semi| semi + 1)
        } else {
            0 // another test-only item: keep it
        };
        let consumed = rest.len() - item.len() + end;
        rest = rest[consumed..].to_owned();
    }
    out.push_str(&rest);
    out
}

/// Every `use` declaration of `code`: whether it re-exports (`pub use`), and its tree
/// without whitespace (`a::{b,c::d}`, aliases as `x as y`).
fn use_declarations(code: &str) -> Vec<(bool, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(found_at) = code[from..].find("use ") {
        let at = from + found_at;
        from = at + 4;
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let Some(semi) = code[at..].find(';') else {
            break;
        };
        let before = code[..at].trim_end();
        // `pub use`, `pub(crate) use`, `pub(in path) use`
        let before = match before.strip_suffix(')') {
            Some(head) => head.rsplit_once('(').map_or(head, |(head, _)| head),
            None => before,
        };
        let public = before
            .strip_suffix("pub")
            .is_some_and(|head| !head.chars().next_back().is_some_and(is_ident));
        let tree = code[at + 4..at + semi]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let tree = tree
            .replace(" as ", "\u{0}")
            .replace(' ', "")
            .replace('\u{0}', " as ");
        found.push((public, tree));
        from = at + semi;
    }
    found
}

/// The paths a use tree names: `a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.to_owned()];
    };
    let prefix = &tree[..open];
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    items
        .into_iter()
        .filter(|item| !item.is_empty())
        .flat_map(expand)
        .map(|path| format!("{prefix}{path}"))
        .collect()
}

/// Every path of two or more segments in `code` (`super::store::fail`), outside `use`
/// declarations.
fn paths(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || ident_before(&chars, i) || (i > 0 && chars[i - 1] == ':') {
            i += 1;
            continue;
        }
        let mut path = String::new();
        let mut segments = 0;
        loop {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            if start == i {
                break;
            }
            path.extend(&chars[start..i]);
            segments += 1;
            if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
                path.push_str("::");
                i += 2;
            } else {
                break;
            }
        }
        if segments > 1 {
            found.push(path.trim_end_matches(':').to_owned());
        }
    }
    found
}

/// The files of the crate, what each re-exports, and the file each path leads to.
struct Crate {
    modules: HashSet<ModulePath>,
    /// module -> name it re-exports -> the path it re-exports.
    reexports: HashMap<ModulePath, HashMap<String, Vec<String>>>,
}

impl Crate {
    /// The file a path written in module `me` leads to, through re-exports: the deepest
    /// module it names, or the module defining the item it names. `None` for paths
    /// outside the crate.
    fn resolve(&self, me: &[String], path: &[String], depth: usize) -> Option<ModulePath> {
        let (mut module, rest): (ModulePath, &[String]) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (me.to_vec(), &path[1..]),
            "super" => {
                let supers = path.iter().take_while(|s| *s == "super").count();
                (
                    me[..me.len().saturating_sub(supers)].to_vec(),
                    &path[supers..],
                )
            }
            first => {
                let mut child = me.to_vec();
                child.push(first.to_owned());
                if !self.modules.contains(&child) {
                    return None;
                }
                (me.to_vec(), path)
            }
        };
        for segment in rest {
            let name = segment.split(" as ").next().unwrap_or(segment);
            if name == "self" || name == "*" {
                break;
            }
            let mut child = module.clone();
            child.push(name.to_owned());
            if self.modules.contains(&child) {
                module = child;
                continue;
            }
            if depth < 8
                && let Some(target) = self.reexports.get(&module).and_then(|r| r.get(name))
                && let Some(origin) = self.resolve(&module, target, depth + 1)
            {
                return Some(origin);
            }
            break;
        }
        Some(module)
    }
}

/// Every import circle of `sources` (sets of two or more files that depend on each
/// other), each with its files' folders.
fn circles(sources: &[Source]) -> Vec<Vec<(ModulePath, ModulePath)>> {
    let modules: HashSet<ModulePath> = sources.iter().map(|s| s.module.clone()).collect();
    let mut reexports: HashMap<ModulePath, HashMap<String, Vec<String>>> = HashMap::new();
    for source in sources {
        for (_, tree) in use_declarations(&source.code)
            .into_iter()
            .filter(|(public, _)| *public)
        {
            for path in expand(&tree) {
                let segments: Vec<String> = path.split("::").map(str::to_owned).collect();
                let last = segments.last().cloned().unwrap_or_default();
                let name = last.rsplit(" as ").next().unwrap_or(&last).to_owned();
                reexports
                    .entry(source.module.clone())
                    .or_default()
                    .insert(name, segments);
            }
        }
    }
    let krate = Crate { modules, reexports };
    let index: HashMap<&ModulePath, usize> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| (&s.module, i))
        .collect();
    let mut edges: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); sources.len()];
    for (from, source) in sources.iter().enumerate() {
        let mut named: Vec<String> = use_declarations(&source.code)
            .into_iter()
            .filter(|(public, _)| !public)
            .flat_map(|(_, tree)| expand(&tree))
            .collect();
        named.extend(paths(&strip_uses(&source.code)));
        for path in named {
            let segments: Vec<String> = path.split("::").map(str::to_owned).collect();
            if let Some(to) = krate
                .resolve(&source.module, &segments, 0)
                .and_then(|m| index.get(&m).copied())
                && to != from
            {
                edges[from].insert(to);
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            component
                .into_iter()
                .map(|i| (sources[i].module.clone(), sources[i].folder.clone()))
                .collect()
        })
        .collect()
}

/// `code` without its `use` declarations.
fn strip_uses(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let keyword = !rest[..at].chars().next_back().is_some_and(is_ident);
        match rest[at..].find(';') {
            Some(semi) if keyword => {
                out.push_str(&rest[..at]);
                rest = &rest[at + semi + 1..];
            }
            _ => {
                out.push_str(&rest[..at + 4]);
                rest = &rest[at + 4..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Tarjan's strongly connected components of a graph given as each node's successors.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            let edges = self.edges;
            for &w in &edges[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: vec![None; edges.len()],
        low: vec![0; edges.len()],
        stack: Vec::new(),
        on_stack: vec![false; edges.len()],
        next: 0,
        components: Vec::new(),
    };
    for v in 0..edges.len() {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.components
}

#[test]
fn import_circles_stay_inside_one_small_module() {
    let mut broken = Vec::new();
    for circle in circles(&sources()) {
        let folders: BTreeSet<&ModulePath> = circle.iter().map(|(_, folder)| folder).collect();
        if folders.len() > 1 || circle.len() > MAX_CIRCLE {
            let mut files: Vec<String> = circle
                .iter()
                .map(|(module, _)| format!("crate::{}", module.join("::")))
                .collect();
            files.sort();
            broken.push(format!("{} files: {}", files.len(), files.join(", ")));
        }
    }
    assert!(
        broken.is_empty(),
        "files that import each other in a circle across modules or over {MAX_CIRCLE} files \
         (move what they share into a file of its own that imports none of them):\n  {}",
        broken.join("\n  ")
    );
}

#[test]
fn the_circle_scan_reads_use_trees_paths_and_re_exports() {
    let code = code_only(
        "pub(crate) use store::{self, fail as f}; // use crate::x;\n\
         let s = \"crate::y::z\"; let c = '\"'; super::a::b(); x::<T>::y\n\
         #[cfg(test)]\nmod tests { use crate::q; }\nuse crate::{r::S, t};",
    );
    let code = without_test_modules(&code);
    assert_eq!(
        use_declarations(&code),
        [
            (true, "store::{self,fail as f}".to_owned()),
            (false, "crate::{r::S,t}".to_owned())
        ]
    );
    assert_eq!(
        expand("crate::{r::{S, T}, t}".replace(' ', "").as_str()),
        ["crate::r::S", "crate::r::T", "crate::t"]
    );
    assert_eq!(paths(&strip_uses(&code)), ["super::a::b"]);
    let module = |m: &[&str]| m.iter().map(|s| (*s).to_owned()).collect::<ModulePath>();
    let krate = Crate {
        modules: [
            module(&[]),
            module(&["registry"]),
            module(&["registry", "store"]),
            module(&["registry", "store", "result"]),
        ]
        .into_iter()
        .collect(),
        reexports: [(
            module(&["registry", "store"]),
            [(
                "fail".to_owned(),
                vec!["result".to_owned(), "fail".to_owned()],
            )]
            .into_iter()
            .collect(),
        )]
        .into_iter()
        .collect(),
    };
    let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        krate.resolve(&module(&["registry"]), &path("store::fail"), 0),
        Some(module(&["registry", "store", "result"]))
    );
    assert_eq!(
        krate.resolve(
            &module(&["registry", "store", "result"]),
            &path("super::super::Registry"),
            0
        ),
        Some(module(&["registry"]))
    );
    assert_eq!(
        krate.resolve(&module(&["registry"]), &path("serde_json::json"), 0),
        None
    );
}

#[test]
fn a_circle_across_modules_is_found_through_re_exports() {
    let source = |module: &[&str], folder: &[&str], code: &str| Source {
        module: module.iter().map(|s| (*s).to_owned()).collect(),
        folder: folder.iter().map(|s| (*s).to_owned()).collect(),
        code: code.to_owned(),
    };
    let sources = [
        source(&[], &[], "mod a; mod b;"),
        source(&["a"], &["a"], "mod x; pub(crate) use x::Thing;"),
        source(&["a", "x"], &["a"], "fn f() { crate::b::g() }"),
        source(&["b"], &[], "use crate::a::Thing;"),
    ];
    let found = circles(&sources);
    assert_eq!(
        found.len(),
        1,
        "one circle: a/x -> b -> a/x (through a's re-export)"
    );
    let mut files: Vec<String> = found[0].iter().map(|(m, _)| m.join("::")).collect();
    files.sort();
    assert_eq!(files, ["a::x", "b"]);
}
