//! The built-in StatefulSet controller: pods with stable names, one at a time.
//!
//! [`StatefulSetController`] watches StatefulSets and Pods. The pod for
//! ordinal `i` of set `web` is `web-i` in the set's namespace, labelled with
//! the template's labels plus `statefulset.kubernetes.io/pod-name` and
//! `controller-revision-hash: web-<hash of spec.template>`, with the
//! template's spec plus `hostname` (and `subdomain` from `serviceName`), and
//! a controller owner reference carrying the set's uid. Only pods whose
//! controller owner has the set's uid belong to it.
//!
//! Per set, with the OrderedReady policy, at most one pod changes at a time:
//!
//! 1. While any of its pods is terminating, or a write for one of them is in
//!    flight, nothing else happens.
//! 2. Ordinals `0..replicas` are created in order; `i` only once `0..i` are
//!    Running and Ready. A name still held by another object (an old
//!    incarnation on its way out, or a pod owned by someone else) is waited
//!    for, never reused: that is the StatefulSet identity guarantee, and
//!    what Kubernetes issue #59848 shows a stale kubelet can still break.
//!    A pod that has Failed or Succeeded is deleted, to be recreated.
//! 3. Once all of them are Running and Ready, the highest ordinal at or above
//!    `replicas` is deleted (scale down), one at a time.
//! 4. Then, with the RollingUpdate strategy (the default), the highest
//!    ordinal at or above `partition` whose revision differs from the update
//!    revision is deleted gracefully (with a uid precondition); step 2
//!    recreates it from the new template.
//!
//! The status (replicas, readyReplicas, currentReplicas, updatedReplicas,
//! currentRevision, updateRevision, observedGeneration) is written with
//! `UpdateStatus` only when it changed.
//!
//! It is written as a [`Reconciler`] ([`StatefulSets`], one set per call)
//! run by the SDK's [`Runtime`], which keeps the informer cache, maps each
//! change to the sets to reconcile, waits for the first lists, and retries
//! writes that failed transiently.
//!
//! Differences from the real controller: no ControllerRevision objects, so a
//! pod is always created from the current template (the real one recreates
//! pods below the partition from the old revision); the Parallel policy,
//! `minReadySeconds`, volume claims and orphan adoption are not implemented;
//! `replicas` in the status counts every existing pod of the set (the real
//! one counts pods that have a phase).

use std::collections::BTreeMap;

use recon_abi::{
    ABI_VERSION, Action, ComponentConfig, Controller, Input, ListMode, Manifest, Object, ObjectKey, ObjectMeta, Output,
    Verb, WatchSpec, WritePermission,
};
use recon_sdk::hash::template_hash;
use recon_sdk::meta::{self, controller_uid, is_controlled_by, json_object_mut, owner_reference};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
use recon_sdk::{Cache, Change, InFlight, Index, pod};
use serde_json::{Map, Value, json};

/// The watch index of StatefulSets in the manifest.
const SETS: usize = 0;
/// The watch index of Pods in the manifest.
const PODS: usize = 1;

/// The label naming a set's pod, as in Kubernetes.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label carrying the revision a pod was created from, as in Kubernetes.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The StatefulSet controller (see the crate documentation): [`StatefulSets`]
/// in the SDK's [`Runtime`], which keeps the cache, the sets to reconcile
/// until the first lists are in, and the writes in flight.
#[derive(Clone, Debug, Default)]
pub struct StatefulSetController {
    runtime: Runtime<StatefulSets>,
}

impl StatefulSetController {
    /// A controller with an empty cache.
    pub fn new() -> StatefulSetController {
        StatefulSetController::default()
    }
}

impl Controller for StatefulSetController {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.runtime.init(config)
    }

    fn handle(&mut self, input: &Input) -> Output {
        self.runtime.handle(input)
    }
}

/// The StatefulSet reconciler: one set per call of [`Reconciler::reconcile`].
#[derive(Clone, Debug)]
pub struct StatefulSets {
    /// Pods by the uid of their controlling owner.
    owned: Index,
}

impl Default for StatefulSets {
    fn default() -> Self {
        StatefulSets { owned: Index::new(|p| controller_uid(p).map(str::to_string)) }
    }
}

