//! The objects labelled sharding moves between replicas.

use k8s_openapi::NamespaceResourceScope;
use kube_core::Resource;
use serde::de::DeserializeOwned;

/// A kind the labelled mode ([`Sharder`](super::Sharder), [`ShardReplica`](super::ShardReplica))
/// works on: a namespaced resource with a default dynamic type (a k8s-openapi type or a
/// derived custom resource) that decodes from the API and is shared across tasks. Every such
/// type has it; there is nothing to implement.
pub trait ShardedResource:
    Resource<Scope = NamespaceResourceScope, DynamicType: Default>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> ShardedResource for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType: Default>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}
