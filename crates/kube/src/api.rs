//! `kube::api`: [`Api<K>`], and kube-core's parameters and object types
//! under the paths kube gives them.
//!
//! Every call is one request to the component's API server, sent as an
//! ABI action with a request id; its future completes when the host
//! delivers the result with that id, in a later call of the plugin:
//!
//! | `Api` call | ABI action |
//! |---|---|
//! | `get`, `get_opt`, `get_with`, `get_status` | `get` (`get_opt`: 404 is `Ok(None)`) |
//! | `list` | `list` (selectors, `resourceVersion`, match, limit, continue) |
//! | `create` | `create` |
//! | `replace` | `update` |
//! | `replace_status` | `updateStatus` |
//! | `patch` (`Apply`, `Merge`, `Json`, `Strategic`) | `patch` |
//! | `patch_status` | `patchStatus` |
//! | `delete` | `delete` (preconditions, grace period, propagation) |
//!
//! A direct read goes to the API server as `get`/`list` do in kube (never
//! to a reflector's store), with the resourceVersion semantics the
//! scenario's API server has.

use std::fmt::Debug;
use std::marker::PhantomData;

use either::Either;
use recon_abi::{Action, ObjectKey, Outcome, ResourceVersionMatch};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use kube_core::dynamic::{ApiResource, DynamicObject};
pub use kube_core::gvk::{GroupVersionKind, GroupVersionResource};
pub use kube_core::metadata::{ListMeta, ObjectMeta, PartialObjectMeta, PartialObjectMetaExt, TypeMeta};
pub use kube_core::object::{NotUsed, Object, ObjectList};
pub use kube_core::params::{
    DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
    ValidationDirective, VersionMatch, WatchParams,
};
pub use kube_core::response::{Status, StatusCause, StatusDetails, StatusSummary};
pub use kube_core::watch::WatchEvent;
pub use kube_core::{ClusterResourceScope, NamespaceResourceScope, Resource, ResourceExt};

use crate::client::Client;
use crate::convert;
use crate::error::{Error, Result, status};
use crate::recon;

/// A client for one kind, in one namespace or in all of them, as in
/// kube-client; every method is one request to the API server.
pub struct Api<K> {
    client: Client,
    namespace: Option<String>,
    kind: String,
    api_version: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            namespace: self.namespace.clone(),
            kind: self.kind.clone(),
            api_version: self.api_version.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K> Debug for Api<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("kind", &self.kind).field("namespace", &self.namespace).finish()
    }
}

impl<K: Resource> Api<K> {
    fn build(client: Client, namespace: Option<&str>, dyntype: &K::DynamicType) -> Self {
        let kind = K::kind(dyntype).into_owned();
        recon::with_state(|state| state.uses_kind(&kind));
        Api {
            client,
            namespace: namespace.map(str::to_owned),
            api_version: K::api_version(dyntype).into_owned(),
            kind,
            _kind: PhantomData,
        }
    }

    /// Every namespace (or a cluster-scoped kind), with a dynamic type.
    pub fn all_with(client: Client, dyntype: &K::DynamicType) -> Self {
        Api::build(client, None, dyntype)
    }

    /// One namespace, with a dynamic type.
    pub fn namespaced_with(client: Client, ns: &str, dyntype: &K::DynamicType) -> Self
    where
        K: Resource<Scope = kube_core::DynamicResourceScope>,
    {
        Api::build(client, Some(ns), dyntype)
    }

    /// The client's default namespace, with a dynamic type.
    pub fn default_namespaced_with(client: Client, dyntype: &K::DynamicType) -> Self
    where
        K: Resource<Scope = kube_core::DynamicResourceScope>,
    {
        let ns = client.default_namespace().to_owned();
        Api::build(client, Some(&ns), dyntype)
    }

    /// The namespace this `Api` is for (`None`: all of them).
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The client it was made with.
    pub fn into_client(self) -> Client {
        self.client
    }

    /// The kind, e.g. `ConfigMap`.
    pub(crate) fn kind(&self) -> &str {
        &self.kind
    }
}

