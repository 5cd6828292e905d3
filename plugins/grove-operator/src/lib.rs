//! The Grove operator (ai-dynamo/grove), the part of it that matters for its
//! issue #775: the status reconcile of its PodCliqueSet and PodClique
//! controllers.
//!
//! A `PodCliqueSet` (`grove.io/v1alpha1`) lists cliques, each a
//! `PodClique` `{set}-0-{clique}` that runs `replicas` pods `{clique}-{i}`.
//! The operator runs one controller per kind; the component parameter
//! `controller` says which this instance is (`PodCliqueSet`, the default,
//! or `PodClique`). Each reconciles its primary object from its informer
//! cache, as grove's Go controllers do:
//!
//! 1. **Children.** The PodCliqueSet controller creates a missing PodClique
//!    per clique; the PodClique controller a missing pod per index (it
//!    waits for a terminating pod of that name to be gone).
//! 2. **Status** (`reconcileStatus`). PodClique: `replicas` (live pods) and
//!    `readyReplicas` (live pods with the Ready condition). PodCliqueSet:
//!    `availableReplicas`, 1 when every clique's PodClique reports as many
//!    ready pods as it asks for, else 0.
//! 3. **The no-op check.** When the status computed equals the status of
//!    the object as the cache holds it, nothing is written; otherwise it
//!    goes out as a merge patch of the status subresource.
//!
//! Like grove's controllers, each watches its primary through a
//! generation-changed predicate: a change that leaves `metadata.generation`
//! alone (a status write) wakes nothing. Children's changes wake their
//! owner.
//!
//! Step 3 is issue #775: the cached copy may predate a status write the
//! controller itself made. If the children changed back meanwhile, the new
//! status equals that stale copy, the write is skipped, and the
//! controller's own earlier write stays in the store; when it reaches the
//! cache it is a status change, which the predicate ignores, and with the
//! children quiet nothing ever wakes the controller again. Two fixes are
//! parameters:
//!
//! - `liveRead: true` (grove's fix, pull requests #716, #747 and #784: read
//!   the reconciled object through the API reader): every reconcile first
//!   gets its primary object from the API server with `resourceVersion`
//!   unset, a quorum read, and judges the no-op check against that.
//! - `optimisticLock: true`: the status patch carries the cached
//!   `resourceVersion` (controller-runtime's `MergeFromWithOptimisticLock`),
//!   so one computed from a copy the store has moved past is refused with
//!   409 Conflict; and the no-op check is trusted only once the cache shows
//!   the controller's own last status write (the resourceVersion it
//!   returned). Until then the locked patch goes out, or waits while one is
//!   in flight, and the key is requeued.

use std::collections::BTreeMap;

use recon_abi::{
    ABI_VERSION, ActionResult, ComponentConfig, ListMode, Manifest, Object, ObjectKey, ObjectMeta, Outcome, Patch,
    PatchParams, RequestId, Verb, WatchSpec, WritePermission,
};
use recon_sdk::RETRY_AFTER_MS;
use recon_sdk::cache::{Cache, Change};
use recon_sdk::meta::{is_controlled_by, owner_reference};
use recon_sdk::pod;
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime, primary_keys};
use serde_json::{Value, json};

/// The API group and version of grove's custom resources.
pub const API_VERSION: &str = "grove.io/v1alpha1";

/// The label grove puts on a clique's pods.
pub const PODCLIQUE_LABEL: &str = "grove.io/podclique";

/// The watch index of the primary kind.
const PRIMARY: usize = 0;
/// The watch index of the children's kind.
const CHILDREN: usize = 1;

/// The controller the host runs: [`Grove`] in the SDK's [`Runtime`].
pub type Controller = Runtime<Grove>;

/// A fresh controller.
pub fn controller() -> Controller {
    Runtime::new(Grove::default())
}

/// Which of grove's controllers an instance is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// PodCliqueSets, with their PodCliques as children.
    #[default]
    PodCliqueSet,
    /// PodCliques, with their pods as children.
    PodClique,
}

impl Role {
    fn primary(self) -> &'static str {
        match self {
            Role::PodCliqueSet => "PodCliqueSet",
            Role::PodClique => "PodClique",
        }
    }

    fn children(self) -> &'static str {
        match self {
            Role::PodCliqueSet => "PodClique",
            Role::PodClique => "Pod",
        }
    }
}

