//! Admission and writes: what the API server does to a write before the
//! store's compare-and-swap — defaults on create (uid, generated name,
//! namespace, generation), preconditions (uid, resourceVersion), graceful
//! deletion of bound pods, generation bumps on spec changes, the size limit
//! — and kubectl's apply and patch as actions.

use std::sync::Arc;

use recon_abi::{
    Action, Empty, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Object, ObjectKey, Patch, PatchParams, PropagationPolicy,
    Shared, Status, StatusReason, event::EVENT_KIND,
};
use recon_store::{Store, StoreError, StoreEvent};
use serde_json::Value;

use recon_scenario::Kinds;

use crate::event_api::{self, Version};
use crate::patch::{self, Target};
use crate::rng::Rng;

/// Fills in what the API server sets on create: uid, name from
/// generateName, generation, no resourceVersion, no deletion state.
pub(crate) fn prepare_create(mut object: Object, rng: &mut Rng, kinds: &Kinds) -> Object {
    let m = &mut object.metadata;
    if m.name.is_empty() && !m.generate_name.is_empty() {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let suffix: String =
            (0..5).map(|_| ALPHABET[rng.range_inclusive(0, ALPHABET.len() as u64 - 1) as usize] as char).collect();
        m.name = format!("{}{suffix}", m.generate_name);
    }
    if m.namespace.is_empty() && !kinds.is_cluster_scoped(&object.kind) {
        m.namespace = "default".into();
    }
    let (a, b, c, d) = (rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64());
    m.uid = format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a as u32,
        b as u16,
        (c as u16) & 0x0fff,
        ((d >> 48) as u16 & 0x3fff) | 0x8000,
        d & 0xffff_ffff_ffff
    );
    m.resource_version.clear();
    m.generation = 1;
    m.deletion_timestamp = None;
    m.deletion_grace_period_seconds = None;
    object
}

/// `kubectl apply` as an action: an update without precondition that the
/// API server turns into a create when the object does not exist.
pub(crate) fn apply_action(object: Object) -> Action {
    let mut object = object;
    object.metadata.annotations.insert(APPLY_MARK.into(), "true".into());
    Action::Update { object, dry_run: false }
}

/// `kubectl scale` / `cordon` as an action: set one field of `spec`.
pub(crate) fn patch_action(key: ObjectKey, field: &str, value: Value) -> Action {
    let mut object = Object { kind: key.kind.clone(), ..Default::default() };
    object.metadata.name = key.name;
    object.metadata.namespace = key.namespace;
    object.metadata.annotations.insert(PATCH_MARK.into(), field.into());
    object.spec = value.into();
    Action::Update { object, dry_run: false }
}

const APPLY_MARK: &str = "recon.internal/apply";
const PATCH_MARK: &str = "recon.internal/patch";

/// A store error as the API server reports it.
pub(crate) fn status_of(kinds: &Kinds, e: StoreError) -> Status {
    match e {
        StoreError::Conflict { key, expected, actual } => conflict(kinds, &key, expected, actual),
        StoreError::NotFound { key } => not_found(kinds, &key),
        StoreError::AlreadyExists { key } => {
            Status::new(StatusReason::AlreadyExists, format!("{} already exists", api_name(kinds, &key)))
        }
        StoreError::Compacted { requested, compacted } => Status::new(
            StatusReason::Gone,
            format!("too old resource version: {requested} (compacted up to {compacted})"),
        ),
        StoreError::FutureRevision { requested, current } => {
            Status::new(StatusReason::Timeout, format!("Too large resource version: {requested}, current: {current}"))
        }
    }
}

/// An object as the API server's errors name it: `pods "web-0"`,
/// `deployments.apps "web"` ([`Kinds::api_name`]). apimachinery's
/// NotFound, AlreadyExists and Conflict errors name the group-qualified
/// resource and the quoted name, and clients see these words in each
/// refusal's message.
fn api_name(kinds: &Kinds, key: &ObjectKey) -> String {
    kinds.api_name(&key.kind, &key.name)
}

/// 404 for an object that is not there: `pods "web-0" not found`.
pub(crate) fn not_found(kinds: &Kinds, key: &ObjectKey) -> Status {
    Status::new(StatusReason::NotFound, format!("{} not found", api_name(kinds, key)))
}

