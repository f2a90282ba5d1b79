//! [`LeaseMembers`]: membership leases as `coordination.k8s.io/v1` Leases (feature `kube`).

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;

use super::leases::{MemberLease, MemberLeases};
use crate::leaderelection::{LeaseLock, LockError, RawVersion};

/// The membership leases of one namespace on an API server: each replica's lease is a
/// [`LeaseLock`], and the others are found by listing the namespace's Leases (names filtered
/// by prefix, on the client).
#[derive(Clone)]
pub struct LeaseMembers {
    client: kube::Client,
    namespace: String,
}

impl std::fmt::Debug for LeaseMembers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseMembers")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl LeaseMembers {
    /// The Leases of `namespace`, through `client`.
    pub fn new(client: kube::Client, namespace: impl Into<String>) -> Self {
        Self {
            client,
            namespace: namespace.into(),
        }
    }
}

impl MemberLeases for LeaseMembers {
    type Lock = LeaseLock;

    fn lock(&self, name: &str, identity: &str) -> LeaseLock {
        LeaseLock::new(self.client.clone(), &self.namespace, name, identity)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<MemberLease>, LockError> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &self.namespace);
        let leases =
            api.list(&ListParams::default())
                .await
                .map_err(|error| LockError::Backend {
                    lock: format!("{}/{prefix}*", self.namespace),
                    source: Box::new(error),
                })?;
        Ok(leases
            .items
            .into_iter()
            .filter_map(|lease| {
                let name = lease.metadata.name.clone()?;
                if !name.starts_with(prefix) {
                    return None;
                }
                let version = RawVersion::from(lease.metadata.resource_version.clone()?);
                let record = crate::leaderelection::record_from_spec(lease.spec.as_ref());
                Some(MemberLease {
                    name,
                    record,
                    version,
                })
            })
            .collect())
    }
}
