//! [`ErrorChain`]: an error and all its causes on one line, for logs and command-line
//! output. Errors of this project keep their causes in `source()` and do not repeat them
//! in their own message, so whoever prints an error prints the chain.

use std::error::Error;
use std::fmt;

/// Displays an error followed by each of its causes: `outer: cause: root cause`.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::ErrorChain;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("cannot read the config")]
/// struct ReadError(#[source] std::io::Error);
///
/// let err = ReadError(std::io::Error::other("permission denied"));
/// assert_eq!(ErrorChain(&err).to_string(), "cannot read the config: permission denied");
/// ```
pub struct ErrorChain<'a>(pub &'a (dyn Error + 'a));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(err) = cause {
            write!(f, ": {err}")?;
            cause = err.source();
        }
        Ok(())
    }
}