/// A write to `object` that expected revision `expected` where the store
/// holds `actual`, in Kubernetes' words for a failed compare-and-swap (the
/// registry's optimistic-lock message, which controllers match on), then
/// the two revisions.
fn conflict(kinds: &Kinds, object: &ObjectKey, expected: u64, actual: u64) -> Status {
    Status::new(
        StatusReason::Conflict,
        format!(
            "Operation cannot be fulfilled on {}: the object has been modified; please apply your changes to \
             the latest version and try again (the store holds revision {actual}, the write expected {expected})",
            api_name(kinds, object)
        ),
    )
}

/// A write whose object is larger than the run allows, as etcd refuses
/// requests over `--max-request-bytes` (Kubernetes answers 413; the
/// ABI's nearest status is 400).
pub(crate) fn too_large(limit: u64, action: &Action) -> Option<Status> {
    let object = match action {
        Action::Create { object, .. } | Action::Update { object, .. } | Action::UpdateStatus { object, .. } => object,
        _ => return None,
    };
    let size = recon_abi::json_len(object);
    (size > limit).then(|| {
        Status::new(
            StatusReason::BadRequest,
            format!(
                "request entity too large: {} is {size} bytes as JSON, above the limit of {limit} \
                 (limits.maxObjectBytes in the scenario)",
                object.kind
            ),
        )
    })
}

/// A write whose object does not decode as its kind's type: a field of the
/// wrong type, as `replicas: "ten"` in a ReplicaSet. An API server decodes
/// a request's body (and a patch's result) into the kind's Go type and
/// answers 400 Bad Request when it fails, worded `<Kind> in version
/// "<version>" cannot be handled as a <Kind>: <why>`, so no controller is
/// ever sent such an object. Checked for the built-in kinds Recon's
/// controllers write ([`recon_kube::check_change`] lists them): every
/// create in [`commit`] (against the last object created of its kind,
/// whose equal parts it then shares), and every update, status update,
/// patch and apply where its new version is made from the stored one,
/// `before`, which was checked when it was written, so only what the write
/// changed is decoded.
/// A deletion's marks change only metadata, which is typed and always
/// reads.
fn undecodable(object: &Object, before: Option<&Object>) -> Result<(), Status> {
    recon_kube::check_change(object, before).map_err(|why| {
        let version = object.api_version.rsplit('/').next().unwrap_or_default();
        Status::new(
            StatusReason::BadRequest,
            format!("{kind} in version {version:?} cannot be handled as a {kind}: {why}", kind = object.kind),
        )
    })
}

/// What admission made of a write the API server accepted.
#[allow(clippy::large_enum_variant, reason = "made and matched once per write; boxing would only add an allocation")]
pub(crate) enum Admitted {
    /// The store committed it.
    Written(StoreEvent),
    /// There was nothing to change, and the API server answers with the
    /// object as it is: a delete of what is already being deleted, with no
    /// shorter grace period, or a patch that changes nothing.
    Unchanged(Object),
    /// A dry run passed admission: the object as it would be, nothing stored.
    DryRun(Object),
}

/// The API server's side of a write: defaults, preconditions, graceful
/// deletion and finalizers, generation; then the store's compare-and-swap.
pub(crate) fn admit(
    store: &mut Store,
    rng: &mut Rng,
    kinds: &Kinds,
    now: u64,
    limit: u64,
    action: Action,
) -> Result<Admitted, Status> {
    let kind = action.as_write().expect("only writes are admitted").kind;
    if kinds.get(kind).is_none() {
        return Err(not_served(kind));
    }
    let dry_run = action.is_dry_run();
    let action = match action {
        Action::Create { object, dry_run } if object.kind == EVENT_KIND => {
            let version = Version::of(&object);
            Action::Create { object: event_api::admit(object, version, true)?, dry_run }
        }
        Action::Update { object, dry_run } if object.kind == EVENT_KIND => {
            let version = Version::of(&object);
            Action::Update { object: event_api::admit(object, version, false)?, dry_run }
        }
        action => action,
    };
    match action {
        Action::Delete { key, uid, resource_version, grace_period_seconds, propagation_policy, dry_run } => {
            let options = DeleteOptions { uid, resource_version, grace_period_seconds, propagation_policy };
            delete(store, kinds, now, key, options, dry_run)
        }
        Action::Patch { key, patch, params } => {
            admit_patch(store, rng, kinds, now, limit, (key, false), &patch, &params)
        }
        Action::PatchStatus { key, patch, params } => {
            admit_patch(store, rng, kinds, now, limit, (key, true), &patch, &params)
        }
        write => write_object(store, rng, kinds, now, write, dry_run),
    }
}

