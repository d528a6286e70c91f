//! Client configuration, as client-go's `clientcmd` and `rest.InClusterConfig` build it:
//! kubeconfig files (precedence, merging, contexts), in-cluster service accounts, and the
//! credentials each can name (tokens, token files, client certificates, basic auth, exec
//! plugins).
//!
//! # Examples
//!
//! ```no_run
//! # async fn run() -> Result<(), kubeclient::config::ConfigError> {
//! // KUBECONFIG, ~/.kube/config, or the in-cluster service account, like kubectl.
//! let config = kubeclient::Config::infer().await?;
//! println!("talking to {}", config.cluster_url);
//! # Ok(()) }
//! ```

pub(crate) mod exec;
mod impersonation;
mod kubeconfig;
pub(crate) mod oidc;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;

pub use exec::{ExecCredential, ExecError};
pub use impersonation::{Impersonation, ImpersonationError};
use kubeconfig::NamedEntry;
pub use kubeconfig::{
    AuthInfo, Cluster, Context, ExecConfig, ExecEnvVar, Kubeconfig, NamedAuthInfo, NamedCluster,
    NamedContext,
};
pub use oidc::{OAuthRefusal, OidcConfig, OidcError, OidcPersistTarget};

/// Where a service account's files are mounted in a pod.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The default client-side rate limit: queries per second. client-go's default is 5 (burst
/// 10), which throttles informer-heavy programs; kubectl uses 50 (burst 300). We use 50/100.
pub const DEFAULT_QPS: f32 = 50.0;
/// The default client-side burst.
pub const DEFAULT_BURST: u32 = 100;

/// How requests authenticate. `Debug` never shows secrets.
#[derive(Clone, Default, PartialEq)]
pub enum Credentials {
    /// No credentials.
    #[default]
    None,
    /// A bearer token.
    Token(String),
    /// A bearer token read from a file, re-read when the file changes (rotated
    /// service-account tokens).
    TokenFile(PathBuf),
    /// HTTP basic auth.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
    /// An exec plugin that prints an `ExecCredential`.
    Exec(Box<ExecConfig>),
    /// The kubeconfig's `oidc` auth provider: an id-token refreshed with a refresh token.
    Oidc(Box<OidcConfig>),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::Token(_) => f.write_str("Token(<redacted>)"),
            Credentials::TokenFile(path) => f.debug_tuple("TokenFile").field(path).finish(),
            Credentials::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Credentials::Exec(exec) => f.debug_tuple("Exec").field(&exec.command).finish(),
            Credentials::Oidc(oidc) => f.debug_tuple("Oidc").field(oidc).finish(),
        }
    }
}

/// A client certificate and key (PEM). `Debug` never shows the key.
#[derive(Clone, PartialEq)]
pub struct ClientIdentity {
    /// The certificate chain, PEM.
    pub certificate_pem: Vec<u8>,
    /// The private key, PEM.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("key_pem", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// Where a client certificate and its key are read from; the client re-reads them when
/// they change (client-go's certificate rotation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCertificateFiles {
    /// The certificate (chain), PEM.
    pub certificate: PathBuf,
    /// The private key, PEM.
    pub key: PathBuf,
}