/// The reconciler of one of grove's controllers (see the crate documentation).
#[derive(Clone, Debug, Default)]
pub struct Grove {
    role: Role,
    /// Fix: judge the no-op check against a quorum read of the object.
    live_read: bool,
    /// Fix: status patches locked on the cached resourceVersion, and no
    /// no-op skip on a copy older than the controller's own last write.
    optimistic_lock: bool,
    /// Live reads sent and not yet used, per primary key.
    reads: BTreeMap<ObjectKey, RequestId>,
    /// The resourceVersion each primary's last status write returned.
    written: BTreeMap<ObjectKey, u64>,
}

/// The name of the PodClique that runs `clique` in replica 0 of `set`.
pub fn podclique_name(set: &str, clique: &str) -> String {
    format!("{set}-0-{clique}")
}

/// The pods a PodClique asks for (default 1).
fn replicas(object: &Object) -> u64 {
    object.spec.get("replicas").and_then(Value::as_u64).unwrap_or(1)
}

/// The PodClique a PodCliqueSet runs for one of its cliques.
pub fn desired_podclique(set: &Object, clique: &Value) -> Object {
    let clique_name = clique.get("name").and_then(Value::as_str).unwrap_or("main");
    Object {
        api_version: API_VERSION.into(),
        kind: "PodClique".into(),
        metadata: ObjectMeta {
            name: podclique_name(&set.metadata.name, clique_name),
            namespace: set.metadata.namespace.clone(),
            owner_references: vec![owner_reference(set)].into(),
            ..ObjectMeta::default()
        },
        spec: json!({ "replicas": clique.get("replicas").cloned().unwrap_or(json!(1)) }).into(),
        status: Default::default(),
        other: Default::default(),
    }
}

