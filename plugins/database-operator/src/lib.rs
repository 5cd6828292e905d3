//! An example operator, written as an operator author writes one: a
//! `Database` custom resource (`example.com/v1`) run as a StatefulSet and a
//! headless Service, with a backup schedule registered for it elsewhere.
//!
//! [`Databases`] reconciles one Database at a time from its informer cache,
//! and every step is idempotent, so that running it again on the same view
//! changes nothing:
//!
//! 1. **Finalizer first.** A live Database without the finalizer
//!    [`FINALIZER`] gets it (an update with a resourceVersion precondition)
//!    before anything is created for it: the finalizer is what guarantees
//!    the operator a last word before the Database goes.
//! 2. **Children by server-side apply.** The Service and the StatefulSet
//!    (`{name}`, in the Database's namespace) carry a controller owner
//!    reference with `blockOwnerDeletion`, so the garbage collector removes
//!    them after the Database. They are applied as field manager
//!    [`MANAGER`], forcing conflicts: the desired state is declared in full
//!    and the API server works out what changed. The operator remembers
//!    what it last applied to each child in this life and applies again when
//!    that changes or the child is missing from its cache; a fresh instance
//!    remembers nothing and applies everything it lists once, as every
//!    operator does when it starts.
//! 3. **The external resource.** A `BackupSchedule` (`{namespace}-{name}`
//!    in the namespace [`BACKUP_NAMESPACE`], where the backup system reads
//!    its schedules) is applied too. An owner reference cannot cross
//!    namespaces, so the garbage collector can never remove it: that is the
//!    finalizer's job.
//! 4. **Status** (`phase`, `readyReplicas`, `observedGeneration`) through the
//!    status subresource, as a merge patch, only when it changed.
//! 5. **Deletion.** A Database being deleted gets no more children; its
//!    backup schedule is deleted (and a Normal Event `BackupScheduleDeleted`
//!    about the Database says so), and once the cache shows it gone the
//!    finalizer is removed (an update with a resourceVersion precondition),
//!    which lets the API server remove the Database; the garbage collector
//!    takes the children.
//!
//! What it trusts is its cache, as every informer-based operator does: a
//! Database that looks live is reconciled as live. After a restart that
//! relists from a lagging API-server cache, that view can be a Database
//! deleted long ago, and step 2 and 3 bring its children and its backup
//! schedule back (the `database-operator-stale-cache` scenario).

use std::collections::BTreeMap;

use recon_abi::{
    ABI_VERSION, ActionResult, ComponentConfig, ListMode, Manifest, Object, ObjectKey, ObjectMeta, Outcome, Patch,
    PatchParams, Verb, WatchSpec, WritePermission,
};
use recon_sdk::events::{EventType, Reporter};
use recon_sdk::meta::owner_reference;
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime, primary_keys};
use recon_sdk::{Cache, Change};
use serde_json::{Value, json};

/// The finalizer the operator holds every Database with.
pub const FINALIZER: &str = "databases.example.com/backup-schedule";
/// Its field manager for server-side apply.
pub const MANAGER: &str = "database-operator";
/// Where backup schedules live (the backup system's namespace).
pub const BACKUP_NAMESPACE: &str = "backups";
/// The label on a backup schedule that names its Database (`namespace.name`).
pub const DATABASE_LABEL: &str = "example.com/database";

/// The watch index of Databases in the manifest (the primary kind).
const DATABASES: usize = 0;
/// The watch index of BackupSchedules.
const SCHEDULES: usize = 3;

/// The controller the host runs: [`Databases`] in the SDK's [`Runtime`].
pub type Controller = Runtime<Databases>;

/// A fresh controller.
pub fn controller() -> Controller {
    Runtime::new(Databases::default())
}

/// The Database reconciler (see the crate documentation). What it decides
/// comes from the cache; all it keeps is what it last applied.
#[derive(Clone, Debug, Default)]
pub struct Databases {
    /// Child (or backup schedule) key → the body last applied to it.
    applied: BTreeMap<ObjectKey, Value>,
    /// This instance's name, as it reports Events (`reportingInstance`).
    instance: String,
}

/// The `reportingController` of the operator's Events.
pub const REPORTING_CONTROLLER: &str = "example.com/database-operator";

