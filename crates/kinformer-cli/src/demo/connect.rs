//! Reaching a server: `--server URL` (e.g. `kinformer serve`), `--kubeconfig`/`--context`,
//! or whatever kube infers (the `KUBECONFIG` file, or in-cluster).

use std::path::PathBuf;

use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Where the server is.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectArgs {
    /// URL of an API server without authentication (e.g. a `kinformer serve`).
    #[arg(long, value_name = "URL", conflicts_with_all = ["kubeconfig", "context"])]
    pub server: Option<String>,
    /// Kubeconfig file of a real cluster (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to use.
    #[arg(long)]
    pub context: Option<String>,
}

/// Why no client could be configured.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL does not parse.
    #[error("invalid server URL {0:?}: {1}")]
    Url(String, String),
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// Neither a kubeconfig nor an in-cluster environment was found.
    #[error("no cluster configuration: {0}")]
    Infer(#[from] kube::config::InferConfigError),
}

impl ConnectArgs {
    /// Whether a real cluster (kubeconfig or context) was named, as opposed to `--server`.
    pub fn is_cluster(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }

    /// The client configuration these options name; `None` if none was named and `infer` is
    /// false.
    ///
    /// # Errors
    /// [`ConnectError`] if the configuration cannot be loaded.
    ///
    /// # Cancel safety
    /// Cancel-safe (it only reads files).
    pub async fn config(&self, infer: bool) -> Result<Option<kube::Config>, ConnectError> {
        if let Some(url) = &self.server {
            let uri = url.parse().map_err(|e: axum::http::uri::InvalidUri| {
                ConnectError::Url(url.clone(), e.to_string())
            })?;
            return Ok(Some(kube::Config::new(uri)));
        }
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        if let Some(path) = &self.kubeconfig {
            let kc = Kubeconfig::read_from(path)?;
            return Ok(Some(
                kube::Config::from_custom_kubeconfig(kc, &options).await?,
            ));
        }
        if self.context.is_some() {
            return Ok(Some(kube::Config::from_kubeconfig(&options).await?));
        }
        if infer {
            return Ok(Some(kube::Config::infer().await?));
        }
        Ok(None)
    }
}