/// Pod `index` of a PodClique.
pub fn desired_pod(clique: &Object, index: u64) -> Object {
    let name = &clique.metadata.name;
    Object {
        api_version: "v1".into(),
        kind: "Pod".into(),
        metadata: ObjectMeta {
            name: format!("{name}-{index}"),
            namespace: clique.metadata.namespace.clone(),
            labels: [(PODCLIQUE_LABEL.to_owned(), name.clone())].into(),
            owner_references: vec![owner_reference(clique)].into(),
            ..ObjectMeta::default()
        },
        spec: json!({ "containers": [{ "name": "main", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime" }] }).into(),
        status: Default::default(),
        other: Default::default(),
    }
}

impl Grove {
    /// Step 1 for a PodCliqueSet: a PodClique per clique.
    fn podcliques(ctx: &mut Context<'_>, set: &Object) {
        let cliques = set.spec.pointer("/template/cliques").and_then(Value::as_array).cloned().unwrap_or_default();
        for clique in &cliques {
            let desired = desired_podclique(set, clique);
            if ctx.get(&desired.key()).is_none() {
                ctx.create(desired);
            }
        }
    }

    /// Step 1 for a PodClique: a pod per index.
    fn pods(ctx: &mut Context<'_>, clique: &Object) {
        for index in 0..replicas(clique) {
            let desired = desired_pod(clique, index);
            if ctx.get(&desired.key()).is_none() {
                ctx.create(desired);
            }
        }
    }

    /// Step 2: the status the object should have, from the cached children.
    fn status(&self, cache: &Cache, primary: &Object) -> Value {
        let children: Vec<&Object> =
            cache.list(CHILDREN).filter(|c| is_controlled_by(c, primary) && !c.is_terminating()).collect();
        match self.role {
            Role::PodClique => {
                let ready = children.iter().filter(|p| pod::is_ready(p)).count();
                json!({ "replicas": children.len(), "readyReplicas": ready })
            }
            Role::PodCliqueSet => {
                let cliques = primary.spec.pointer("/template/cliques").and_then(Value::as_array);
                let all_ready = cliques.is_some_and(|cliques| {
                    cliques.iter().all(|clique| {
                        let name = clique.get("name").and_then(Value::as_str).unwrap_or("main");
                        let name = podclique_name(&primary.metadata.name, name);
                        children.iter().any(|c| {
                            c.metadata.name == name
                                && c.status.get("readyReplicas").and_then(Value::as_u64).unwrap_or(0) >= replicas(c)
                        })
                    })
                });
                json!({ "availableReplicas": u64::from(all_ready) })
            }
        }
    }

    /// Step 3: write the status unless the baseline already has it.
    /// `baseline` is the object the no-op check trusts (the cached copy,
    /// or with `liveRead` the one just read from the API server).
    fn write_status(&mut self, ctx: &mut Context<'_>, baseline: &Object, status: Value) -> Requeue {
        let key = baseline.key();
        let version = baseline.metadata.resource_version.parse::<u64>().unwrap_or(0);
        // With the lock, a copy older than our own last status write is no
        // baseline for the no-op check.
        let trusted = !self.optimistic_lock || self.written.get(&key).is_none_or(|&w| version >= w);
        if trusted && baseline.status == status {
            return Requeue::AwaitChange;
        }
        let mut body = json!({ "status": status });
        if self.optimistic_lock {
            body["metadata"] = json!({ "resourceVersion": baseline.metadata.resource_version });
        }
        let sent = ctx.patch_status(&key, Patch::Merge(body), PatchParams::default());
        if self.optimistic_lock && !sent {
            // A locked write on this copy is in flight or was refused: try
            // again once the cache has had time to move.
            return Requeue::AfterMs(RETRY_AFTER_MS);
        }
        Requeue::AwaitChange
    }
}

impl Reconciler for Grove {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        let param = |name: &str| config.params.get(name).and_then(Value::as_bool).unwrap_or(false);
        let role = match config.params.get("controller").and_then(Value::as_str) {
            Some("PodClique") => Role::PodClique,
            _ => Role::PodCliqueSet,
        };
        *self =
            Grove { role, live_read: param("liveRead"), optimistic_lock: param("optimisticLock"), ..Grove::default() };
        let watch = |kind: &str| WatchSpec { kind: kind.into(), ..WatchSpec::default() };
        let may = |kind: &str, verbs: &[Verb]| WritePermission { kind: kind.into(), verbs: verbs.to_vec() };
        Manifest {
            name: format!("grove-{}-controller", role.primary().to_lowercase()),
            abi_version: ABI_VERSION,
            watches: vec![watch(role.primary()), watch(role.children())],
            writes: vec![may(role.primary(), &[Verb::PatchStatus, Verb::Get]), may(role.children(), &[Verb::Create])],
            node_agent: false,
            // controller-runtime's informers list with resourceVersion="0".
            list_mode: ListMode::Any,
            ..Manifest::default()
        }
    }

    /// grove's predicates: the primary wakes its own key only when it is
    /// added, deleted or its generation changes (not on a status write);
    /// a child wakes its controlling owner.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        if change.watch == PRIMARY {
            let now = cache.get(PRIMARY, &change.key);
            let generation = |o: &Object| o.metadata.generation;
            let same = matches!((&change.old, now), (Some(old), Some(now)) if generation(old) == generation(now));
            return if same { Vec::new() } else { vec![change.key.clone()] };
        }
        primary_keys(change, cache)
    }

    /// Remembers the resourceVersion each status write returned (for the
    /// optimistic lock's no-op check).
    fn keys_for_result(&mut self, result: &ActionResult, _cache: &Cache, _now_ms: u64) -> Vec<ObjectKey> {
        if let (Verb::PatchStatus, Outcome::Ok(Some(object))) = (result.verb, &result.outcome)
            && let Ok(version) = object.metadata.resource_version.parse::<u64>()
        {
            self.written.insert(result.key.clone(), version);
        }
        Vec::new()
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let Some(cached) = ctx.cache().get(PRIMARY, key).cloned() else {
            self.reads.remove(key);
            return Requeue::AwaitChange;
        };
        if cached.is_terminating() {
            return Requeue::AwaitChange;
        }
        match self.role {
            Role::PodCliqueSet => Self::podcliques(ctx, &cached),
            Role::PodClique => Self::pods(ctx, &cached),
        }
        let status = self.status(ctx.cache(), &cached);
        if !self.live_read {
            return self.write_status(ctx, &cached, status);
        }
        // The live read: ask once, and judge when the answer wakes the key.
        let answer = match self.reads.get(key) {
            Some(&id) => ctx.take_result(id),
            None => None,
        };
        match answer.map(|result| result.outcome) {
            Some(Outcome::Ok(Some(live))) => {
                self.reads.remove(key);
                self.write_status(ctx, &live, status)
            }
            Some(_) => {
                self.reads.remove(key);
                Requeue::AfterMs(RETRY_AFTER_MS)
            }
            None if self.reads.contains_key(key) => Requeue::AwaitChange,
            None => {
                let id = ctx.get_direct(key, None);
                self.reads.insert(key.clone(), id);
                Requeue::AwaitChange
            }
        }
    }
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-grove-operator`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(controller());

#[cfg(test)]
mod tests;