/// The key of the backup schedule registered for the Database `db`.
pub fn schedule_key(db: &ObjectKey) -> ObjectKey {
    ObjectKey::new("BackupSchedule", BACKUP_NAMESPACE, format!("{}-{}", db.namespace, db.name))
}

/// The Database a backup schedule belongs to, from its label.
fn database_of(schedule: &Object) -> Option<ObjectKey> {
    let (namespace, name) = schedule.metadata.labels.get(DATABASE_LABEL)?.split_once('.')?;
    Some(ObjectKey::new("Database", namespace, name))
}

/// A partial object to apply: identity, labels, owner and spec.
fn desired(api_version: &str, kind: &str, key: &ObjectKey, db: Option<&Object>, spec: Value) -> Object {
    let mut labels = BTreeMap::from([("app.kubernetes.io/managed-by".to_owned(), MANAGER.to_owned())]);
    let mut owner_references = Vec::new();
    if let Some(db) = db {
        labels.insert("app.kubernetes.io/instance".into(), db.metadata.name.clone());
        // A controller reference blocks the owner's deletion, as
        // Kubernetes' own controllers' do: a foreground deletion of the
        // Database waits for its children.
        owner_references.push(owner_reference(db));
    }
    Object {
        api_version: api_version.into(),
        kind: kind.into(),
        metadata: ObjectMeta {
            name: key.name.clone(),
            namespace: key.namespace.clone(),
            labels: labels.into(),
            owner_references: owner_references.into(),
            ..ObjectMeta::default()
        },
        spec: spec.into(),
        status: Default::default(),
        other: Default::default(),
    }
}

/// What the Database asks for: (version, replicas, backup schedule).
fn wanted(db: &Object) -> (String, u64, String) {
    let version = db.spec.get("version").and_then(Value::as_str).unwrap_or("16").to_owned();
    let replicas = db.spec.get("replicas").and_then(Value::as_u64).unwrap_or(1);
    let schedule = db.spec.get("backupSchedule").and_then(Value::as_str).unwrap_or("0 3 * * *").to_owned();
    (version, replicas, schedule)
}

/// The Database's children and its backup schedule, as the operator applies them.
pub fn desired_objects(db: &Object) -> [Object; 3] {
    let key = db.key();
    let name = &key.name;
    let (version, replicas, schedule) = wanted(db);
    let selector = json!({ "app": name });
    let service = desired(
        "v1",
        "Service",
        &ObjectKey::new("Service", &key.namespace, name),
        Some(db),
        json!({ "clusterIP": "None", "selector": selector, "ports": [{ "name": "postgres", "port": 5432 }] }),
    );
    let statefulset = desired(
        "apps/v1",
        "StatefulSet",
        &ObjectKey::new("StatefulSet", &key.namespace, name),
        Some(db),
        json!({
            "replicas": replicas,
            "serviceName": name,
            "selector": { "matchLabels": selector },
            "template": {
                "metadata": { "labels": selector },
                "spec": { "containers": [{ "name": "postgres", "image": format!("postgres:{version}") }] },
            },
        }),
    );
    let mut backup = desired(
        "example.com/v1",
        "BackupSchedule",
        &schedule_key(&key),
        None,
        json!({ "database": format!("{}/{}", key.namespace, name), "schedule": schedule }),
    );
    backup.metadata.labels.insert(DATABASE_LABEL.into(), format!("{}.{}", key.namespace, name));
    [service, statefulset, backup]
}

impl Databases {
    /// Step 5: clean up the backup schedule, then let the Database go. The
    /// delete is reported as a Kubernetes Event about the Database, as an
    /// operator tells its users what it did outside the cluster's objects.
    fn finalize(&self, ctx: &mut Context<'_>, db: &Object) -> Requeue {
        if !db.metadata.finalizers.iter().any(|f| f == FINALIZER) {
            return Requeue::AwaitChange;
        }
        if let Some(schedule) = ctx.cache().get(SCHEDULES, &schedule_key(&db.key())) {
            // Wait until the cache shows it gone before letting go.
            if !schedule.is_terminating() && ctx.delete(schedule) {
                let reporter = Reporter::new(REPORTING_CONTROLLER, &self.instance);
                let note = format!("deleted backup schedule {}/{}", BACKUP_NAMESPACE, schedule.metadata.name);
                ctx.publish_event(db, &reporter, EventType::Normal, ("BackupScheduleDeleted", "Delete", &note));
            }
            return Requeue::AwaitChange;
        }
        let mut next = db.clone();
        next.metadata.finalizers.retain(|f| f != FINALIZER);
        ctx.update(next);
        Requeue::AwaitChange
    }