/// Everything needed to talk to one API server as one user.
#[derive(Clone, Debug)]
#[doc(alias = "rest.Config", alias = "RESTConfig")]
pub struct Config {
    /// The API server URL, e.g. `https://10.0.0.1:6443`.
    pub cluster_url: http::Uri,
    /// The namespace used when none is given.
    pub default_namespace: String,
    /// Extra root certificates (PEM) to trust; when empty the system roots are used.
    pub root_certificates_pem: Vec<u8>,
    /// Skip server certificate verification. Insecure: for test clusters only.
    pub accept_invalid_certs: bool,
    /// The name to verify the server certificate against, if not the URL's host.
    pub tls_server_name: Option<String>,
    /// A proxy URL from the kubeconfig (`HTTPS_PROXY` applies when unset).
    pub proxy_url: Option<String>,
    /// How requests authenticate.
    pub credentials: Credentials,
    /// A client certificate for TLS authentication.
    pub client_identity: Option<ClientIdentity>,
    /// The files [`client_identity`](Self::client_identity) was read from, if it came from
    /// files: the client reads them again when they change, and new connections present
    /// the new certificate (see [`cert_rotation`](crate::rest::cert_rotation)). Set by the
    /// kubeconfig loader for `client-certificate`/`client-key` paths.
    pub client_certificate_files: Option<ClientCertificateFiles>,
    /// Per-request timeout (watches excepted). Default 30 s... none for watches.
    pub timeout: Option<Duration>,
    /// Client-side rate limit in queries per second; 0 disables it. Default [`DEFAULT_QPS`].
    pub qps: f32,
    /// Client-side burst. Default [`DEFAULT_BURST`].
    pub burst: u32,
    /// A watch asked to end after `timeoutSeconds` is given up as silent when no byte
    /// arrived for this long past that timeout: a server or proxy that sent headers and
    /// then went quiet is noticed, and the watch ends with a transport error so the
    /// reflector reconnects. Default [`DEFAULT_WATCH_IDLE_MARGIN`] (30 s).
    pub watch_idle_margin: Duration,
    /// The `User-Agent` of every request (client-go's `rest.Config.UserAgent`); `None`
    /// sends `kubeclient/VERSION (OS/ARCH) kubernetes/unknown`. Servers use it as the
    /// default field manager and in audit logs.
    pub user_agent: Option<String>,
    /// Where the client reports request latencies, results and rate-limiter waits
    /// (e.g. a [`Metrics`](crate::metrics::Metrics) registry); `None` reports nothing.
    pub metrics: Option<std::sync::Arc<dyn crate::rest::ClientMetrics>>,
    /// The encoding of built-in kinds (client-go's `ContentConfig`): protobuf by default
    /// (JSON for custom resources); [`ContentType::Json`](crate::rest::ContentType::Json)
    /// for JSON everywhere.
    pub content_type: crate::rest::ContentType,
    /// The user every request acts as (client-go's `rest.Config.Impersonate`, a kubeconfig
    /// user's `as`, `as-groups`, `as-uid`, `as-user-extra`); `None` acts as the
    /// credentials' own user.
    pub impersonate: Option<Impersonation>,
}

/// The default [`Config::watch_idle_margin`].
pub const DEFAULT_WATCH_IDLE_MARGIN: Duration = Duration::from_secs(30);

