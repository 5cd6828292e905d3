//! Patch application, as a pure function: the object as it is, a patch and
//! its options → the object as the patch makes it (with its
//! `metadata.managedFields`), or a typed error. Admission then treats the
//! result as an update: preconditions, finalizer rules, generation and the
//! status subresource apply exactly as for update.
//!
//! - JSON patch (RFC 6902) and JSON merge patch (RFC 7386) are the
//!   `json-patch` crate's;
//! - strategic merge patch is [`strategic`]'s: lists with a merge key merge
//!   item by item (built-in kinds only; 415 for custom resources);
//! - server-side apply and the field ownership every patch records are
//!   [`fields`]'s.

mod fields;
mod strategic;

use recon_abi::{Object, ObjectKey, Patch, PatchParams, Status, StatusReason};
use serde_json::Value;

use fields::{Ownership, Schema};

/// Why a patch was refused, each with the status the API server answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a patch of its type (400 BadRequest): fix its shape.
    #[error("{0}")]
    Malformed(String),
    /// The patch is well formed but does not apply to the object as it is
    /// (422 Invalid): a path that is not there, a failed `test`, a list
    /// item without its merge key.
    #[error("{0}")]
    DoesNotApply(String),
    /// The patched object is not a valid object (422 Invalid): a field of
    /// the wrong type, a field the object does not have.
    #[error("{0}")]
    Invalid(String),
    /// The patch type is not served for this kind (415): a strategic merge
    /// patch of a custom resource; use a merge patch or apply.
    #[error("{0}")]
    Unsupported(String),
    /// Server-side apply would change fields another manager owns (409
    /// Conflict): (manager, field path) for each; apply with `force` to
    /// take them, or leave them out of the configuration.
    #[error("Apply failed with {} conflict(s): {}", .0.len(), conflicts(.0))]
    Conflict(Vec<(String, String)>),
}

fn conflicts(list: &[(String, String)]) -> String {
    list.iter().map(|(m, p)| format!("conflict with \"{m}\": {p}")).collect::<Vec<_>>().join("; ")
}

impl PatchError {
    /// The status the API server answers with.
    pub fn status(&self) -> Status {
        let reason = match self {
            PatchError::Malformed(_) => StatusReason::BadRequest,
            PatchError::DoesNotApply(_) | PatchError::Invalid(_) => StatusReason::Invalid,
            PatchError::Unsupported(_) => StatusReason::UnsupportedMediaType,
            PatchError::Conflict(_) => StatusReason::Conflict,
        };
        Status::new(reason, self.to_string())
    }
}

/// What a patch is applied to, besides the object.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// The object named by the request.
    pub key: &'a ObjectKey,
    /// Whether the kind is a custom resource (no strategic merge patch;
    /// lists are atomic).
    pub custom: bool,
    /// Whether the kind has a status subresource.
    pub status_subresource: bool,
    /// Whether this patch is of the status subresource.
    pub status: bool,
    /// Now, for `managedFields` times (RFC 3339).
    pub time: &'a str,
}

