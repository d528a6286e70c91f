//! Exec credential plugins (`client.authentication.k8s.io/v1` and `v1beta1`): run the
//! command, read the `ExecCredential` it prints.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::ExecConfig;

/// How long a plugin may run before it is considered hung.
const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// What an exec plugin printed. `Debug` never shows secrets.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecCredential {
    /// The bearer token, if any.
    #[serde(default)]
    pub token: Option<String>,
    /// A client certificate (PEM), if any.
    #[serde(default)]
    pub client_certificate_data: Option<String>,
    /// Its key (PEM).
    #[serde(default)]
    pub client_key_data: Option<String>,
    /// When the credential expires (RFC 3339); cached until then, or until a 401.
    #[serde(default)]
    pub expiration_timestamp: Option<String>,
}

impl std::fmt::Debug for ExecCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecCredential")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field(
                "client_certificate_data",
                &self.client_certificate_data.as_ref().map(|_| "<present>"),
            )
            .field(
                "client_key_data",
                &self.client_key_data.as_ref().map(|_| "<redacted>"),
            )
            .field("expiration_timestamp", &self.expiration_timestamp)
            .finish()
    }
}

impl ExecCredential {
    /// The expiry, if given and parsable.
    #[must_use]
    pub fn expires_at(&self) -> Option<jiff::Timestamp> {
        self.expiration_timestamp
            .as_deref()
            .and_then(|t| t.parse().ok())
    }
}

/// Running an exec plugin failed. The message names the command and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The command could not be started.
    #[error("exec plugin {command:?} could not be started{hint}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
        /// The plugin's install hint, prefixed with a newline, or empty.
        hint: String,
    },
    /// The command failed.
    #[error("exec plugin {command:?} exited with {status}: {stderr}")]
    Failed {
        /// The command.
        command: String,
        /// The exit status.
        status: String,
        /// The start of what it printed on stderr.
        stderr: String,
    },
    /// The command did not finish in time.
    #[error(
        "exec plugin {command:?} did not finish within {0:?}; is it waiting for input?",
        EXEC_TIMEOUT
    )]
    Timeout {
        /// The command.
        command: String,
    },
    /// The output was not an ExecCredential.
    #[error("exec plugin {command:?} printed something that is not an ExecCredential: {message}")]
    BadOutput {
        /// The command.
        command: String,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
struct ExecCredentialObject {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    status: Option<ExecCredential>,
}

/// Runs the plugin and parses its credential. `cluster` is passed in
/// `KUBERNETES_EXEC_INFO` when the plugin asks for cluster info.
///
/// # Errors
///
/// [`ExecError`] naming the command.
pub(crate) async fn run_exec_plugin(
    exec: &ExecConfig,
    cluster_server: &str,
) -> Result<ExecCredential, ExecError> {
    let api_version = exec
        .api_version
        .clone()
        .unwrap_or_else(|| "client.authentication.k8s.io/v1".to_owned());
    let mut spec = json!({"interactive": false});
    if exec.provide_cluster_info {
        spec["cluster"] = json!({"server": cluster_server});
    }
    let info = json!({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec});
    let mut command = tokio::process::Command::new(&exec.command);
    command
        .args(&exec.args)
        .env("KUBERNETES_EXEC_INFO", info.to_string())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for variable in &exec.env {
        command.env(&variable.name, &variable.value);
    }
    let output = match tokio::time::timeout(EXEC_TIMEOUT, command.output()).await {
        Err(_) => {
            return Err(ExecError::Timeout {
                command: exec.command.clone(),
            });
        }
        Ok(Err(source)) => {
            return Err(ExecError::Spawn {
                command: exec.command.clone(),
                source,
                hint: exec
                    .install_hint
                    .as_ref()
                    .map(|h| format!("\n{h}"))
                    .unwrap_or_default(),
            });
        }
        Ok(Ok(output)) => output,
    };
    if !output.status.success() {
        let stderr: String = String::from_utf8_lossy(&output.stderr)
            .chars()
            .take(500)
            .collect();
        return Err(ExecError::Failed {
            command: exec.command.clone(),
            status: output.status.to_string(),
            stderr,
        });
    }
    parse_exec_output(&exec.command, &output.stdout)
}

/// Parses what an exec plugin printed on stdout into its credential.
///
/// # Errors
///
/// [`ExecError::BadOutput`] naming `command` when the output is not an `ExecCredential`
/// with a token or a client certificate.
pub(crate) fn parse_exec_output(command: &str, stdout: &[u8]) -> Result<ExecCredential, ExecError> {
    let bad = |message: String| ExecError::BadOutput {
        command: command.to_owned(),
        message,
    };
    let object: ExecCredentialObject =
        serde_json::from_slice(stdout).map_err(|err| bad(err.to_string()))?;
    if object.kind != "ExecCredential" {
        return Err(bad(format!(
            "kind is {:?}, expected \"ExecCredential\"",
            object.kind
        )));
    }
    let credential = object.status.ok_or_else(|| bad("no status".to_owned()))?;
    if credential.token.is_none() && credential.client_certificate_data.is_none() {
        return Err(bad(
            "status has neither a token nor a client certificate".to_owned()
        ));
    }
    Ok(credential)
}
