//! Paged lists: client-go's `ListPager`.
//!
//! - Pages of [`DEFAULT_PAGE_SIZE`] (or the configured size) are fetched with `continue` tokens
//!   and joined into one list whose resource version is the first page's.
//! - Pages after the first clear `resourceVersion` and `resourceVersionMatch` (the server
//!   rejects them together with `continue`).
//! - If a continue token expires (410 `Expired` on page 2 or later), the pager makes one full,
//!   unpaginated list at the originally requested version instead.

use tracing::debug;

use crate::cache::listwatch::{ListOptions, ListWatchError, ListerWatcher, ObjectList};

/// The page size client-go's pager uses.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// A joined list and whether it came in more than one page.
#[derive(Debug)]
pub struct PagedList<K> {
    /// All items; `continue_token` is always `None`, `resource_version` is the first page's.
    pub list: ObjectList<K>,
    /// True if the server split the result into pages.
    pub paginated: bool,
}

/// Fetches a whole list page by page.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::listwatch::{ListOptions, ListPager};
/// use kinformer::kube::KubeListerWatcher;
/// use kinformer_apiserver::ApiServer;
/// use kube::Api;
/// use serde_json::json;
///
/// let server = ApiServer::start().await.unwrap();
/// for i in 0..3 {
///     let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}});
///     server.store().create("configmaps", "default", cm).unwrap();
/// }
/// let lw = KubeListerWatcher::new(Api::<ConfigMap>::namespaced(server.client().unwrap(), "default"));
/// let paged = ListPager::new(2).list(&lw, ListOptions::default()).await.unwrap();
/// assert_eq!(paged.list.items.len(), 3);
/// assert!(paged.paginated, "two pages of at most 2");
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListPager {
    page_size: u32,
    full_list_if_expired: bool,
}

impl Default for ListPager {
    fn default() -> Self {
        Self::new(DEFAULT_PAGE_SIZE)
    }
}

impl ListPager {
    /// A pager with `page_size` items per page; 0 means unpaginated (one request, no `limit`).
    pub fn new(page_size: u32) -> Self {
        Self {
            page_size,
            full_list_if_expired: true,
        }
    }

    /// Whether an expired continue token falls back to a full list (default true).
    #[must_use]
    pub fn full_list_if_expired(mut self, on: bool) -> Self {
        self.full_list_if_expired = on;
        self
    }