/// What admission decided to do to the store.
#[allow(clippy::large_enum_variant, reason = "made and matched once per write")]
enum Write {
    /// Create this object.
    Create(Object),
    /// Store this version, compare-and-swap on the revision if given.
    Update(Object, Option<u64>),
    /// Remove the object, compare-and-swap on the revision if given.
    Delete(ObjectKey, Option<u64>),
}

/// Carries out what admission decided: a store write, or for a dry run the
/// store's own checks (the object exists, or does not; the precondition
/// holds) and the object as it would be, with nothing written, no
/// revision used and so nothing for any watch.
fn commit(store: &mut Store, kinds: &Kinds, now: u64, mut write: Write, dry_run: bool) -> Result<Admitted, Status> {
    if let Write::Create(object) = &mut write {
        // An object created from the same template as the last one of its
        // kind shares its parts, which were checked when it was stored.
        let last = store.share_with_last_created(object);
        undecodable(object, last.map(|last| &**last))?;
    }
    if !dry_run {
        let event = match write {
            Write::Create(object) => store.create(object, now),
            Write::Update(object, precondition) => store.update(object, precondition, now),
            Write::Delete(key, precondition) => store.delete(&key, precondition, now),
        };
        return event.map(Admitted::Written).map_err(|e| status_of(kinds, e));
    }
    let checked = |store: &Store, key: &ObjectKey, precondition: Option<u64>| {
        let kv = store.get(key, None).map_err(|e| status_of(kinds, e))?;
        let kv = kv.ok_or_else(|| status_of(kinds, StoreError::NotFound { key: key.clone() }))?;
        match precondition.filter(|expected| *expected != kv.mod_revision) {
            Some(expected) => Err(conflict(kinds, key, expected, kv.mod_revision)),
            None => Ok(Arc::unwrap_or_clone(kv.value)),
        }
    };
    match write {
        Write::Create(object) => match store.get(&object.key(), None).map_err(|e| status_of(kinds, e))? {
            Some(_) => Err(status_of(kinds, StoreError::AlreadyExists { key: object.key() })),
            None => Ok(Admitted::DryRun(object)),
        },
        Write::Update(mut object, precondition) => {
            let current = checked(store, &object.key(), precondition)?;
            object.metadata.resource_version = current.metadata.resource_version;
            Ok(Admitted::DryRun(object))
        }
        Write::Delete(key, precondition) => checked(store, &key, precondition).map(Admitted::DryRun),
    }
}

fn write_object(
    store: &mut Store,
    rng: &mut Rng,
    kinds: &Kinds,
    now: u64,
    action: Action,
    dry_run: bool,
) -> Result<Admitted, Status> {
    match action {
        Action::Create { object, .. } => {
            let object = prepare_create(object, rng, kinds);
            if object.metadata.name.is_empty() {
                return Err(Status::new(
                    StatusReason::BadRequest,
                    "metadata.name or metadata.generateName is required",
                ));
            }
            commit(store, kinds, now, Write::Create(object), dry_run)
        }
        Action::Update { object, .. } | Action::UpdateStatus { object, .. }
            if object.metadata.annotations.contains_key(PATCH_MARK) =>
        {
            let field = object.metadata.annotations[PATCH_MARK].clone();
            let current = current(store, kinds, &object.key())?;
            let mut next = Object::clone(&current);
            if !next.spec.is_object() {
                next.spec = Value::Object(Default::default()).into();
            }
            next.spec[field.as_str()] = object.spec.into_value();
            if next.spec != current.spec {
                next.metadata.generation += 1;
            }
            undecodable(&next, Some(&current))?;
            let rev = current.revision();
            commit(store, kinds, now, Write::Update(next, rev), dry_run)
        }
        Action::Update { mut object, .. } if object.metadata.annotations.contains_key(APPLY_MARK) => {
            object.metadata.annotations.remove(APPLY_MARK);
            match store.get(&object.key(), None).map_err(|e| status_of(kinds, e))? {
                None => {
                    let object = prepare_create(object, rng, kinds);
                    commit(store, kinds, now, Write::Create(object), dry_run)
                }
                Some(kv) => {
                    let mut next = Object::clone(&kv.value);
                    next.metadata.labels = object.metadata.labels;
                    next.metadata.annotations = object.metadata.annotations;
                    // A kind's other top-level fields (a ConfigMap's data) are
                    // applied as its spec is.
                    next.other = object.other;
                    if next.spec != object.spec {
                        next.metadata.generation += 1;
                        next.spec = object.spec;
                    }
                    undecodable(&next, Some(&kv.value))?;
                    commit(store, kinds, now, Write::Update(next, Some(kv.mod_revision)), dry_run)
                }
            }
        }
        Action::Update { object, .. } => {
            let current = current_or_undecodable(store, kinds, &object)?;
            match plan_update(kinds, &current, object, BodyUid::Precondition)? {
                Change::Update(next, precondition) => {
                    commit(store, kinds, now, Write::Update(next, precondition), dry_run)
                }
                Change::Delete(key, precondition) => {
                    commit(store, kinds, now, Write::Delete(key, precondition), dry_run)
                }
            }
        }
        Action::UpdateStatus { object, .. } => {
            has_status(kinds, &object.kind)?;
            let current = current_or_undecodable(store, kinds, &object)?;
            let Change::Update(next, precondition) =
                plan_update_status(kinds, &current, object, BodyUid::Precondition)?
            else {
                unreachable!("a status update never deletes")
            };
            commit(store, kinds, now, Write::Update(next, precondition), dry_run)
        }
        other => Err(Status::new(StatusReason::BadRequest, format!("not a write: {other:?}"))),
    }
}

