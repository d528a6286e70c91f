//! The kubeconfig file: its model, loading with client-go's precedence, and merging.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// A kubeconfig file (or several merged): clusters, users, contexts and the current context.
///
/// # Examples
///
/// ```
/// use kubeclient::config::Kubeconfig;
///
/// let kubeconfig = Kubeconfig::from_yaml(r#"
/// apiVersion: v1
/// kind: Config
/// clusters: [{name: kind, cluster: {server: "https://127.0.0.1:6443"}}]
/// users: [{name: admin, user: {token: abc}}]
/// contexts: [{name: kind, context: {cluster: kind, user: admin}}]
/// current-context: kind
/// "#).unwrap();
/// assert_eq!(kubeconfig.current_context.as_deref(), Some("kind"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[doc(alias = "clientcmdapi.Config", alias = "clientcmd")]
pub struct Kubeconfig {
    /// Named clusters.
    #[serde(default, deserialize_with = "null_as_default")]
    pub clusters: Vec<NamedCluster>,
    /// Named users (`users` in the file).
    #[serde(default, rename = "users", deserialize_with = "null_as_default")]
    pub auth_infos: Vec<NamedAuthInfo>,
    /// Named contexts.
    #[serde(default, deserialize_with = "null_as_default")]
    pub contexts: Vec<NamedContext>,
    /// The context used when none is chosen.
    #[serde(
        default,
        rename = "current-context",
        skip_serializing_if = "Option::is_none"
    )]
    pub current_context: Option<String>,
    /// The files this was read from, in precedence order (not part of the file format).
    #[serde(skip)]
    pub sources: Vec<PathBuf>,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A cluster entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedCluster {
    /// The entry's name.
    pub name: String,
    /// The cluster.
    #[serde(default)]
    pub cluster: Option<Cluster>,
}

/// How to reach a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// The API server URL.
    #[serde(default)]
    pub server: Option<String>,
    /// A PEM file of CA certificates (relative paths are relative to the kubeconfig file).
    #[serde(default)]
    pub certificate_authority: Option<String>,
    /// Base64 PEM CA certificates.
    #[serde(default)]
    pub certificate_authority_data: Option<String>,
    /// Skip server certificate verification (insecure).
    #[serde(default)]
    pub insecure_skip_tls_verify: Option<bool>,
    /// The name to verify the server certificate against, instead of the URL's host.
    #[serde(default)]
    pub tls_server_name: Option<String>,
    /// A proxy for requests to this cluster.
    #[serde(default)]
    pub proxy_url: Option<String>,
}

/// A user entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedAuthInfo {
    /// The entry's name.
    pub name: String,
    /// The credentials.
    #[serde(default)]
    pub user: Option<AuthInfo>,
}

/// Credentials. `Debug` never shows secrets.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AuthInfo {
    /// A bearer token.
    #[serde(default)]
    pub token: Option<String>,
    /// A file holding a bearer token, re-read when it changes.
    #[serde(default, rename = "tokenFile")]
    pub token_file: Option<String>,
    /// A PEM client certificate file.
    #[serde(default)]
    pub client_certificate: Option<String>,
    /// A PEM client key file.
    #[serde(default)]
    pub client_key: Option<String>,
    /// Base64 PEM client certificate.
    #[serde(default)]
    pub client_certificate_data: Option<String>,
    /// Base64 PEM client key.
    #[serde(default)]
    pub client_key_data: Option<String>,
    /// Basic auth user name.
    #[serde(default)]
    pub username: Option<String>,
    /// Basic auth password.
    #[serde(default)]
    pub password: Option<String>,
    /// An exec credential plugin.
    #[serde(default)]
    pub exec: Option<ExecConfig>,
    /// An auth provider: `oidc` is supported ([`OidcConfig`](super::OidcConfig)); gcp and
    /// azure, gone from client-go too, are refused (use an exec plugin).
    #[serde(default, rename = "auth-provider")]
    pub auth_provider: Option<serde_json::Value>,
    /// The user to act as (`as`).
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub impersonate_user: Option<String>,
    /// The uid to act as (`as-uid`).
    #[serde(default, rename = "as-uid", skip_serializing_if = "Option::is_none")]
    pub impersonate_uid: Option<String>,
    /// The groups to act in (`as-groups`).
    #[serde(default, rename = "as-groups", skip_serializing_if = "Option::is_none")]
    pub impersonate_groups: Option<Vec<String>>,
    /// Extra fields of the impersonated user (`as-user-extra`).
    #[serde(
        default,
        rename = "as-user-extra",
        skip_serializing_if = "Option::is_none"
    )]
    pub impersonate_user_extra: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