/// Why a configuration could not be loaded. Every message says which file or field and
/// what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A kubeconfig file could not be read.
    #[error("cannot read kubeconfig {path} (check the path in KUBECONFIG or --kubeconfig)")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A kubeconfig file is not valid YAML of the expected shape.
    #[error("cannot parse {}: {message} (is it a kubeconfig file? `kubectl config view` shows what kubectl sees)", path.as_ref().map_or_else(|| "the kubeconfig".to_owned(), |p| format!("kubeconfig {}", p.display())))]
    Parse {
        /// The file, if read from one.
        path: Option<PathBuf>,
        /// What is wrong.
        message: String,
    },
    /// No kubeconfig and not running in a cluster.
    #[error(
        "no configuration found: set KUBECONFIG, create ~/.kube/config, or run inside a pod with a service account"
    )]
    NotFound,
    /// The kubeconfig names no context to use.
    #[error(
        "{source_name} has no current-context; pick one with a context option or `kubectl config use-context NAME`"
    )]
    NoCurrentContext {
        /// Where the config came from.
        source_name: String,
    },
    /// A named entry does not exist.
    #[error(
        "{source_name}: {kind} {name:?} not found (known: {known}); check the name or run `kubectl config get-contexts`"
    )]
    NotDefined {
        /// Where the config came from.
        source_name: String,
        /// `context`, `cluster` or `user`.
        kind: &'static str,
        /// The missing name.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// A field has an unusable value.
    #[error("{source_name}: {field}: {message}")]
    InvalidField {
        /// Where the config came from.
        source_name: String,
        /// The field, e.g. `clusters[kind].server`.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// In-cluster configuration failed.
    #[error("in-cluster configuration: {0}")]
    InCluster(String),
}

/// Which entries of a kubeconfig to use; empty fields follow the file.
#[derive(Clone, Debug, Default)]
pub struct KubeconfigOptions {
    /// The context (default: `current-context`).
    pub context: Option<String>,
    /// Override the context's cluster.
    pub cluster: Option<String>,
    /// Override the context's user.
    pub user: Option<String>,
}

impl Config {
    /// A configuration for a URL with no credentials and default settings.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = kubeclient::Config::new("http://127.0.0.1:8080".parse().unwrap());
    /// assert_eq!(config.default_namespace, "default");
    /// ```
    #[must_use]
    pub fn new(cluster_url: http::Uri) -> Self {
        Config {
            cluster_url,
            default_namespace: "default".to_owned(),
            root_certificates_pem: Vec::new(),
            accept_invalid_certs: false,
            tls_server_name: None,
            proxy_url: None,
            credentials: Credentials::None,
            client_identity: None,
            client_certificate_files: None,
            timeout: Some(Duration::from_secs(30)),
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
            watch_idle_margin: DEFAULT_WATCH_IDLE_MARGIN,
            user_agent: None,
            metrics: None,
            content_type: crate::rest::ContentType::default(),
            impersonate: None,
        }
    }

    /// The configuration kubectl would use: `KUBECONFIG` or `~/.kube/config` (current
    /// context), else the in-cluster service account.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the file and field at fault, or [`ConfigError::NotFound`].
    pub async fn infer() -> Result<Self, ConfigError> {
        // Reading files blocks: do it on the blocking pool, off the async workers.
        match tokio::task::spawn_blocking(Self::infer_blocking).await {
            Ok(result) => result,
            Err(join) => match join.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Cancelled (the runtime is shutting down): read here instead.
                Err(_) => Self::infer_blocking(),
            },
        }
    }

    /// [`infer`](Self::infer) for code that is not async (it reads files on this thread).
    ///
    /// # Errors
    ///
    /// As [`infer`](Self::infer).
    pub fn infer_blocking() -> Result<Self, ConfigError> {
        match Kubeconfig::from_default_locations()? {
            Some(kubeconfig) => Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default()),
            None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => Config::incluster(),
            None => Err(ConfigError::NotFound),
        }
    }

    /// The configuration of one context of a kubeconfig.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the missing entry or bad field.
    pub fn from_kubeconfig(
        kubeconfig: &Kubeconfig,
        options: &KubeconfigOptions,
    ) -> Result<Self, ConfigError> {
        let source_name = kubeconfig.describe_sources();
        let context_name = match options
            .context
            .as_deref()
            .or(kubeconfig.current_context.as_deref())
        {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => return Err(ConfigError::NoCurrentContext { source_name }),
        };
        let context: Context = lookup_entry(
            &kubeconfig.contexts,
            "context",
            &context_name,
            false,
            &source_name,
        )?;
        let cluster_name = options
            .cluster
            .clone()
            .unwrap_or_else(|| context.cluster.clone());
        let cluster: Cluster = lookup_entry(
            &kubeconfig.clusters,
            "cluster",
            &cluster_name,
            false,
            &source_name,
        )?;
        let user_name = options.user.clone().unwrap_or_else(|| context.user.clone());
        let user = if user_name.is_empty() {
            AuthInfo::default()
        } else {
            lookup_entry(
                &kubeconfig.auth_infos,
                "user",
                &user_name,
                true,
                &source_name,
            )?
        };
        let invalid = |field: String, message: String| ConfigError::InvalidField {
            source_name: source_name.clone(),
            field,
            message,
        };
        let server = cluster
            .server
            .clone()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                invalid(
                    format!("clusters[{cluster_name}].server"),
                    "missing; set it to the API server URL, e.g. https://host:6443".to_owned(),
                )
            })?;
        let cluster_url: http::Uri = server.parse().map_err(|err| {
            invalid(
                format!("clusters[{cluster_name}].server"),
                format!("{server:?} is not a URL ({err})"),
            )
        })?;
        let mut config = Config::new(cluster_url);
        let impersonation = Impersonation {
            user: user.impersonate_user.clone().unwrap_or_default(),
            uid: user.impersonate_uid.clone().filter(|uid| !uid.is_empty()),
            groups: user.impersonate_groups.clone().unwrap_or_default(),
            extra: user.impersonate_user_extra.clone().unwrap_or_default(),
        };
        if !impersonation.is_empty() {
            if let Err(err) = impersonation.headers() {
                return Err(invalid(format!("users[{user_name}].as"), err.to_string()));
            }
            config.impersonate = Some(impersonation);
        }
        if let Some(namespace) = context.namespace.filter(|n| !n.is_empty()) {
            config.default_namespace = namespace;
        }
        config.accept_invalid_certs = cluster.insecure_skip_tls_verify.unwrap_or(false);
        config.tls_server_name = cluster.tls_server_name.clone();
        config.proxy_url = cluster.proxy_url.clone();
        config.root_certificates_pem = data_or_file(
            cluster.certificate_authority_data.as_deref(),
            cluster.certificate_authority.as_deref(),
            &format!("clusters[{cluster_name}].certificate-authority"),
            &invalid,
        )?
        .unwrap_or_default();
        let certificate = data_or_file(
            user.client_certificate_data.as_deref(),
            user.client_certificate.as_deref(),
            &format!("users[{user_name}].client-certificate"),
            &invalid,
        )?;
        let key = data_or_file(
            user.client_key_data.as_deref(),
            user.client_key.as_deref(),
            &format!("users[{user_name}].client-key"),
            &invalid,
        )?;
        let no_data = |data: Option<&str>| data.is_none_or(str::is_empty);
        if no_data(user.client_certificate_data.as_deref())
            && no_data(user.client_key_data.as_deref())
            && let (Some(certificate), Some(key)) = (
                user.client_certificate.as_deref().filter(|p| !p.is_empty()),
                user.client_key.as_deref().filter(|p| !p.is_empty()),
            )
        {
            config.client_certificate_files = Some(ClientCertificateFiles {
                certificate: PathBuf::from(certificate),
                key: PathBuf::from(key),
            });
        }
        config.client_identity = match (certificate, key) {
            (Some(certificate_pem), Some(key_pem)) => Some(ClientIdentity {
                certificate_pem,
                key_pem,
            }),
            (None, None) => None,
            _ => {
                return Err(invalid(
                    format!("users[{user_name}]"),
                    "a client certificate needs both client-certificate(-data) and client-key(-data)".to_owned(),
                ));
            }
        };
        config.credentials = if let Some(token) = user.token.filter(|t| !t.is_empty()) {
            Credentials::Token(token)
        } else if let Some(path) = user.token_file.filter(|t| !t.is_empty()) {
            Credentials::TokenFile(PathBuf::from(path))
        } else if let Some(exec) = user.exec {
            Credentials::Exec(Box::new(exec))
        } else if let (Some(username), Some(password)) = (user.username, user.password) {
            Credentials::Basic { username, password }
        } else if let Some(provider) = &user.auth_provider {
            let field = format!("users[{user_name}].auth-provider");
            let mut oidc = oidc_provider(provider)
                .map_err(|message| invalid(field.clone(), message))?
                .map_err(|(key, message)| invalid(format!("{field}.config.{key}"), message))?;
            oidc.persist_to = (!kubeconfig.sources.is_empty()).then(|| OidcPersistTarget {
                files: kubeconfig.sources.clone(),
                user: user_name.clone(),
            });
            Credentials::Oidc(Box::new(oidc))
        } else {
            Credentials::None
        };
        Ok(config)
    }

    /// The in-cluster configuration: `KUBERNETES_SERVICE_HOST`/`_PORT` and the service
    /// account's token (re-read when rotated), CA and namespace.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InCluster`] when not in a pod or the files are missing.
    pub fn incluster() -> Result<Self, ConfigError> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST").map_err(|_| {
            ConfigError::InCluster(
                "KUBERNETES_SERVICE_HOST is not set (not running in a pod?)".to_owned(),
            )
        })?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT")
            .map_err(|_| ConfigError::InCluster("KUBERNETES_SERVICE_PORT is not set".to_owned()))?;
        Config::incluster_from(&host, &port, Path::new(SERVICE_ACCOUNT_DIR))
    }

    /// [`incluster`](Self::incluster) with the host, port and service-account directory given.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InCluster`] when the files are missing.
    pub fn incluster_from(
        host: &str,
        port: &str,
        service_account_dir: &Path,
    ) -> Result<Self, ConfigError> {
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let url: http::Uri = format!("https://{host}:{port}").parse().map_err(|err| {
            ConfigError::InCluster(format!("bad KUBERNETES_SERVICE_HOST/PORT: {err}"))
        })?;
        let token = service_account_dir.join("token");
        if !token.exists() {
            return Err(ConfigError::InCluster(format!(
                "no service account token at {}",
                token.display()
            )));
        }
        let mut config = Config::new(url);
        config.credentials = Credentials::TokenFile(token);
        let ca = service_account_dir.join("ca.crt");
        config.root_certificates_pem = std::fs::read(&ca).map_err(|err| {
            ConfigError::InCluster(format!("cannot read {}: {err}", ca.display()))
        })?;
        if let Ok(namespace) = std::fs::read_to_string(service_account_dir.join("namespace")) {
            let namespace = namespace.trim();
            if !namespace.is_empty() {
                namespace.clone_into(&mut config.default_namespace);
            }
        }
        Ok(config)
    }
}