/// What an update does to the stored object once admitted.
#[allow(clippy::large_enum_variant, reason = "made and matched once per write")]
enum Change {
    /// Store this version, compare-and-swap on the revision if given.
    Update(Object, Option<u64>),
    /// Remove the object (its last finalizer went while it was being deleted).
    Delete(ObjectKey, Option<u64>),
}

/// An update as the API server admits it: it cannot change identity or
/// deletion state, nor status where a status subresource owns it;
/// generation counts changes to what is neither metadata nor (then)
/// status.
///
/// A write wrong in two ways is refused for the one Kubernetes checks
/// first. The generic registry's `Store.Update` (apiserver,
/// `registry/generic/registry/store.go`) has the request's body (a
/// patch's result) decoded first, 400, the whole body, a status the
/// subresource then ignores included; then the storage layer checks the
/// preconditions ([`preconditions`]), 409 or 422; only then does the
/// kind's validation run (an added finalizer while deleting, 422). So a
/// stale write that is also invalid is told it is stale, and retried.
/// A patch's uid is not a precondition ([`BodyUid`]): changed, it is
/// refused as a change to an immutable field once the storage layer's
/// checks passed.
fn plan_update(kinds: &Kinds, current: &Object, object: Object, body_uid: BodyUid) -> Result<Change, Status> {
    let mut next = object;
    share_unchanged(&mut next, current);
    let asked_uid = std::mem::replace(&mut next.metadata.uid, current.metadata.uid.clone());
    next.metadata.deletion_timestamp = current.metadata.deletion_timestamp.clone();
    next.metadata.deletion_grace_period_seconds = current.metadata.deletion_grace_period_seconds;
    if next.metadata.managed_fields.is_empty() {
        // A write that carries no managedFields keeps the stored ones.
        next.metadata.managed_fields = current.metadata.managed_fields.clone();
    }
    undecodable(&next, Some(current))?;
    let precondition = body_uid.check(kinds, current, &asked_uid, &next.metadata.resource_version)?;
    let status_subresource = kinds.has_status(&next.kind);
    if status_subresource {
        next.status = current.status.clone();
    }
    let changed = next.spec != current.spec
        || next.other != current.other
        || (!status_subresource && next.status != current.status);
    next.metadata.generation = current.metadata.generation + i64::from(changed);
    no_new_finalizers_while_deleting(kinds, current, &next)?;
    if deletion_complete(&next) {
        // The last finalizer is gone from an object marked for deletion
        // with no grace left: this update deletes it.
        return Ok(Change::Delete(next.key(), precondition));
    }
    Ok(Change::Update(next, precondition))
}

/// A status update: only status changes. Refused in the order
/// [`plan_update`] says; its whole body is decoded, spec included.
fn plan_update_status(kinds: &Kinds, current: &Object, object: Object, body_uid: BodyUid) -> Result<Change, Status> {
    let mut object = object;
    share_unchanged(&mut object, current);
    if object.metadata.managed_fields.is_empty() {
        object.metadata.managed_fields = current.metadata.managed_fields.clone();
    }
    undecodable(&object, Some(current))?;
    let precondition = body_uid.check(kinds, current, &object.metadata.uid, &object.metadata.resource_version)?;
    let mut next = current.clone();
    next.status = object.status;
    next.metadata.managed_fields = object.metadata.managed_fields;
    Ok(Change::Update(next, precondition))
}

