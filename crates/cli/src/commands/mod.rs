//! One module per subcommand.

pub(crate) mod demo;
pub(crate) mod serve;
pub(crate) mod watch;