    /// Step 4: the status, from the StatefulSet in the cache.
    fn status(ctx: &mut Context<'_>, db: &Object) {
        let (_, replicas, _) = wanted(db);
        let set_key = ObjectKey::new("StatefulSet", &db.metadata.namespace, &db.metadata.name);
        let ready = ctx
            .get(&set_key)
            .filter(|s| recon_sdk::meta::is_controlled_by(s, db))
            .and_then(|s| s.status.get("readyReplicas"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let phase = if ready >= replicas { "Ready" } else { "Provisioning" };
        let status = json!({
            "phase": phase,
            "readyReplicas": ready,
            "observedGeneration": db.metadata.generation,
        });
        if db.status != status {
            let params = PatchParams { field_manager: MANAGER.into(), ..PatchParams::default() };
            ctx.patch_status(&db.key(), Patch::Merge(json!({ "status": status })), params);
        }
    }
}

impl Reconciler for Databases {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.applied.clear();
        self.instance.clone_from(&config.name);
        let watch = |kind: &str| WatchSpec { kind: kind.into(), ..WatchSpec::default() };
        let may = |kind: &str, verbs: &[Verb]| WritePermission { kind: kind.into(), verbs: verbs.to_vec() };
        Manifest {
            name: "database-operator".into(),
            abi_version: ABI_VERSION,
            watches: vec![watch("Database"), watch("Service"), watch("StatefulSet"), watch("BackupSchedule")],
            writes: vec![
                may("Database", &[Verb::Update, Verb::PatchStatus]),
                may("Service", &[Verb::Patch]),
                may("StatefulSet", &[Verb::Patch]),
                may("BackupSchedule", &[Verb::Patch, Verb::Delete]),
                may("Event", &[Verb::Create]),
            ],
            node_agent: false,
            list_mode: ListMode::Any,
            ..Manifest::default()
        }
    }

    /// A Database makes itself dirty; a child its controlling Database; a
    /// backup schedule the Database its label names.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        if change.watch != SCHEDULES {
            return primary_keys(change, cache);
        }
        let current = cache.get(change.watch, &change.key);
        let mut keys: Vec<ObjectKey> =
            change.old.as_deref().into_iter().chain(current).filter_map(database_of).collect();
        keys.dedup();
        keys
    }

    /// A failed apply is forgotten, so that the retry applies again.
    fn keys_for_result(&mut self, result: &ActionResult, _cache: &Cache, _now_ms: u64) -> Vec<ObjectKey> {
        if result.verb == Verb::Patch && matches!(result.outcome, Outcome::Err(_)) {
            self.applied.remove(&result.key);
        }
        Vec::new()
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        // Gone: its finalizer ran, the garbage collector takes the children.
        let Some(db) = ctx.cache().get(DATABASES, key) else { return Requeue::AwaitChange };
        if db.is_terminating() {
            return self.finalize(ctx, db);
        }
        if !db.metadata.finalizers.iter().any(|f| f == FINALIZER) {
            let mut next = db.clone();
            next.metadata.finalizers.push(FINALIZER.into());
            ctx.update(next);
            // The next reconcile, on the Database with its finalizer, goes on.
            return Requeue::AwaitChange;
        }
        for object in desired_objects(db) {
            let child = object.key();
            let body = serde_json::to_value(&object).expect("objects are JSON");
            let missing = ctx.get(&child).is_none();
            if (missing || self.applied.get(&child) != Some(&body)) && ctx.apply(&object, MANAGER, true) {
                self.applied.insert(child, body);
            }
        }
        Self::status(ctx, db);
        Requeue::AwaitChange
    }
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-database-operator`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(controller());

#[cfg(test)]
mod tests;