/// Makes each part of `next` that equals `current`'s (spec, status, labels,
/// annotations, owner references) the stored one. A write decoded from a
/// plugin's JSON, or a patch's result, holds copies of its own: kept, the
/// store's versions would each hold one, and every later comparison of
/// them (the generation's below, the watch caches' field selectors) would
/// walk both. The values are equal, so nothing a client reads changes.
fn share_unchanged(next: &mut Object, current: &Object) {
    fn share<T: Empty + PartialEq>(next: &mut Shared<T>, current: &Shared<T>) {
        // Equal as pointers first: then there is nothing to do.
        if !next.ptr_eq(current) && next == current {
            *next = current.clone();
        }
    }
    share(&mut next.spec, &current.spec);
    share(&mut next.status, &current.status);
    share(&mut next.metadata.labels, &current.metadata.labels);
    share(&mut next.metadata.annotations, &current.metadata.annotations);
    share(&mut next.metadata.owner_references, &current.metadata.owner_references);
}

/// What a write's `metadata.uid` is to the API server.
///
/// An update (PUT) sends a whole object, and the update handler makes
/// its uid a precondition of the storage layer's compare-and-swap
/// (apiserver `rest.DefaultUpdatedObjectInfo`'s `Preconditions`, from
/// the object it was given): another incarnation's uid is 409, before
/// the resourceVersion is looked at. A patch's handler builds its object
/// info from no object (`patch.go`, `DefaultUpdatedObjectInfo(nil, …)`),
/// so a patch has no uid precondition: a uid the patch changes reaches
/// the registry's `BeforeUpdate`, whose common validation keeps
/// `metadata.uid` immutable, 422, after the resourceVersion's 409.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyUid {
    /// An update's or status update's: a precondition.
    Precondition,
    /// A patch's result's: an immutable field.
    Immutable,
}

impl BodyUid {
    /// The checks [`preconditions`] makes, with the body's uid judged as
    /// this kind of write judges it.
    fn check(self, kinds: &Kinds, current: &Object, asked_uid: &str, asked: &str) -> Result<Option<u64>, Status> {
        match self {
            BodyUid::Precondition => preconditions(kinds, current, asked_uid, asked),
            BodyUid::Immutable => {
                let precondition = preconditions(kinds, current, "", asked)?;
                if !asked_uid.is_empty() && asked_uid != current.metadata.uid {
                    return Err(Status::new(
                        StatusReason::Invalid,
                        format!(
                            "{} is invalid: metadata.uid: Invalid value: {asked_uid:?}: field is immutable",
                            kinds.api_kind_name(&current.kind, &current.metadata.name)
                        ),
                    ));
                }
                Ok(precondition)
            }
        }
    }
}

/// The storage layer's checks of an update, status update or patch of
/// `current` that asked for the uid `asked_uid` and the resourceVersion
/// `asked` (each empty if it did not; a resourceVersion of `"0"` is none),
/// in Kubernetes' order: the uid
/// precondition, 409; a missing resourceVersion where the kind allows no
/// unconditional update (custom resources), 422; a resourceVersion other
/// than the stored one, 409. Returns the revision the store's
/// compare-and-swap then expects (`None`: whatever is current).
fn preconditions(kinds: &Kinds, current: &Object, asked_uid: &str, asked: &str) -> Result<Option<u64>, Status> {
    if !asked_uid.is_empty() && asked_uid != current.metadata.uid {
        return Err(uid_precondition_failed(asked_uid, current));
    }
    // "0" reads as no version at all (the storage's versioner parses it
    // as 0, which an update takes as unset).
    if asked.is_empty() || asked == "0" {
        return match kinds.get(&current.kind) {
            Some(kind) if kind.custom => Err(Status::new(
                StatusReason::Invalid,
                format!(
                    "{} is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                    kinds.api_kind_name(&kind.kind, &current.metadata.name)
                ),
            )),
            _ => Ok(None),
        };
    }
    // Kubernetes answers 500 here: the versioner's parse error is not a
    // Status, and the handler makes any other error an internal one. The
    // ABI has no 500; 400 says as plainly that the request is at fault.
    let expected = asked
        .parse::<u64>()
        .map_err(|_| Status::new(StatusReason::BadRequest, format!("invalid resourceVersion {asked:?}")))?;
    let actual = current.revision().unwrap_or(0);
    if expected != actual {
        return Err(conflict(kinds, &current.key(), expected, actual));
    }
    Ok(Some(expected))
}