    /// The page size (0 = unpaginated).
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// Lists everything matching `options`. A `limit` in `options` overrides the page size.
    ///
    /// # Errors
    /// The first failing page's error (after the expired-continue fallback, if it applies).
    ///
    /// # Cancel safety
    /// Dropping the future abandons the pages fetched so far.
    pub async fn list<K, L: ListerWatcher<K>>(
        &self,
        lw: &L,
        mut options: ListOptions,
    ) -> Result<PagedList<K>, ListWatchError> {
        if options.limit.unwrap_or(0) == 0 {
            options.limit = (self.page_size > 0).then_some(self.page_size);
        }
        let requested_rv = options.resource_version.clone();
        let requested_match = options.resource_version_match;
        let mut joined: Option<ObjectList<K>> = None;
        let mut paginated = false;
        loop {
            let page = match lw.list(&options).await {
                Ok(page) => page,
                Err(err) => {
                    let on_continue_page = options.continue_token.is_some();
                    if !(self.full_list_if_expired
                        && on_continue_page
                        && (err.is_expired() || err.is_gone()))
                    {
                        return Err(err);
                    }
                    debug!(error = %err, "continue token expired; falling back to a full list");
                    options.limit = None;
                    options.continue_token = None;
                    options.resource_version = requested_rv;
                    options.resource_version_match = requested_match;
                    let mut full = lw.list(&options).await?;
                    full.continue_token = None;
                    if let Some(j) = joined {
                        let mut undecodable = j.undecodable;
                        undecodable.append(&mut full.undecodable);
                        full.undecodable = undecodable;
                    }
                    return Ok(PagedList {
                        list: full,
                        paginated,
                    });
                }
            };
            let next = page.continue_token.clone().filter(|t| !t.is_empty());
            joined = Some(match joined.take() {
                None => page,
                Some(mut j) => {
                    let ObjectList {
                        mut items,
                        mut undecodable,
                        remaining_item_count,
                        ..
                    } = page;
                    j.items.append(&mut items);
                    j.undecodable.append(&mut undecodable);
                    j.remaining_item_count = remaining_item_count;
                    j
                }
            });
            match next {
                None => {
                    let mut list = joined.unwrap_or_default();
                    list.continue_token = None;
                    return Ok(PagedList { list, paginated });
                }
                Some(token) => {
                    options.continue_token = Some(token);
                    options.resource_version = None;
                    options.resource_version_match = None;
                    paginated = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::ObjectMeta;

    use super::*;
    use crate::cache::listwatch::{ApiStatus, DecodeError, ResourceVersionMatch};
    use crate::cache::testing::FakeListerWatcher;

    fn fake(n: usize) -> FakeListerWatcher<ConfigMap> {
        let lw = FakeListerWatcher::new();
        for i in 0..n {
            lw.add(ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("cm-{i:03}")),
                    namespace: Some("ns".into()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap();
        }
        lw
    }

    fn names(list: &ObjectList<ConfigMap>) -> Vec<String> {
        list.items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn pages_are_joined_in_order_with_the_first_page_version() {
        let lw = fake(7);
        let options = ListOptions {
            resource_version: Some("0".into()),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..ListOptions::default()
        };
        let paged = ListPager::new(3).list(&lw, options).await.unwrap();
        assert!(paged.paginated);
        assert_eq!(names(&paged.list).len(), 7);
        assert_eq!(names(&paged.list)[6], "cm-006");
        assert_eq!(paged.list.resource_version, "7");
        assert_eq!(paged.list.continue_token, None);
        let calls = lw.list_calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[0].resource_version.as_deref(), Some("0"));
        assert_eq!(calls[0].limit, Some(3));
        for later in &calls[1..] {
            assert_eq!(later.resource_version, None);
            assert_eq!(later.resource_version_match, None);
            assert!(later.continue_token.is_some());
            assert_eq!(later.limit, Some(3));
        }
    }

    #[tokio::test]
    async fn a_single_page_is_not_paginated_and_zero_page_size_sends_no_limit() {
        let lw = fake(3);
        let paged = ListPager::new(500)
            .list(&lw, ListOptions::default())
            .await
            .unwrap();
        assert!(!paged.paginated);
        let paged = ListPager::new(0)
            .list(&lw, ListOptions::default())
            .await
            .unwrap();
        assert_eq!(paged.list.items.len(), 3);
        assert_eq!(lw.list_calls()[1].limit, None);
    }

    #[tokio::test]
    async fn an_expired_continue_token_falls_back_to_a_full_list_at_the_requested_version() {
        let lw = fake(5);
        lw.push_list_ok();
        lw.push_list_error(ApiStatus::expired("continue expired"));
        let options = ListOptions {
            resource_version: Some("3".into()),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..ListOptions::default()
        };
        let paged = ListPager::new(2).list(&lw, options).await.unwrap();
        assert_eq!(paged.list.items.len(), 5, "only the full list's items");
        let calls = lw.list_calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[2].resource_version.as_deref(), Some("3"));
        assert_eq!(
            calls[2].resource_version_match,
            Some(ResourceVersionMatch::NotOlderThan)
        );
        assert_eq!(calls[2].limit, None);
        assert_eq!(calls[2].continue_token, None);
    }

    #[tokio::test]
    async fn a_compacted_change_log_expires_continue_tokens() {
        let lw = fake(4);
        let first = lw
            .list(&ListOptions {
                limit: Some(2),
                ..ListOptions::default()
            })
            .await
            .unwrap();
        lw.reset_change_log();
        let err = lw
            .list(&ListOptions {
                limit: Some(2),
                continue_token: first.continue_token,
                ..ListOptions::default()
            })
            .await
            .unwrap_err();
        assert!(err.is_expired());
    }

    #[tokio::test]
    async fn expired_on_the_first_page_or_other_errors_are_returned() {
        let lw = fake(5);
        lw.push_list_error(ApiStatus::expired("old"));
        let err = ListPager::new(2)
            .list(&lw, ListOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_expired());
        lw.push_list_ok();
        lw.push_list_error(ApiStatus::internal_error("boom"));
        let err = ListPager::new(2)
            .list(&lw, ListOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_internal_error());
        lw.push_list_ok();
        lw.push_list_error(ApiStatus::expired("old"));
        let err = ListPager::new(2)
            .full_list_if_expired(false)
            .list(&lw, ListOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_expired());
    }

    #[tokio::test]
    async fn undecodable_items_of_every_page_are_kept() {
        let lw = fake(3);
        lw.push_list_undecodable(DecodeError::new("bad"));
        let paged = ListPager::new(1)
            .list(&lw, ListOptions::default())
            .await
            .unwrap();
        assert_eq!(paged.list.undecodable.len(), 1);
        assert_eq!(paged.list.items.len(), 3);
    }
}