impl std::fmt::Debug for AuthInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("AuthInfo")
            .field("token", &redacted(&self.token))
            .field("token_file", &self.token_file)
            .field("client_certificate", &self.client_certificate)
            .field("client_key", &self.client_key)
            .field(
                "client_certificate_data",
                &redacted(&self.client_certificate_data),
            )
            .field("client_key_data", &redacted(&self.client_key_data))
            .field("username", &self.username)
            .field("password", &redacted(&self.password))
            .field("exec", &self.exec)
            .field(
                "auth_provider",
                &self.auth_provider.as_ref().map(|_| "<redacted>"),
            )
            .field("impersonate_user", &self.impersonate_user)
            .field("impersonate_groups", &self.impersonate_groups)
            .finish()
    }
}

/// An exec credential plugin (`client.authentication.k8s.io/v1` or `v1beta1`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `.../v1beta1`.
    #[serde(default)]
    pub api_version: Option<String>,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    #[serde(default, deserialize_with = "null_as_default")]
    pub args: Vec<String>,
    /// Extra environment variables.
    #[serde(default, deserialize_with = "null_as_default")]
    pub env: Vec<ExecEnvVar>,
    /// Printed when the command cannot be found.
    #[serde(default)]
    pub install_hint: Option<String>,
    /// Pass the cluster's details in `KUBERNETES_EXEC_INFO`.
    #[serde(default)]
    pub provide_cluster_info: bool,
    /// `Never`, `IfAvailable` or `Always` (kubeclient never runs plugins interactively).
    #[serde(default)]
    pub interactive_mode: Option<String>,
}

/// One environment variable for an exec plugin.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecEnvVar {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// A context entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedContext {
    /// The entry's name.
    pub name: String,
    /// The context.
    #[serde(default)]
    pub context: Option<Context>,
}

/// A cluster, a user and a default namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// The cluster entry's name.
    #[serde(default)]
    pub cluster: String,
    /// The user entry's name.
    #[serde(default)]
    pub user: String,
    /// The default namespace.
    #[serde(default)]
    pub namespace: Option<String>,
}