/// 404 for the status subresource of a kind that has none.
fn has_status(kinds: &Kinds, kind: &str) -> Result<(), Status> {
    if kinds.has_status(kind) {
        return Ok(());
    }
    Err(Status::new(
        StatusReason::NotFound,
        format!("the server could not find the requested resource: {kind} has no status subresource"),
    ))
}

/// A patch (`status`: of the status subresource), as the API server does
/// it: the patch applied to the object as it is now (or, for apply, to
/// nothing: it creates), its resourceVersion a precondition if the patch
/// set one; then admitted as an update. A dry run stops before the store.
#[allow(clippy::too_many_arguments, reason = "the admission context and one request, passed through once")]
fn admit_patch(
    store: &mut Store,
    rng: &mut Rng,
    kinds: &Kinds,
    now: u64,
    limit: u64,
    (key, status): (ObjectKey, bool),
    body: &Patch,
    params: &PatchParams,
) -> Result<Admitted, Status> {
    if status {
        has_status(kinds, &key.kind)?;
    }
    let current = store.get(&key, None).map_err(|e| status_of(kinds, e))?.map(|kv| Arc::unwrap_or_clone(kv.value));
    let creates = matches!(body, Patch::Apply(_)) && !status;
    if current.is_none() && !creates {
        return Err(not_found(kinds, &key));
    }
    let time = recon_abi::format_timestamp(now);
    let target = Target {
        key: &key,
        custom: kinds.get(&key.kind).is_some_and(|k| k.custom),
        status_subresource: kinds.has_status(&key.kind),
        status,
        time: &time,
    };
    // An Event is patched in the version the patch speaks, and stored in the core form.
    let version = (key.kind == EVENT_KIND).then(|| Version::of_patch(body));
    let view = match version {
        Some(v) => current.as_ref().map(|c| v.view(c)),
        None => current.clone(),
    };
    let mut next = patch::apply(view.as_ref(), body, params, target).map_err(|e| e.status())?;
    if let Some(v) = version {
        next = event_api::admit(next, v, current.is_none())?;
    }
    if let Some(status) = too_large(limit, &Action::Update { object: next.clone(), dry_run: false }) {
        return Err(status);
    }
    let Some(current) = current else {
        // Server-side apply of an object that does not exist creates it,
        // unless it names a uid: that object is gone, and the apply must
        // not bring back another in its place (patch.go's `applyPatch`).
        if let Patch::Apply(body) = body
            && let Some(uid) = body.pointer("/metadata/uid").and_then(Value::as_str).filter(|uid| !uid.is_empty())
        {
            return Err(Status::new(
                StatusReason::Conflict,
                format!(
                    "Operation cannot be fulfilled on {}: uid mismatch: the provided object specified uid {uid}, \
                     and no existing object was found",
                    api_name(kinds, &key)
                ),
            ));
        }
        let object = prepare_create(next, rng, kinds);
        return commit(store, kinds, now, Write::Create(object), params.dry_run);
    };
    // A resourceVersion the patch set is a precondition; without one the
    // patch applies to whatever is current (it carries the current one).
    let managed = next.metadata.managed_fields.clone();
    let change = if status {
        plan_update_status(kinds, &current, next, BodyUid::Immutable)?
    } else {
        plan_update(kinds, &current, next, BodyUid::Immutable)?
    };
    match change {
        Change::Update(mut next, precondition) => {
            next.metadata.managed_fields = managed;
            let mut unchanged = next.clone();
            unchanged.metadata.resource_version = current.metadata.resource_version.clone();
            if unchanged == current {
                return Ok(Admitted::Unchanged(current));
            }
            commit(store, kinds, now, Write::Update(next, precondition), params.dry_run)
        }
        Change::Delete(key, precondition) => {
            commit(store, kinds, now, Write::Delete(key, precondition), params.dry_run)
        }
    }
}

