//! The `kubeclient` command.
//!
//! **Status: skeleton.** No subcommand works yet (`demo`, `serve`, `watch`, `get` and `bench`
//! are tracked as open issues). It says so and exits with status 2 rather than pretending.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "kubeclient {}: no subcommand is implemented yet (demo, serve, watch, get and bench are \
         tracked as open issues); see README.md for what works today",
        env!("CARGO_PKG_VERSION")
    );
    ExitCode::from(2)
}
