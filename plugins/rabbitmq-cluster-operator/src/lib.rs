//! The RabbitMQ cluster operator (rabbitmq/cluster-operator), the part of it
//! that matters for its issue #648: a `RabbitmqCluster` custom resource
//! (`rabbitmq.com/v1beta1`) run as a StatefulSet `{name}-server`, held by
//! the finalizer [`FINALIZER`] so that the operator can take the cluster
//! down in order before it goes.
//!
//! [`Clusters`] reconciles one RabbitmqCluster at a time from its informer
//! cache, as the Go operator's `Reconcile` does:
//!
//! 1. **Finalizer first.** A live cluster without [`FINALIZER`] gets it (an
//!    update with the cached resourceVersion as precondition).
//! 2. **The StatefulSet.** Created when the cache has none (a controller
//!    owner reference with `blockOwnerDeletion`, `spec.replicas` from the
//!    cluster); its replicas are updated when the cluster asks for more.
//!    A cluster that asks for fewer replicas than its StatefulSet has is
//!    not scaled down (`scaleDown`: RabbitMQ would lose the data of the
//!    nodes taken away); the operator logs "Cluster Scale down not
//!    supported" with both counts and leaves the StatefulSet as it is.
//! 3. **Deletion** (`prepareForDeletion`). A cluster being deleted has its
//!    StatefulSet deleted at once (so that no pod respawns while RabbitMQ
//!    shuts down), then the finalizer removed. The delete names the
//!    StatefulSet by name only, as `client.Delete(ctx, sts)` on an object
//!    built from the cluster's name does: whatever StatefulSet holds that
//!    name when the request arrives is the one deleted.
//!
//! That last point is issue #648: restarted onto an API server whose cache
//! lags, the operator lists the cluster as it was while being deleted
//! before, and takes down the StatefulSet of the cluster re-created since
//! under the same name. Upstream's fix (pull request #651, the component
//! parameter `deletePreconditionUid: true`) deletes with a uid
//! precondition: the uid of the StatefulSet whose controller is this very
//! cluster (by uid), or nothing at all when there is none; the API server
//! refuses the stale delete with 409 Conflict.
//!
//! Issue #758 is about step 2: the scale-down rule compares the replicas
//! the cluster asks for *now* with the StatefulSet's, so a cluster scaled
//! 1 → 3 → 2 between two reconciles (the informer delivered both changes,
//! the work queue collapsed them into one call) goes from 1 to 2, a count
//! the rule never allows once 3 was asked for. Upstream answered with a
//! clearer warning (pull request #828) and no change of behaviour. The
//! parameter `highestRequested: true` keeps the rule across collapsed
//! calls: the informer's event handler, which sees every version the watch
//! delivers, remembers the highest replicas each cluster (by uid) ever
//! asked for, and the StatefulSet never gets fewer. It lives in memory: a
//! restart that relists past the intermediate version loses it.

use std::collections::BTreeMap;

use recon_abi::{
    ABI_VERSION, Action, ComponentConfig, ListMode, Manifest, Object, ObjectKey, ObjectMeta, Verb, WatchSpec,
    WritePermission,
};
use recon_sdk::Change;
use recon_sdk::cache::Cache;
use recon_sdk::meta::{is_controlled_by, owner_reference};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime, primary_keys};
use serde_json::{Value, json};

/// The finalizer the operator holds every cluster with (the real operator's).
pub const FINALIZER: &str = "deletion.rabbitmq.com";

/// The watch index of RabbitmqClusters in the manifest (the primary kind:
/// a StatefulSet change wakes its controlling cluster, as `Owns` does).
const CLUSTERS: usize = 0;

/// The controller the host runs: [`Clusters`] in the SDK's [`Runtime`].
pub type Controller = Runtime<Clusters>;

/// A fresh controller.
pub fn controller() -> Controller {
    Runtime::new(Clusters::default())
}

/// The RabbitmqCluster reconciler (see the crate documentation).
#[derive(Clone, Debug, Default)]
pub struct Clusters {
    /// Upstream's fix for #648: delete the StatefulSet with a uid precondition.
    delete_precondition_uid: bool,
    /// The fix for #758: never scale below the highest replicas a cluster
    /// was seen asking for, by its event handler.
    highest_requested: bool,
    /// Cluster uid → the highest `spec.replicas` any delivered version of
    /// it asked for (kept only with `highest_requested`).
    highest: BTreeMap<String, u64>,
}

/// The key of the StatefulSet that runs `cluster` (`{name}-server`).
pub fn statefulset_key(cluster: &ObjectKey) -> ObjectKey {
    ObjectKey::new("StatefulSet", &cluster.namespace, format!("{}-server", cluster.name))
}

/// The replicas the cluster asks for (default 1, as the CRD's).
fn replicas(cluster: &Object) -> u64 {
    cluster.spec.get("replicas").and_then(Value::as_u64).unwrap_or(1)
}