/// A delete, as the API server does it: preconditions (uid,
/// resourceVersion); a bound pod's graceful deletion (marked with a
/// deletionTimestamp, finished by its kubelet); an object with finalizers
/// only marked, removed when the last finalizer goes; an object already
/// being deleted left as it is unless the grace period gets shorter or the
/// propagation policy changes its garbage-collection finalizer (foreground
/// and orphan deletions are marks with the `foregroundDeletion` or
/// `orphan` finalizer, which the garbage collector removes).
fn delete(
    store: &mut Store,
    kinds: &Kinds,
    now: u64,
    key: ObjectKey,
    options: DeleteOptions,
    dry_run: bool,
) -> Result<Admitted, Status> {
    let DeleteOptions { uid, resource_version, grace_period_seconds, propagation_policy } = options;
    let mut current = Arc::unwrap_or_clone(current(store, kinds, &key)?);
    // The registry's `BeforeDelete` checks the preconditions against the
    // object it read, uid first, before the storage layer sees the delete:
    // its words, not the storage layer's that an update's uid gets.
    if let Some(uid) = uid.filter(|u| *u != current.metadata.uid) {
        return Err(Status::new(
            StatusReason::Conflict,
            format!(
                "Operation cannot be fulfilled on {}: the UID in the precondition ({uid}) does not match the UID in \
                 record ({}). The object might have been deleted and then recreated",
                api_name(kinds, &key),
                current.metadata.uid
            ),
        ));
    }
    // The registry's `BeforeDelete` compares a resourceVersion precondition
    // with the stored one as text, before anything parses it: one that is
    // not a revision as the server writes it ("abc", "", "007") names no
    // version there is, 409. A revision goes on to the store's
    // compare-and-swap, which refuses a stale one the same way.
    let precondition = match resource_version {
        Some(rv) => match rv.parse::<u64>() {
            Ok(revision) if revision.to_string() == rv => Some(revision),
            _ => {
                return Err(Status::new(
                    StatusReason::Conflict,
                    format!(
                        "Operation cannot be fulfilled on {}: the ResourceVersion in the precondition ({rv}) does not \
                         match the ResourceVersion in record ({}). The object might have been modified",
                        api_name(kinds, &key),
                        current.revision().unwrap_or(0)
                    ),
                ));
            }
        },
        None => None,
    };
    // Only a pod on a node is deleted gracefully; its kubelet finishes it.
    let bound = current.kind == "Pod" && current.field("spec.nodeName").is_some_and(|n| !n.is_empty());
    let grace = if bound { grace_period_seconds.unwrap_or(30).max(0) } else { 0 };
    let policy = propagation_policy.unwrap_or_else(|| default_policy(&current));
    let gc_finalizers = finalizers_for(&current.metadata.finalizers, policy);
    let finalizers_changed = gc_finalizers != current.metadata.finalizers;
    current.metadata.finalizers = gc_finalizers;
    let finalizers = !current.metadata.finalizers.is_empty();
    let mark = |mut object: Object, grace: i64| {
        object.metadata.deletion_timestamp = Some(recon_abi::format_timestamp(now + grace as u64 * 1000));
        object.metadata.deletion_grace_period_seconds = Some(grace);
        object
    };
    let revision = precondition.or(current.revision());
    if current.is_terminating() {
        let pending = current.metadata.deletion_grace_period_seconds.unwrap_or(0);
        if grace >= pending && finalizers_changed {
            // Only the garbage-collection finalizer changed: the last one
            // gone with no grace left ends the deletion.
            if deletion_complete(&current) {
                return commit(store, kinds, now, Write::Delete(key, precondition), dry_run);
            }
            return commit(store, kinds, now, Write::Update(current, revision), dry_run);
        }
        if grace >= pending {
            if let Some(expected) = precondition.filter(|p| Some(*p) != current.revision()) {
                let actual = current.revision().unwrap_or(0);
                return Err(conflict(kinds, &key, expected, actual));
            }
            return Ok(Admitted::Unchanged(current));
        }
        // A shorter grace period replaces the pending one.
        if grace == 0 && !finalizers {
            return commit(store, kinds, now, Write::Delete(key, precondition), dry_run);
        }
        return commit(store, kinds, now, Write::Update(mark(current, grace), revision), dry_run);
    }
    if grace > 0 || finalizers {
        return commit(store, kinds, now, Write::Update(mark(current, grace), revision), dry_run);
    }
    commit(store, kinds, now, Write::Delete(key, precondition), dry_run)
}

/// A delete's options, as in Kubernetes' `DeleteOptions`.
struct DeleteOptions {
    uid: Option<String>,
    resource_version: Option<String>,
    grace_period_seconds: Option<i64>,
    propagation_policy: Option<PropagationPolicy>,
}