impl<K: Resource> Api<K>
where
    K::DynamicType: Default,
{
    /// Every namespace, or a cluster-scoped kind.
    pub fn all(client: Client) -> Self {
        Api::build(client, None, &K::DynamicType::default())
    }

    /// One namespace.
    pub fn namespaced(client: Client, ns: &str) -> Self
    where
        K: Resource<Scope = NamespaceResourceScope>,
    {
        Api::build(client, Some(ns), &K::DynamicType::default())
    }

    /// The client's default namespace (`default`).
    pub fn default_namespaced(client: Client) -> Self
    where
        K: Resource<Scope = NamespaceResourceScope>,
    {
        let ns = client.default_namespace().to_owned();
        Api::build(client, Some(&ns), &K::DynamicType::default())
    }
}

/// The outcome of a request as kube-client would return it.
fn outcome(result: recon_abi::ActionResult) -> Result<Outcome> {
    match result.outcome {
        Outcome::Err(failure) => Err(Error::Api(Box::new(status(&failure)))),
        outcome => Ok(outcome),
    }
}

fn decode<K: DeserializeOwned>(outcome: Outcome) -> Result<K> {
    match outcome {
        Outcome::Ok(Some(object)) => convert::from_object(&object).map_err(Error::SerdeError),
        other => Err(Error::Unsupported(format!("the API server answered {other:?} where an object was expected"))),
    }
}

fn not_found(result: &Result<Outcome>) -> bool {
    matches!(result, Err(Error::Api(s)) if s.code == 404)
}

impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey::new(&self.kind, self.namespace.clone().unwrap_or_default(), name)
    }

    async fn send(&self, action: Action) -> Result<Outcome> {
        outcome(recon::request(action).await)
    }

    /// Reads `name` from the API server (the most recent state).
    pub async fn get(&self, name: &str) -> Result<K> {
        decode(self.send(Action::Get { key: self.key(name), resource_version: None }).await?)
    }

    /// Reads `name` with `resourceVersion` semantics (`"0"`: any state,
    /// however old; `N`: not older than `N`).
    pub async fn get_with(&self, name: &str, gp: &GetParams) -> Result<K> {
        let action = Action::Get { key: self.key(name), resource_version: gp.resource_version.clone() };
        decode(self.send(action).await?)
    }

    /// Reads `name` with its status (in a Recon cluster, as `get`: the
    /// status is part of the object read).
    pub async fn get_status(&self, name: &str) -> Result<K> {
        self.get(name).await
    }

    /// Reads `name`; `Ok(None)` if there is no such object.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>> {
        let result = self.send(Action::Get { key: self.key(name), resource_version: None }).await;
        if not_found(&result) {
            return Ok(None);
        }
        decode(result?).map(Some)
    }

    /// Lists from the API server, with the selectors and resourceVersion
    /// semantics of `lp`.
    pub async fn list(&self, lp: &ListParams) -> Result<ObjectList<K>> {
        let action = Action::List {
            kind: self.kind.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            field_selector: lp.field_selector.clone().unwrap_or_default(),
            label_selector: lp.label_selector.clone().unwrap_or_default(),
            resource_version: lp.resource_version.clone(),
            resource_version_match: lp.version_match.as_ref().map(|m| match m {
                VersionMatch::NotOlderThan => ResourceVersionMatch::NotOlderThan,
                VersionMatch::Exact => ResourceVersionMatch::Exact,
            }),
            limit: lp.limit.map(u64::from),
            continue_token: lp.continue_token.clone(),
        };
        let Outcome::Listed(list) = self.send(action).await? else {
            return Err(Error::Unsupported("the API server answered a list with something else".into()));
        };
        let items =
            list.items.iter().map(convert::from_object).collect::<Result<Vec<K>, _>>().map_err(Error::SerdeError)?;
        Ok(ObjectList {
            types: TypeMeta { api_version: self.api_version.clone(), kind: format!("{}List", self.kind) },
            metadata: ListMeta {
                resource_version: Some(list.resource_version),
                continue_: list.continue_token,
                ..ListMeta::default()
            },
            items,
        })
    }

    /// The object as the ABI carries it, in this `Api`'s namespace unless it names one.
    fn object(&self, data: &K) -> Result<recon_abi::Object>
    where
        K: Serialize,
    {
        let mut object = convert::to_object(data).map_err(Error::SerdeError)?;
        if object.metadata.namespace.is_empty()
            && let Some(ns) = &self.namespace
        {
            object.metadata.namespace = ns.clone();
        }
        Ok(object)
    }

    /// Creates `data`.
    pub async fn create(&self, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        decode(self.send(Action::Create { object: self.object(data)?, dry_run: pp.dry_run }).await?)
    }

    /// Replaces `name`'s metadata and spec with `data`'s; its
    /// `resourceVersion`, if set, is a precondition (409 if it moved on).
    pub async fn replace(&self, name: &str, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        let mut object = self.object(data)?;
        object.metadata.name = name.to_owned();
        decode(self.send(Action::Update { object, dry_run: pp.dry_run }).await?)
    }

    /// Replaces `name`'s status with `data`'s (the status subresource).
    pub async fn replace_status(&self, name: &str, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        let mut object = self.object(data)?;
        object.metadata.name = name.to_owned();
        decode(self.send(Action::UpdateStatus { object, dry_run: pp.dry_run }).await?)
    }

    /// Patches `name`: server-side apply, a merge, JSON or strategic merge patch.
    pub async fn patch<P: Serialize + Debug>(&self, name: &str, pp: &PatchParams, patch: &Patch<P>) -> Result<K> {
        let (patch, params) = wire_patch(pp, patch)?;
        decode(self.send(Action::Patch { key: self.key(name), patch, params }).await?)
    }

    /// Patches `name`'s status (the status subresource).
    pub async fn patch_status<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        let (patch, params) = wire_patch(pp, patch)?;
        decode(self.send(Action::PatchStatus { key: self.key(name), patch, params }).await?)
    }

    /// Deletes `name`: `Left` with the object while finalizers or a grace
    /// period hold it, `Right` once it is gone.
    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Either<K, Status>> {
        let preconditions = dp.preconditions.clone().unwrap_or_default();
        let action = Action::Delete {
            key: self.key(name),
            uid: preconditions.uid,
            resource_version: preconditions.resource_version,
            grace_period_seconds: dp.grace_period_seconds.map(i64::from),
            propagation_policy: dp.propagation_policy.as_ref().map(|p| match p {
                PropagationPolicy::Orphan => recon_abi::PropagationPolicy::Orphan,
                PropagationPolicy::Background => recon_abi::PropagationPolicy::Background,
                PropagationPolicy::Foreground => recon_abi::PropagationPolicy::Foreground,
            }),
            dry_run: dp.dry_run,
        };
        match self.send(action).await? {
            Outcome::Ok(None) => Ok(Either::Right(Status::success())),
            outcome => decode(outcome).map(Either::Left),
        }
    }
}

/// A kube patch and its parameters as the ABI's.
fn wire_patch<P: Serialize>(pp: &PatchParams, patch: &Patch<P>) -> Result<(recon_abi::Patch, recon_abi::PatchParams)> {
    let body = |p: &P| convert::to_body(p).map_err(Error::SerdeError);
    let patch = match patch {
        Patch::Apply(p) => {
            if pp.field_manager.is_none() {
                return Err(Error::BuildRequest(kube_core::request::Error::Validation(
                    "PatchParams::apply(manager) is required for server-side apply".into(),
                )));
            }
            recon_abi::Patch::Apply(body(p)?)
        }
        Patch::Merge(p) => recon_abi::Patch::Merge(body(p)?),
        Patch::Strategic(p) => recon_abi::Patch::Strategic(body(p)?),
        Patch::Json(p) => recon_abi::Patch::Json(serde_json::to_value(p).map_err(Error::SerdeError)?),
        _ => return Err(Error::Unsupported("a patch type kube added after 5.0".into())),
    };
    let params = recon_abi::PatchParams {
        field_manager: pp.field_manager.clone().unwrap_or_default(),
        force: pp.force,
        dry_run: pp.dry_run,
    };
    Ok((patch, params))
}