/// The StatefulSet the operator creates for `cluster`.
pub fn desired_statefulset(cluster: &Object) -> Object {
    let key = statefulset_key(&cluster.key());
    let labels = json!({ "app.kubernetes.io/name": cluster.metadata.name });
    Object {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        metadata: ObjectMeta {
            name: key.name,
            namespace: key.namespace,
            labels: BTreeMap::from([("app.kubernetes.io/name".to_owned(), cluster.metadata.name.clone())]).into(),
            owner_references: vec![owner_reference(cluster)].into(),
            ..ObjectMeta::default()
        },
        spec: json!({
            "replicas": replicas(cluster),
            "serviceName": format!("{}-nodes", cluster.metadata.name),
            "selector": { "matchLabels": labels },
            "template": {
                "metadata": { "labels": labels },
                "spec": { "containers": [{ "name": "rabbitmq", "image": "rabbitmq:3.8" }] },
            },
        })
        .into(),
        status: Default::default(),
        other: Default::default(),
    }
}

impl Clusters {
    /// `prepareForDeletion`: delete the StatefulSet, then remove the finalizer.
    fn prepare_for_deletion(&self, ctx: &mut Context<'_>, cluster: &Object) -> Requeue {
        if !cluster.metadata.finalizers.iter().any(|f| f == FINALIZER) {
            return Requeue::AwaitChange;
        }
        let key = statefulset_key(&cluster.key());
        match ctx.get(&key).filter(|s| !s.is_terminating()) {
            // Upstream's `statefulSetUID`: only a StatefulSet this cluster
            // controls has a uid to name, and the delete carries it (the
            // SDK's delete of an incarnation); without one there is nothing
            // of this cluster's to delete.
            Some(set) if self.delete_precondition_uid && is_controlled_by(set, cluster) => {
                ctx.delete(set);
            }
            Some(_) if self.delete_precondition_uid => {}
            // As the operator was: by name, whichever incarnation holds it.
            Some(_) => {
                ctx.send(Action::delete(key));
            }
            None => {}
        }
        let mut next = cluster.clone();
        next.metadata.finalizers.retain(|f| f != FINALIZER);
        ctx.update(next);
        Requeue::AwaitChange
    }
}

impl Reconciler for Clusters {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.delete_precondition_uid =
            config.params.get("deletePreconditionUid").and_then(Value::as_bool).unwrap_or(false);
        let watch = |kind: &str| WatchSpec { kind: kind.into(), ..WatchSpec::default() };
        let may = |kind: &str, verbs: &[Verb]| WritePermission { kind: kind.into(), verbs: verbs.to_vec() };
        self.highest_requested = config.params.get("highestRequested").and_then(Value::as_bool).unwrap_or(false);
        self.highest.clear();
        Manifest {
            name: "rabbitmq-cluster-operator".into(),
            abi_version: ABI_VERSION,
            watches: vec![watch("RabbitmqCluster"), watch("StatefulSet")],
            writes: vec![
                may("RabbitmqCluster", &[Verb::Update]),
                may("StatefulSet", &[Verb::Create, Verb::Update, Verb::Delete]),
            ],
            node_agent: false,
            // controller-runtime's informers list with resourceVersion="0".
            list_mode: ListMode::Any,
            ..Manifest::default()
        }
    }

    /// The event handler: every version a watch delivers passes here, even
    /// when the calls it makes dirty collapse into one reconcile.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        if self.highest_requested
            && change.watch == CLUSTERS
            && let Some(cluster) = cache.get(CLUSTERS, &change.key)
        {
            let highest = self.highest.entry(cluster.metadata.uid.clone()).or_default();
            *highest = (*highest).max(replicas(cluster));
        }
        primary_keys(change, cache)
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let Some(cluster) = ctx.cache().get(CLUSTERS, key) else { return Requeue::AwaitChange };
        if cluster.is_terminating() {
            return self.prepare_for_deletion(ctx, cluster);
        }
        if !cluster.metadata.finalizers.iter().any(|f| f == FINALIZER) {
            let mut next = cluster.clone();
            next.metadata.finalizers.push(FINALIZER.into());
            ctx.update(next);
            return Requeue::AwaitChange;
        }
        let mut desired = desired_statefulset(cluster);
        if let Some(highest) = self.highest.get(&cluster.metadata.uid) {
            desired.spec["replicas"] = json!((*highest).max(replicas(cluster)));
        }
        let wanted = desired.spec["replicas"].as_u64().unwrap_or(1);
        match ctx.get(&desired.key()) {
            None => {
                ctx.create(desired);
            }
            Some(current) => {
                let have = current.spec.get("replicas").and_then(Value::as_u64).unwrap_or(1);
                if have > wanted {
                    // `scaleDown`: refused, and said so.
                    recon_sdk::log(&format!(
                        "Cluster Scale down not supported; tried to scale cluster from {have} nodes to {wanted} nodes"
                    ));
                } else if have < wanted {
                    let mut next = current.clone();
                    next.spec["replicas"] = json!(wanted);
                    ctx.update(next);
                }
            }
        }
        Requeue::AwaitChange
    }
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-rabbitmq-cluster-operator`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(controller());

#[cfg(test)]
mod tests;
