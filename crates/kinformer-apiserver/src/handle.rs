//! The by-name store API used by tests and tools: write and read objects without HTTP.
//!
//! Resources are named as in [`crate::ResourceDef::matches_name`] (`"pods"`,
//! `"deployments.apps"`, `"apps/v1/deployments"`, `"Deployment"`). `namespace` may be `""`:
//! then the object's own `metadata.namespace` (or `default`) is used for namespaced resources.
//! Writes go through the same code as HTTP writes: same revisions, events and errors.

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::status::ApiError;
use crate::store::{PatchType, Store};

fn ns_opt(ns: &str) -> Option<&str> {
    Some(ns).filter(|s| !s.is_empty())
}

fn to_value<T: Serialize>(o: &T) -> Result<Value, ApiError> {
    serde_json::to_value(o)
        .map_err(|e| ApiError::bad_request(format!("cannot serialize object: {e}")))
}

fn from_value<T: DeserializeOwned>(v: Value) -> Result<T, ApiError> {
    serde_json::from_value(v).map_err(|e| ApiError::internal(format!("cannot decode object: {e}")))
}

fn parse(o: &std::sync::Arc<crate::object::StoredObject>) -> Result<Value, ApiError> {
    o.to_value().map_err(|e| ApiError::internal(e.to_string()))
}

impl Store {
    /// Creates an object; returns it as stored (with uid, resourceVersion, ...).
    ///
    /// # Errors
    /// The API error a client would get (404 unknown resource, 409 AlreadyExists, 422, 400).
    pub fn create(&self, resource: &str, namespace: &str, obj: Value) -> Result<Value, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        parse(&self.create_at(ridx, ns_opt(namespace), obj)?)
    }

    /// Replaces an object (optimistic concurrency on a non-empty `metadata.resourceVersion`).
    ///
    /// # Errors
    /// 404 NotFound, 409 Conflict, 400.
    pub fn update(&self, resource: &str, namespace: &str, obj: Value) -> Result<Value, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        let (name, ns) = name_ns(&obj, namespace)?;
        parse(&self.update_at(ridx, ns.as_deref(), &name, obj, false)?)
    }

    /// Replaces an object's status only.
    ///
    /// # Errors
    /// 404 NotFound, 409 Conflict, 400.
    pub fn update_status(
        &self,
        resource: &str,
        namespace: &str,
        obj: Value,
    ) -> Result<Value, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        let (name, ns) = name_ns(&obj, namespace)?;
        parse(&self.update_at(ridx, ns.as_deref(), &name, obj, true)?)
    }

    /// Applies a JSON merge patch to an object.
    ///
    /// # Errors
    /// 404 NotFound, 409 Conflict (resourceVersion in the patch), 400.
    pub fn patch(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Value, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        parse(&self.patch_at(
            ridx,
            ns_opt(namespace),
            name,
            PatchType::Merge,
            patch,
            false,
        )?)
    }

    /// Deletes an object (or marks it for deletion when it has finalizers); returns its last
    /// state.
    ///
    /// # Errors
    /// 404 NotFound.
    pub fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        parse(&self.delete_at(ridx, ns_opt(namespace), name, None, None)?)
    }

    /// The current version of an object, if it exists.
    ///
    /// # Errors
    /// 404 for an unknown resource.
    pub fn get(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        self.get_at(ridx, ns_opt(namespace), name)
            .map(|o| parse(&o))
            .transpose()
    }

    /// The full current state of a resource (all namespaces, key order) and the revision it
    /// was read at — what an informer's cache should converge to.
    ///
    /// # Errors
    /// 404 for an unknown resource.
    pub fn state(&self, resource: &str) -> Result<(u64, Vec<Value>), ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        let (rev, items) = self.snapshot_at(ridx);
        Ok((rev, items.iter().map(parse).collect::<Result<_, _>>()?))
    }

    /// The current objects of a resource, as `(namespace/name, resourceVersion)` pairs in key
    /// order: a cheap fingerprint to compare with a cache.
    ///
    /// # Errors
    /// 404 for an unknown resource.
    pub fn keys_and_versions(&self, resource: &str) -> Result<Vec<(String, String)>, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        let (_, items) = self.snapshot_at(ridx);
        Ok(items
            .iter()
            .map(|o| (o.key(), o.revision.to_string()))
            .collect())
    }

    /// Number of current objects of a resource.
    ///
    /// # Errors
    /// 404 for an unknown resource.
    pub fn len(&self, resource: &str) -> Result<usize, ApiError> {
        let (ridx, _) = self.resolve(resource)?;
        Ok(self.len_at(ridx))
    }

    /// Creates a typed object (e.g. a `k8s_openapi` `Pod`); its namespace comes from its
    /// metadata.
    ///
    /// # Errors
    /// As [`Store::create`]; 404 if `K`'s resource is not registered.
    pub fn create_typed<K>(&self, obj: &K) -> Result<K, ApiError>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        from_value(self.create(&typed_name::<K>(), "", to_value(obj)?)?)
    }

    /// Replaces a typed object.
    ///
    /// # Errors
    /// As [`Store::update`].
    pub fn update_typed<K>(&self, obj: &K) -> Result<K, ApiError>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        from_value(self.update(&typed_name::<K>(), "", to_value(obj)?)?)
    }

    /// Deletes a typed object by namespace and name.
    ///
    /// # Errors
    /// As [`Store::delete`].
    pub fn delete_typed<K>(&self, namespace: &str, name: &str) -> Result<K, ApiError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        from_value(self.delete(&typed_name::<K>(), namespace, name)?)
    }

    /// Every current object of a typed resource.
    ///
    /// # Errors
    /// 404 if not registered; 500 if an object does not decode as `K`.
    pub fn list_typed<K>(&self) -> Result<Vec<K>, ApiError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.state(&typed_name::<K>())?
            .1
            .into_iter()
            .map(from_value)
            .collect()
    }
}

/// `group/version/plural` of a typed resource.
pub fn typed_name<K: Resource<DynamicType = ()>>() -> String {
    format!("{}/{}/{}", K::group(&()), K::version(&()), K::plural(&()))
}

fn name_ns(obj: &Value, namespace: &str) -> Result<(String, Option<String>), ApiError> {
    let meta = obj.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                422,
                "Invalid",
                "metadata.name: Required value: name is required",
            )
        })?;
    let ns = ns_opt(namespace).map(str::to_string).or_else(|| {
        meta.and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    Ok((name.to_string(), ns))
}
