//! Whether stderr gets ANSI escapes (log colours, the demo's redrawn progress line): only
//! on a terminal, and never when `NO_COLOR` is set to a non-empty value
//! (<https://no-color.org>), so a log file, a pipe or a `NO_COLOR` terminal gets plain
//! lines.

use std::io::IsTerminal as _;

/// The rule, for a stderr that is (or is not) a terminal and a `NO_COLOR` value.
pub(crate) fn ansi_allowed(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

/// Whether this process's stderr gets ANSI escapes.
pub(crate) fn stderr_allows_ansi() -> bool {
    ansi_allowed(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_only_on_a_terminal_without_no_color() {
        let set = std::ffi::OsStr::new("1");
        let empty = std::ffi::OsStr::new("");
        assert!(ansi_allowed(true, None));
        assert!(ansi_allowed(true, Some(empty)));
        assert!(!ansi_allowed(true, Some(set)));
        assert!(!ansi_allowed(false, None));
    }
}