impl Reconciler for StatefulSets {
    fn init(&mut self, _config: &ComponentConfig) -> Manifest {
        *self = StatefulSets::default();
        let watches = vec![
            WatchSpec { kind: "StatefulSet".into(), ..WatchSpec::default() },
            WatchSpec { kind: "Pod".into(), ..WatchSpec::default() },
        ];
        Manifest {
            name: "statefulset".into(),
            abi_version: ABI_VERSION,
            watches,
            writes: vec![
                WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] },
                WritePermission { kind: "StatefulSet".into(), verbs: vec![Verb::UpdateStatus] },
            ],
            node_agent: false,
            list_mode: ListMode::Any,
            ..Manifest::default()
        }
    }

    /// A set's own changes make it dirty; a pod's make its owner (before and
    /// after) dirty, and the set whose ordinal name it holds.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        if change.watch == SETS {
            return vec![change.key.clone()];
        }
        let current = cache.get(change.watch, &change.key);
        self.owned.update(&change.key, current);
        let mut keys: Vec<ObjectKey> = change
            .old
            .as_deref()
            .into_iter()
            .chain(current)
            .filter_map(meta::controller_key)
            .filter(|k| k.kind == "StatefulSet")
            .collect();
        // A pod that is not (or no longer) the set's can still hold or free
        // the name of one of its ordinals.
        if let Some((set, _)) = split_ordinal(&change.key.name) {
            keys.push(ObjectKey::new("StatefulSet", &change.key.namespace, set));
        }
        keys
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let cache = ctx.cache();
        let now = ctx.now_ms();
        let Some(set) = cache.get(SETS, key) else { return Requeue::AwaitChange };
        if set.is_terminating() {
            // Deleting a set's pods is the garbage collector's job.
            return Requeue::AwaitChange;
        }
        let name = set.metadata.name.as_str();
        let replicas = meta::replicas(set);
        let template = set.spec.get("template").cloned().unwrap_or(Value::Null);
        let update_revision = format!("{name}-{}", template_hash(&template));

        let mut pods: BTreeMap<u32, &Object> = BTreeMap::new();
        for pod_key in self.owned.keys(&set.metadata.uid) {
            if let Some(pod) = cache.get(PODS, pod_key)
                && let Some((owner, ordinal)) = split_ordinal(&pod.metadata.name)
                && owner == name
            {
                pods.insert(ordinal, pod);
            }
        }

        // The writes are tracked by hand: a change to one ordinal blocks
        // the whole set (see `next_pod_change`), not just that pod.
        match next_pod_change(set, &pods, replicas, &update_revision, cache, ctx.in_flight(), now) {
            Some(PodChange::Create(ordinal)) => {
                let pod = new_pod(set, ordinal, &update_revision);
                ctx.in_flight().record(Verb::Create, pod.key(), None, key.clone());
                ctx.push(Action::Create { object: pod, dry_run: false });
            }
            Some(PodChange::Delete(pod)) => {
                // Only this incarnation; the pod's kubelet finishes the delete.
                ctx.in_flight().record(Verb::Delete, pod.key(), Some(pod), key.clone());
                ctx.push(Action::Delete {
                    key: pod.key(),
                    uid: Some(pod.metadata.uid.clone()),
                    resource_version: None,
                    grace_period_seconds: None,
                    propagation_policy: None,
                    dry_run: false,
                });
            }
            None => {}
        }

        let status = compute_status(set, &pods, replicas, &update_revision);
        if status != set.status {
            let mut object = set.clone();
            object.status = status.into();
            ctx.update_status(object);
        }
        Requeue::AwaitChange
    }
}

/// A change to one of a set's pods.
enum PodChange<'a> {
    /// Create the pod for this ordinal.
    Create(u32),
    /// Delete this pod gracefully.
    Delete(&'a Object),
}