/// Applies `patch` to `current` (`None`: the object does not exist, which
/// only apply accepts: it creates). The result carries the field ownership
/// the write leaves; its `resourceVersion` is the one the patch asked for
/// (a precondition) or `current`'s.
pub fn apply(
    current: Option<&Object>,
    patch: &Patch,
    params: &PatchParams,
    target: Target<'_>,
) -> Result<Object, PatchError> {
    let schema = Schema { kind: &target.key.kind, custom: target.custom };
    let is_apply = matches!(patch, Patch::Apply(_));
    if is_apply && params.field_manager.is_empty() {
        return Err(PatchError::Invalid(
            "PatchOptions is invalid: fieldManager: Required value: is required for apply patch".into(),
        ));
    }
    if !is_apply && params.force {
        return Err(PatchError::Invalid(
            "PatchOptions is invalid: force: Forbidden: may not be specified for non-apply patch".into(),
        ));
    }
    let (mut doc, owners) = match current {
        Some(object) => {
            let mut object = object.clone();
            let owners = Ownership::read(&object.metadata.managed_fields);
            object.metadata.managed_fields.clear();
            (serde_json::to_value(&object).expect("objects are JSON"), owners)
        }
        None if is_apply => (Value::Object(Default::default()), Ownership::default()),
        None => return Err(PatchError::Malformed("only apply creates; this object does not exist".into())),
    };
    let before = doc.clone();
    let subresource = if target.status { "status" } else { "" };
    let owners = match patch {
        Patch::Json(body) => {
            let ops: json_patch::Patch = serde_json::from_value(body.clone()).map_err(|e| {
                PatchError::Malformed(format!("a JSON patch must be a list of operations (RFC 6902): {e}"))
            })?;
            json_patch::patch(&mut doc, &ops).map_err(|e| PatchError::DoesNotApply(e.to_string()))?;
            record_update(&before, &doc, owners, params, target, schema)
        }
        Patch::Merge(body) => {
            if !body.is_object() {
                return Err(PatchError::Malformed("a merge patch must be a JSON object (RFC 7386)".into()));
            }
            json_patch::merge(&mut doc, body);
            record_update(&before, &doc, owners, params, target, schema)
        }
        Patch::Strategic(_) if target.custom => {
            return Err(PatchError::Unsupported(format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml \
                 ({} is a custom resource: strategic merge patch is not served for it)",
                target.key.kind
            )));
        }
        Patch::Strategic(body) => {
            strategic::merge(&mut doc, body, schema)?;
            record_update(&before, &doc, owners, params, target, schema)
        }
        Patch::Apply(body) => {
            check_apply_body(body, target.key)?;
            let applied = fields::ownable(&fields::without_nulls(body), target.status, target.status_subresource);
            let set = fields::collect(&applied, schema);
            let me = (params.field_manager.as_str(), "Apply", subresource);
            let mut owners = owners;
            let mut conflicts = Vec::new();
            let mut taken = fields::FieldSet::new();
            for owner in
                owners.owners.iter().filter(|o| !(o.manager == me.0 && o.operation == me.1 && o.subresource == me.2))
            {
                for path in owner.fields.intersection(&set) {
                    if !fields::same_at(&doc, &applied, path) {
                        conflicts.push((owner.manager.clone(), fields::render(path)));
                        taken.insert(path.clone());
                    }
                }
            }
            if !conflicts.is_empty() && !params.force {
                return Err(PatchError::Conflict(conflicts));
            }
            owners.take_from_others(me, &taken);
            let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
            let entry = owners.entry(me.0, me.1, me.2, api_version);
            let previous = entry.fields.clone();
            Ownership::set(entry, set.clone(), api_version);
            if current.is_none() {
                doc = serde_json::json!({ "apiVersion": api_version, "kind": target.key.kind });
            }
            fields::merge_applied(&mut doc, &applied, &mut Vec::new(), schema);
            // What the manager stopped applying and nobody else owns goes.
            let dropped: Vec<_> = previous.difference(&set).collect();
            for path in dropped.into_iter().rev() {
                if !owners.others_own(me, path) {
                    fields::remove(&mut doc, path);
                }
            }
            // A resourceVersion in the configuration is a precondition.
            if let Some(rv) = body.pointer("/metadata/resourceVersion").filter(|v| !v.is_null()) {
                doc["metadata"]["resourceVersion"] = rv.clone();
            }
            if current.is_none() {
                let meta = doc["metadata"].as_object_mut();
                if let Some(meta) = meta {
                    meta.insert("name".into(), target.key.name.clone().into());
                    if !target.key.namespace.is_empty() {
                        meta.insert("namespace".into(), target.key.namespace.clone().into());
                    }
                } else {
                    doc["metadata"] = serde_json::json!({ "name": target.key.name, "namespace": target.key.namespace });
                }
            }
            owners
        }
    };
    let mut object: Object =
        serde_json::from_value(doc).map_err(|e| PatchError::Invalid(format!("{} is invalid: {e}", target.key)))?;
    if object.kind != target.key.kind || object.metadata.name != target.key.name {
        return Err(PatchError::Malformed(format!(
            "the patched object ({} {}) does not match the object of the request ({})",
            object.kind, object.metadata.name, target.key
        )));
    }
    if current.is_some() && object.metadata.namespace != target.key.namespace {
        return Err(PatchError::Malformed(format!(
            "the namespace of the patched object ({}) does not match the namespace of the request ({})",
            object.metadata.namespace, target.key.namespace
        )));
    }
    object.metadata.managed_fields = owners.write(target.time);
    Ok(object)
}

/// An apply body names its type and, if it names an object, the one of the
/// request.
fn check_apply_body(body: &Value, key: &ObjectKey) -> Result<(), PatchError> {
    let text = |field: &str| body.get(field).and_then(Value::as_str).unwrap_or_default();
    if !body.is_object() {
        return Err(PatchError::Malformed("an apply configuration must be an object".into()));
    }
    for field in ["apiVersion", "kind"] {
        if text(field).is_empty() {
            return Err(PatchError::Malformed(format!(
                "error decoding the apply configuration: Object '{}' is missing",
                if field == "kind" { "Kind" } else { "apiVersion" }
            )));
        }
    }
    if text("kind") != key.kind {
        return Err(PatchError::Malformed(format!(
            "the apply configuration is a {}, the request is for a {}",
            text("kind"),
            key.kind
        )));
    }
    let name = body.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if !name.is_empty() && name != key.name {
        return Err(PatchError::Malformed(format!(
            "the name of the object ({name}) does not match the name of the request ({})",
            key.name
        )));
    }
    Ok(())
}

/// A write other than apply: the fields it changed become its manager's
/// (operation `Update`) and no one else's; fields it removed are no one's.
fn record_update(
    before: &Value,
    after: &Value,
    mut owners: Ownership,
    params: &PatchParams,
    target: Target<'_>,
    schema: Schema<'_>,
) -> Ownership {
    let old = fields::ownable(before, target.status, target.status_subresource);
    let new = fields::ownable(after, target.status, target.status_subresource);
    let (old_set, new_set) = (fields::collect(&old, schema), fields::collect(&new, schema));
    let changed: fields::FieldSet = new_set.iter().filter(|p| !fields::same_at(&old, &new, p)).cloned().collect();
    let gone: fields::FieldSet = old_set.difference(&new_set).cloned().collect();
    if changed.is_empty() && gone.is_empty() {
        return owners;
    }
    let subresource = if target.status { "status" } else { "" };
    let me = (params.field_manager.as_str(), "Update", subresource);
    owners.take_from_others(me, &changed);
    owners.take_from_all(&gone);
    let api_version = after.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
    let entry = owners.entry(me.0, me.1, me.2, &api_version);
    let mut set = entry.fields.clone();
    set.extend(changed);
    set.retain(|p| !gone.contains(p));
    Ownership::set(entry, set, &api_version);
    owners
}