/// The entry called `name` among a kubeconfig's `kind` entries (an entry holding nothing is
/// missing unless `empty_ok`), or an error listing the names there are.
fn lookup_entry<N: NamedEntry>(
    entries: &[N],
    kind: &'static str,
    name: &str,
    empty_ok: bool,
    source_name: &str,
) -> Result<N::Entry, ConfigError> {
    let found = entries.iter().find(|entry| entry.name() == name);
    match found.map(|entry| entry.entry()) {
        Some(Some(entry)) => Ok(entry.clone()),
        Some(None) if empty_ok => Ok(N::Entry::default()),
        _ => {
            let known: Vec<&str> = entries.iter().map(NamedEntry::name).collect();
            Err(ConfigError::NotDefined {
                source_name: source_name.to_owned(),
                kind,
                name: name.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            })
        }
    }
}

/// `*-data` (base64) wins over the file form.
fn data_or_file(
    data: Option<&str>,
    file: Option<&str>,
    field: &str,
    invalid: &dyn Fn(String, String) -> ConfigError,
) -> Result<Option<Vec<u8>>, ConfigError> {
    if let Some(data) = data.filter(|d| !d.is_empty()) {
        let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
        return base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map(Some)
            .map_err(|err| {
                invalid(
                    format!("{field}-data"),
                    format!("not valid base64 ({err}); it must be the base64 of a PEM file"),
                )
            });
    }
    match file.filter(|f| !f.is_empty()) {
        Some(path) => std::fs::read(path)
            .map(Some)
            .map_err(|err| invalid(field.to_owned(), format!("cannot read {path}: {err}"))),
        None => Ok(None),
    }
}

/// The `oidc` settings of a kubeconfig user's `auth-provider`: `Err(message)` for another
/// provider (gcp and azure are gone from client-go too), `Ok(Err((key, message)))` for a bad
/// oidc setting.
#[allow(clippy::type_complexity)]
fn oidc_provider(
    provider: &serde_json::Value,
) -> Result<Result<OidcConfig, (&'static str, String)>, String> {
    let name = provider
        .get("name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    if name != "oidc" {
        return Err(format!(
            "the {name:?} auth provider is not supported (only oidc is); use an exec plugin (e.g. gke-gcloud-auth-plugin, kubelogin)"
        ));
    }
    let settings: std::collections::BTreeMap<String, String> = provider
        .get("config")
        .and_then(serde_json::Value::as_object)
        .map(|config| {
            config
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Ok(OidcConfig::from_provider_config(&settings))
}

#[cfg(test)]
mod tests;