/// The one create or delete the set needs next, if any (see the crate docs).
fn next_pod_change<'a>(
    set: &Object,
    pods: &BTreeMap<u32, &'a Object>,
    replicas: u32,
    update_revision: &str,
    cache: &'a Cache,
    in_flight: &mut InFlight,
    now: u64,
) -> Option<PodChange<'a>> {
    let namespace = &set.metadata.namespace;
    let name = &set.metadata.name;
    let pod_key = |ordinal: u32| ObjectKey::new("Pod", namespace, format!("{name}-{ordinal}"));

    // One change at a time: wait for the last one to be answered and seen.
    let mut blocked = false;
    for ordinal in (0..replicas).chain(pods.keys().copied().filter(|&o| o >= replicas)) {
        let key = pod_key(ordinal);
        blocked |= in_flight.blocks(&key, cache.get(PODS, &key), now);
    }
    if blocked || pods.values().any(|p| p.is_terminating()) {
        return None;
    }

    for ordinal in 0..replicas {
        match cache.get(PODS, &pod_key(ordinal)) {
            None => return Some(PodChange::Create(ordinal)),
            // The name is held by an object that is not this set's pod (an
            // old incarnation, another owner): wait until it is gone.
            Some(pod) if !is_controlled_by(pod, set) => return None,
            Some(pod) if pod::phase(pod).is_terminal() => return Some(PodChange::Delete(pod)),
            Some(pod) if !pod::is_running_and_ready(pod) => return None,
            Some(_) => {}
        }
    }

    if let Some((_, condemned)) = pods.range(replicas..).next_back() {
        return Some(PodChange::Delete(condemned));
    }

    let strategy = &set.spec["updateStrategy"];
    if strategy.get("type").and_then(Value::as_str).unwrap_or("RollingUpdate") != "RollingUpdate" {
        return None;
    }
    let partition = strategy
        .pointer("/rollingUpdate/partition")
        .and_then(Value::as_u64)
        .map_or(0, |p| u32::try_from(p).unwrap_or(u32::MAX));
    pods.range(partition..replicas)
        .rev()
        .find(|(_, pod)| revision(pod) != Some(update_revision))
        .map(|(_, outdated)| PodChange::Delete(outdated))
}

fn revision(pod: &Object) -> Option<&str> {
    pod.metadata.labels.get(REVISION_LABEL).map(String::as_str)
}

/// Splits `web-3` into (`web`, 3).
fn split_ordinal(pod_name: &str) -> Option<(&str, u32)> {
    let (set, ordinal) = pod_name.rsplit_once('-')?;
    if set.is_empty() || ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // `web-01` is not ordinal 1 of `web`: the controller never names it so.
    if ordinal.len() > 1 && ordinal.starts_with('0') {
        return None;
    }
    Some((set, ordinal.parse().ok()?))
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

/// The pod for `ordinal`, from the set's current template.
fn new_pod(set: &Object, ordinal: u32, update_revision: &str) -> Object {
    let name = format!("{}-{ordinal}", set.metadata.name);
    let template = &set.spec["template"];
    let mut labels = string_map(template.pointer("/metadata/labels"));
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(REVISION_LABEL.into(), update_revision.into());
    let mut spec = template.get("spec").cloned().unwrap_or(Value::Null);
    let fields = json_object_mut(&mut spec);
    fields.insert("hostname".into(), json!(name));
    if let Some(service) = set.spec.get("serviceName").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        fields.insert("subdomain".into(), json!(service));
    }
    Object {
        api_version: "v1".into(),
        kind: "Pod".into(),
        metadata: ObjectMeta {
            name,
            namespace: set.metadata.namespace.clone(),
            labels: labels.into(),
            annotations: string_map(template.pointer("/metadata/annotations")).into(),
            owner_references: vec![owner_reference(set)].into(),
            ..ObjectMeta::default()
        },
        spec: spec.into(),
        status: Default::default(),
        other: Default::default(),
    }
}

/// The set's status as it should read, keeping fields this controller does
/// not own (e.g. conditions) as they are.
fn compute_status(set: &Object, pods: &BTreeMap<u32, &Object>, replicas: u32, update_revision: &str) -> Value {
    let old_current = set.status.get("currentRevision").and_then(Value::as_str).filter(|r| !r.is_empty());
    let mut current_revision = old_current.unwrap_or(update_revision).to_string();
    let existing = pods.len() as u64;
    let ready = pods.values().filter(|p| pod::is_running_and_ready(p)).count() as u64;
    let live = || pods.values().filter(|p| !p.is_terminating());
    let updated = live().filter(|p| revision(p) == Some(update_revision)).count() as u64;
    let mut current = live().filter(|p| revision(p) == Some(current_revision.as_str())).count() as u64;
    // The rolling update is complete: the update revision becomes current.
    let want = u64::from(replicas);
    if updated == want && ready == want && existing == want {
        current_revision = update_revision.to_string();
        current = updated;
    }

    let mut status = Value::clone(&set.status);
    let fields: &mut Map<String, Value> = json_object_mut(&mut status);
    fields.insert("observedGeneration".into(), json!(set.metadata.generation));
    fields.insert("replicas".into(), json!(existing));
    fields.insert("readyReplicas".into(), json!(ready));
    fields.insert("currentReplicas".into(), json!(current));
    fields.insert("updatedReplicas".into(), json!(updated));
    fields.insert("currentRevision".into(), json!(current_revision));
    fields.insert("updateRevision".into(), json!(update_revision));
    status
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-statefulset`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(StatefulSetController::new());

#[cfg(test)]
mod tests;