impl Kubeconfig {
    /// Parses kubeconfig YAML (or JSON). Relative file paths stay as written.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Parse`] naming what is wrong.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        serde_saphyr::from_str(text).map_err(|err| ConfigError::Parse {
            path: None,
            message: err.to_string(),
        })
    }

    /// Reads one kubeconfig file, resolving relative paths in it against its directory
    /// (as client-go does).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Read`] or [`ConfigError::Parse`], naming the file.
    pub fn read_from(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut kubeconfig: Kubeconfig = if text.trim().is_empty() {
            Kubeconfig::default()
        } else {
            serde_saphyr::from_str(&text).map_err(|err| ConfigError::Parse {
                path: Some(path.to_owned()),
                message: err.to_string(),
            })?
        };
        let base = path.parent().unwrap_or_else(|| Path::new("."));
        kubeconfig.resolve_paths(base);
        kubeconfig.sources = vec![path.to_owned()];
        Ok(kubeconfig)
    }

    fn resolve_paths(&mut self, base: &Path) {
        let resolve = |value: &mut Option<String>| {
            if let Some(path) = value.as_mut()
                && !path.is_empty()
                && Path::new(path.as_str()).is_relative()
            {
                *path = base.join(path.as_str()).display().to_string();
            }
        };
        for cluster in self.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
            resolve(&mut cluster.certificate_authority);
        }
        for user in self.auth_infos.iter_mut().filter_map(|u| u.user.as_mut()) {
            resolve(&mut user.client_certificate);
            resolve(&mut user.client_key);
            resolve(&mut user.token_file);
            if let Some(exec) = user.exec.as_mut()
                && exec.command.contains(std::path::MAIN_SEPARATOR)
                && Path::new(&exec.command).is_relative()
            {
                exec.command = base.join(&exec.command).display().to_string();
            }
        }
    }

    /// Merges `other` into `self` with client-go's rules: for each cluster, user and
    /// context name the first definition wins, and the first non-empty current-context wins.
    #[must_use]
    pub fn merge(mut self, other: Kubeconfig) -> Self {
        for cluster in other.clusters {
            if !self.clusters.iter().any(|c| c.name == cluster.name) {
                self.clusters.push(cluster);
            }
        }
        for user in other.auth_infos {
            if !self.auth_infos.iter().any(|u| u.name == user.name) {
                self.auth_infos.push(user);
            }
        }
        for context in other.contexts {
            if !self.contexts.iter().any(|c| c.name == context.name) {
                self.contexts.push(context);
            }
        }
        if self.current_context.as_deref().is_none_or(str::is_empty) {
            self.current_context = other.current_context;
        }
        self.sources.extend(other.sources);
        self
    }

    /// Loads the kubeconfig the way kubectl does: the files in `KUBECONFIG` (separated by
    /// `:`, `;` on Windows; missing files are skipped) merged in order, or else
    /// `~/.kube/config`. `Ok(None)` when there is none.
    ///
    /// # Errors
    ///
    /// A file that exists but cannot be read or parsed.
    pub fn from_default_locations() -> Result<Option<Self>, ConfigError> {
        Kubeconfig::from_locations(
            std::env::var_os("KUBECONFIG").as_deref(),
            home_dir().as_deref(),
        )
    }

    /// [`from_default_locations`](Self::from_default_locations) with the `KUBECONFIG` value
    /// and home directory given (for tests and embedding).
    ///
    /// # Errors
    ///
    /// A file that exists but cannot be read or parsed.
    pub fn from_locations(
        kubeconfig_env: Option<&std::ffi::OsStr>,
        home: Option<&Path>,
    ) -> Result<Option<Self>, ConfigError> {
        if let Some(list) = kubeconfig_env.filter(|v| !v.is_empty()) {
            let mut merged: Option<Kubeconfig> = None;
            for path in std::env::split_paths(list).filter(|p| !p.as_os_str().is_empty()) {
                if !path.exists() {
                    continue;
                }
                let file = Kubeconfig::read_from(&path)?;
                merged = Some(match merged {
                    Some(merged) => merged.merge(file),
                    None => file,
                });
            }
            return Ok(merged);
        }
        let Some(home) = home else {
            return Ok(None);
        };
        let default = home.join(".kube").join("config");
        if default.exists() {
            Ok(Some(Kubeconfig::read_from(default)?))
        } else {
            Ok(None)
        }
    }

    /// Where this configuration came from, for error messages.
    pub(crate) fn describe_sources(&self) -> String {
        match self.sources.as_slice() {
            [] => "the kubeconfig".to_owned(),
            [one] => format!("kubeconfig {}", one.display()),
            many => format!(
                "kubeconfig {}",
                many.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(":")
            ),
        }
    }
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
}

/// A named kubeconfig entry (cluster, user or context) and what it holds.
pub(crate) trait NamedEntry {
    /// What the entry holds.
    type Entry: Clone + Default;
    /// The entry's name.
    fn name(&self) -> &str;
    /// What it holds, if anything.
    fn entry(&self) -> Option<&Self::Entry>;
}

impl NamedEntry for NamedCluster {
    type Entry = Cluster;
    fn name(&self) -> &str {
        &self.name
    }
    fn entry(&self) -> Option<&Cluster> {
        self.cluster.as_ref()
    }
}

impl NamedEntry for NamedAuthInfo {
    type Entry = AuthInfo;
    fn name(&self) -> &str {
        &self.name
    }
    fn entry(&self) -> Option<&AuthInfo> {
        self.user.as_ref()
    }
}

impl NamedEntry for NamedContext {
    type Entry = Context;
    fn name(&self) -> &str {
        &self.name
    }
    fn entry(&self) -> Option<&Context> {
        self.context.as_ref()
    }
}
