//! Patches and server-side apply: the request bodies of the `patch` verb
//! and the options that go with them (named as in kube-rs, `Patch` and
//! `PatchParams`).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A patch body, by content type.
///
/// The body is plain JSON: the simulator interprets it against the object
/// as it is when the write reaches the store, as the API server does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Patch {
    /// `application/apply-patch+yaml`: server-side apply of a partial
    /// object (its `apiVersion` and `kind` are required) that states every
    /// field the field manager wants to own.
    Apply(Value),
    /// `application/json-patch+json` (RFC 6902): an array of operations
    /// (`add`, `remove`, `replace`, `move`, `copy`, `test`), applied in order,
    /// all or nothing.
    Json(Value),
    /// `application/merge-patch+json` (RFC 7386): maps merge, `null` removes
    /// a field, every list is replaced whole.
    Merge(Value),
    /// `application/strategic-merge-patch+json`: like a merge patch, but
    /// lists of the built-in kinds that have a merge key merge item by item
    /// (containers by `name`, conditions by `type`, …). Not served for
    /// custom resources (415).
    Strategic(Value),
}

impl Patch {
    /// The patch's type.
    pub fn patch_type(&self) -> PatchType {
        match self {
            Patch::Apply(_) => PatchType::Apply,
            Patch::Json(_) => PatchType::Json,
            Patch::Merge(_) => PatchType::Merge,
            Patch::Strategic(_) => PatchType::Strategic,
        }
    }

    /// The body.
    pub fn body(&self) -> &Value {
        match self {
            Patch::Apply(v) | Patch::Json(v) | Patch::Merge(v) | Patch::Strategic(v) => v,
        }
    }
}

/// The type of a patch, without its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum PatchType {
    /// Server-side apply.
    Apply,
    /// JSON patch (RFC 6902).
    Json,
    /// JSON merge patch (RFC 7386).
    Merge,
    /// Strategic merge patch.
    Strategic,
}

impl fmt::Display for PatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PatchType::Apply => "apply",
            PatchType::Json => "json patch",
            PatchType::Merge => "merge patch",
            PatchType::Strategic => "strategic merge patch",
        })
    }
}

/// Options of a patch request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchParams {
    /// `fieldManager`: who owns the fields this write sets. Required for
    /// apply; for other patches the API server uses the writer's name when
    /// it is empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_manager: String,
    /// `force` (apply only): take the fields that conflict with other
    /// managers instead of failing with 409 Conflict.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// `dryRun=All`: admit and answer as usual, store nothing, tell no
    /// watch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

impl PatchParams {
    /// Options for server-side apply by `manager`.
    pub fn apply(manager: impl Into<String>) -> PatchParams {
        PatchParams { field_manager: manager.into(), ..Default::default() }
    }

    /// The same options, forcing conflicts.
    pub fn force(self) -> PatchParams {
        PatchParams { force: true, ..self }
    }

    /// The same options, as a dry run.
    pub fn dry_run(self) -> PatchParams {
        PatchParams { dry_run: true, ..self }
    }

    /// Whether every option is at its default (nothing to put on the wire).
    pub fn is_default(&self) -> bool {
        *self == PatchParams::default()
    }
}