/// The propagation policy of a delete that names none: the one the
/// object's garbage-collection finalizer asks for, otherwise the kind's
/// default — orphan for the workload kinds of the old `extensions/v1beta1`,
/// `apps/v1beta1` and `apps/v1beta2` versions, background for everything else.
fn default_policy(object: &Object) -> PropagationPolicy {
    let finalizers = &object.metadata.finalizers;
    if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
        return PropagationPolicy::Orphan;
    }
    if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
        return PropagationPolicy::Foreground;
    }
    let old_version = matches!(object.api_version.as_str(), "extensions/v1beta1" | "apps/v1beta1" | "apps/v1beta2");
    let workload = matches!(object.kind.as_str(), "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet");
    if old_version && workload { PropagationPolicy::Orphan } else { PropagationPolicy::Background }
}

/// The finalizers after a delete with `policy`: the others kept in their
/// order, the garbage-collection finalizer of the policy (if any) last.
fn finalizers_for(finalizers: &[String], policy: PropagationPolicy) -> Vec<String> {
    let mut next: Vec<String> =
        finalizers.iter().filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER).cloned().collect();
    if let Some(f) = policy.finalizer() {
        next.push(f.to_owned());
    }
    next
}

/// An object being deleted may lose finalizers but not gain them.
fn no_new_finalizers_while_deleting(kinds: &Kinds, current: &Object, next: &Object) -> Result<(), Status> {
    if !current.is_terminating() {
        return Ok(());
    }
    match next.metadata.finalizers.iter().find(|f| !current.metadata.finalizers.contains(f)) {
        Some(added) => Err(Status::new(
            StatusReason::Invalid,
            format!(
                "{} is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers [\"{added}\"]",
                kinds.api_kind_name(&current.kind, &current.metadata.name)
            ),
        )),
        None => Ok(()),
    }
}

/// Whether an update leaves an object marked for deletion with no
/// finalizers and no grace period left: then it is removed.
fn deletion_complete(object: &Object) -> bool {
    object.is_terminating()
        && object.metadata.finalizers.is_empty()
        && object.metadata.deletion_grace_period_seconds == Some(0)
}

/// The answer to a request for a kind the API does not serve.
pub(crate) fn not_served(kind: &str) -> Status {
    Status::new(
        StatusReason::NotFound,
        format!(
            "the server could not find the requested resource: no kind {kind} is served (declare it with a CustomResourceDefinition)"
        ),
    )
}

/// The stored object, shared with the store: most writes only read it.
fn current(store: &Store, kinds: &Kinds, key: &ObjectKey) -> Result<Arc<Object>, Status> {
    match store.get(key, None).map_err(|e| status_of(kinds, e))? {
        Some(kv) => Ok(kv.value),
        None => Err(not_found(kinds, key)),
    }
}

/// 409 for a write whose uid precondition names another incarnation
/// than `current`: the storage layer's check of an update (a delete is
/// refused earlier, by the registry's `BeforeDelete`, in its own words).
fn uid_precondition_failed(asked_uid: &str, current: &Object) -> Status {
    Status::new(
        StatusReason::Conflict,
        format!("Precondition failed: UID in precondition: {asked_uid}, UID in object meta: {}", current.metadata.uid),
    )
}

/// The stored object an update or status update of `object` changes; if
/// there is none, 400 if the body does not decode (Kubernetes decodes a
/// request's body before it looks anything up), else 404.
fn current_or_undecodable(store: &Store, kinds: &Kinds, object: &Object) -> Result<Arc<Object>, Status> {
    let found = current(store, kinds, &object.key());
    if found.is_err() {
        undecodable(object, None)?;
    }
    found
}

#[cfg(test)]
mod tests {
    /// The size `too_large` judges is the length of the object's JSON,
    /// escapes and multi-byte characters included.
    #[test]
    fn an_objects_size_is_the_length_of_its_json() {
        let object: recon_abi::Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "labels": {"a": "b"}},
            "data": {"quoted": "say \"hi\"\n", "wide": "ünïcödé ✓", "control": "\u{1}"}
        }))
        .unwrap();
        let encoded = serde_json::to_vec(&object).unwrap();
        let text = String::from_utf8_lossy(&encoded);
        assert!(text.contains(r#"say \"hi\"\n"#) && text.contains("ünïcödé ✓") && text.contains(r"\u0001"), "{text}");
        assert_eq!(recon_abi::json_len(&object), encoded.len() as u64);
    }
}
