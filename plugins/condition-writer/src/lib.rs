//! A controller that decides one status condition of each `Widget`
//! (`example.com/v1`) once: if the Widget has no condition of its type, it
//! adds one with the status and reason its parameters give; if it has one,
//! whoever wrote it, it leaves it alone.
//!
//! Parameters (`params` in the scenario): `conditionType` (default
//! `Ready`), `status` (`True` or `False`, default `True`), `reason`
//! (default `Decided`) and `precondition` (default `true`; `false` writes
//! the conditions with a status merge patch that carries no
//! `resourceVersion`: a blind write, last writer wins, the bug of
//! `scenarios/status-condition-stale-view.yaml`).
//!
//! The write is an `UpdateStatus` carrying the cached `resourceVersion`
//! (optimistic concurrency): if the Widget changed meanwhile the API server
//! refuses it with 409 Conflict, the SDK's runtime waits for the cache to
//! show the newer Widget and the reconcile runs again on it. The blind
//! write is a patch, not an update without a `resourceVersion`: a custom
//! resource allows no unconditional update (the API server answers 422),
//! so controllers that write blindly patch, as controller-runtime's
//! `Status().Patch` with `MergeFrom` does; a merge patch replaces a custom
//! resource's list whole. Conditions are kept sorted by type, so the list
//! does not depend on who added first.
//!
//! Two of these with *the same* condition type and different rules are the
//! museum's ordering race (`scenarios/status-condition-race.yaml`): the
//! first write wins, the other controller sees the condition decided and
//! stops, so the end state depends on which of the two reconciled first.
//! Kubernetes' API conventions give each condition type one owner; with
//! that fix each writes its own type and the outcome is the same whatever
//! the order.

use recon_abi::{
    ABI_VERSION, ComponentConfig, Manifest, ObjectKey, Patch, PatchParams, Verb, WatchSpec, WritePermission,
};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
use serde_json::{Value, json};

/// The kind whose conditions it writes.
pub const KIND: &str = "Widget";

/// Decides one condition of each Widget (see the crate documentation).
#[derive(Clone, Debug, Default)]
pub struct ConditionWriter {
    condition_type: String,
    status: String,
    reason: String,
    /// Whether its writes carry the cached resourceVersion.
    precondition: bool,
}

/// The controller the host runs: the writer inside the SDK's runtime.
pub type Controller = Runtime<ConditionWriter>;

/// A fresh controller.
pub fn controller() -> Controller {
    Runtime::new(ConditionWriter::default())
}

impl Reconciler for ConditionWriter {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        let param =
            |name: &str, default: &str| config.params.get(name).and_then(Value::as_str).unwrap_or(default).to_string();
        self.condition_type = param("conditionType", "Ready");
        self.status = param("status", "True");
        self.reason = param("reason", "Decided");
        self.precondition = config.params.get("precondition").and_then(Value::as_bool).unwrap_or(true);
        Manifest {
            name: "condition-writer".into(),
            abi_version: ABI_VERSION,
            watches: vec![WatchSpec { kind: KIND.into(), ..WatchSpec::default() }],
            writes: vec![WritePermission { kind: KIND.into(), verbs: vec![Verb::UpdateStatus, Verb::PatchStatus] }],
            ..Manifest::default()
        }
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let Some(widget) = ctx.get(key) else { return Requeue::AwaitChange };
        if widget.metadata.deletion_timestamp.is_some() {
            return Requeue::AwaitChange;
        }
        let mut conditions = widget.status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let decided = conditions.iter().any(|c| c.get("type").and_then(Value::as_str) == Some(&self.condition_type));
        if decided {
            return Requeue::AwaitChange;
        }
        conditions.push(json!({ "type": self.condition_type, "status": self.status, "reason": self.reason }));
        conditions.sort_by(|a, b| a.get("type").and_then(Value::as_str).cmp(&b.get("type").and_then(Value::as_str)));
        if !self.precondition {
            // Unconditional: the API server applies it whatever the Widget is now.
            let blind = json!({ "status": { "conditions": conditions } });
            ctx.patch_status(key, Patch::Merge(blind), PatchParams::default());
            return Requeue::AwaitChange;
        }
        let mut widget = widget.clone();
        if !widget.status.is_object() {
            widget.status = json!({}).into();
        }
        widget.status["conditions"] = Value::Array(conditions);
        ctx.update_status(widget);
        Requeue::AwaitChange
    }
}

// Export the plugin ABI when built for wasm32.
#[cfg(feature = "export")]
recon_sdk::export_controller!(controller());

#[cfg(test)]
mod tests;
