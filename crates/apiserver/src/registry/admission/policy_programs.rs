//! The compiled programs of policy expressions, kept across writes: an expression is
//! compiled the first time a write evaluates it and reused while its text is the same,
//! so a changed policy takes effect on the next write without any invalidation. The
//! cache is bounded by the bytes of the texts it holds; past [`MAX_SOURCE_BYTES`] it is
//! emptied and fills again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::Program;

use crate::registry::apiextensions::cel_rules;

/// The most expression text the cache holds.
const MAX_SOURCE_BYTES: usize = 8 * 1024 * 1024;

#[derive(Default)]
struct Cache {
    programs: HashMap<String, Arc<Program>>,
    bytes: usize,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// The program of `source` reading `variables` (always the policies' variables), compiled
/// on this thread, which must be a large-stack CEL thread (`cel_stack::on_large_stack`).
///
/// # Errors
///
/// The compile error's text (`compilation failed: ...`).
pub(crate) fn program(source: &str, variables: &[&str]) -> Result<Arc<Program>, String> {
    if let Some(program) = cache()
        .lock()
        .ok()
        .and_then(|cache| cache.programs.get(source).cloned())
    {
        return Ok(program);
    }
    let program = Arc::new(cel_rules::compile_on_large_stack(source, variables)?);
    if let Ok(mut cache) = cache().lock() {
        if cache.bytes + source.len() > MAX_SOURCE_BYTES {
            *cache = Cache::default();
        }
        cache.bytes += source.len();
        cache
            .programs
            .insert(source.to_owned(), Arc::clone(&program));
    }
    Ok(program)
}
