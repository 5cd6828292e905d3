//! Writes beyond replace: merge, JSON and strategic merge patches,
//! server-side apply, preconditions, dry runs and the status subresource.
//! Each test names the Kubernetes documentation statement (or RFC) it
//! follows, in our words; docs/API-SEMANTICS.md lists them.

use recon_abi::{Action, Object, ObjectKey, Patch, PatchParams, Status, StatusReason};
use recon_sim::{Event, Sim};
use serde_json::{Value, json};

mod common;
use common::write;

const DEPLOYMENT: &str = r#"
  - apiVersion: apps/v1
    kind: Deployment
    metadata: { name: web, namespace: default, labels: { app: web } }
    spec:
      replicas: 1
      template:
        spec:
          containers:
            - { name: app, image: "app:1" }
            - { name: sidecar, image: "side:1" }
  - apiVersion: v1
    kind: Pod
    metadata: { name: web-0, namespace: default, finalizers: [example.com/cleanup] }
    spec: { containers: [ { name: app, image: "app:1" } ] }
    status:
      phase: Running
      conditions:
        - { type: Ready, status: "False" }
        - { type: PodScheduled, status: "True" }
  - apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: { name: widgets.example.com }
    spec:
      group: example.com
      names: { kind: Widget, plural: widgets }
      scope: Namespaced
      versions: [ { name: v1, served: true, storage: true, subresources: { status: {} } } ]
  - apiVersion: example.com/v1
    kind: Widget
    metadata: { name: w, namespace: default }
    spec: { size: 1, tags: [a, b] }"#;

fn cluster_with(limits: &str) -> Sim {
    let yaml = format!(
        "name: patches\nduration: 60s\nnetwork: {{ latency: {{ min: 1ms, max: 1ms }} }}\n{limits}apiServers: [ {{ name: apiserver-1 }} ]\nobjects:{DEPLOYMENT}\n"
    );
    let scenario = recon_scenario::parse("patches.yaml", &yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|_| None)).expect("no controllers needed")
}

fn cluster() -> Sim {
    cluster_with("")
}

fn key(kind: &str, name: &str) -> ObjectKey {
    ObjectKey::new(kind, "default", name)
}

fn web() -> ObjectKey {
    key("Deployment", "web")
}

fn patch(key: ObjectKey, patch: Patch, params: PatchParams) -> Action {
    Action::Patch { key, patch, params }
}

fn merge(key: ObjectKey, body: Value) -> Action {
    patch(key, Patch::Merge(body), PatchParams::default())
}

fn apply(manager: &str, body: Value) -> Action {
    patch(web(), Patch::Apply(body), PatchParams::apply(manager))
}

fn ok(sim: &mut Sim, at: u64, action: Action) -> Object {
    write(sim, at, action).expect("the write is accepted").expect("the object is there")
}

fn stored(sim: &Sim, key: &ObjectKey) -> Object {
    sim.store().get(key, None).unwrap().expect("stored").value.as_ref().clone()
}

/// The write is refused with `reason`, and the store did not move.
fn refused(sim: &mut Sim, at: u64, action: Action, reason: StatusReason) -> Status {
    let revision = sim.store().revision();
    let status = write(sim, at, action).expect_err("refused");
    assert_eq!(status.reason, reason, "{status}");
    assert_eq!(sim.store().revision(), revision, "nothing was written");
    status
}

fn owners(object: &Object) -> Vec<(String, String)> {
    object.metadata.managed_fields.iter().map(|e| (e.manager.clone(), e.operation.clone())).collect()
}

// RFC 7386 (JSON Merge Patch), section 2, and "Update API Objects in Place
// Using kubectl patch" (kubernetes.io), "Use a JSON merge patch": maps
// merge, null removes a field, and a list in the patch replaces the list.
#[test]
fn a_merge_patch_merges_maps_removes_nulls_and_replaces_lists() {
    let mut sim = cluster();
    let body = json!({
        "metadata": { "labels": { "tier": "front" } },
        "spec": { "replicas": null, "paused": true, "template": { "spec": { "containers": [ { "name": "only", "image": "x" } ] } } }
    });
    let after = ok(&mut sim, 1_000, merge(web(), body));
    assert_eq!(after.metadata.labels.get("app").map(String::as_str), Some("web"), "kept");
    assert_eq!(after.metadata.labels.get("tier").map(String::as_str), Some("front"), "added");
    assert_eq!(after.spec.get("replicas"), None, "null removed it");
    assert_eq!(after.spec["paused"], json!(true));
    assert_eq!(after.spec["template"]["spec"]["containers"], json!([ { "name": "only", "image": "x" } ]));
    assert_eq!(after.metadata.generation, 2, "a spec change bumps generation, as for update");
}

// RFC 6902 (JSON Patch), sections 3-5: operations apply in order and the
// patch is all or nothing; a failed `test` fails the whole patch. The API
// server answers a patch that does not apply with 422.
#[test]
fn a_json_patch_applies_in_order_and_a_failed_test_changes_nothing() {
    let mut sim = cluster();
    let ops = json!([
        { "op": "test", "path": "/spec/replicas", "value": 1 },
        { "op": "replace", "path": "/spec/replicas", "value": 3 },
        { "op": "add", "path": "/spec/template/spec/containers/-", "value": { "name": "third", "image": "t:1" } },
        { "op": "remove", "path": "/spec/template/spec/containers/1" }
    ]);
    let after = ok(&mut sim, 1_000, patch(web(), Patch::Json(ops), PatchParams::default()));
    assert_eq!(after.spec["replicas"], json!(3));
    let names: Vec<&str> = after.spec["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "third"]);

    // The test fails (replicas is 3 now): not even the first operation stays.
    let ops = json!([
        { "op": "add", "path": "/spec/paused", "value": true },
        { "op": "test", "path": "/spec/replicas", "value": 1 }
    ]);
    let status =
        refused(&mut sim, 2_000, patch(web(), Patch::Json(ops), PatchParams::default()), StatusReason::Invalid);
    assert_eq!(status.code, 422);
    assert!(status.message.contains("/spec/replicas"), "{}", status.message);
    assert_eq!(stored(&sim, &web()).spec.get("paused"), None);
}

// RFC 6902 section 5 (error handling) and the API server's patch handler:
// a pointer to nothing is a patch that does not apply (422 Invalid); a body
// that is not a list of operations is a bad request (400).
#[test]
fn a_json_patch_with_a_wrong_pointer_is_invalid_and_a_malformed_one_a_bad_request() {
    let mut sim = cluster();
    let wrong = json!([ { "op": "replace", "path": "/spec/nothing/here", "value": 1 } ]);
    let status =
        refused(&mut sim, 1_000, patch(web(), Patch::Json(wrong), PatchParams::default()), StatusReason::Invalid);
    assert!(status.message.contains("/spec/nothing/here"), "{}", status.message);
    let malformed = json!({ "op": "replace" });
    let status = refused(
        &mut sim,
        1_200,
        patch(web(), Patch::Json(malformed), PatchParams::default()),
        StatusReason::BadRequest,
    );
    assert_eq!(status.code, 400);
    let unknown_op = json!([ { "op": "frobnicate", "path": "/spec" } ]);
    refused(&mut sim, 1_400, patch(web(), Patch::Json(unknown_op), PatchParams::default()), StatusReason::BadRequest);
}

// API concepts, validation of the result: a patch that leaves a field of
// the wrong type is refused with the reason (422 Invalid), and the run goes
// on: a later valid patch is applied.
#[test]
fn a_patch_that_leaves_a_field_of_the_wrong_type_is_invalid_and_the_run_goes_on() {
    let mut sim = cluster();
    let status =
        refused(&mut sim, 1_000, merge(web(), json!({ "metadata": { "labels": "web" } })), StatusReason::Invalid);
    assert!(status.message.contains("invalid type"), "{}", status.message);
    refused(&mut sim, 1_200, merge(web(), json!(["not", "a", "map"])), StatusReason::BadRequest);
    let after = ok(&mut sim, 1_400, merge(web(), json!({ "spec": { "replicas": 2 } })));
    assert_eq!(after.spec["replicas"], json!(2));
}

// "Update API Objects in Place Using kubectl patch" (kubernetes.io), "Use a
// strategic merge patch": a list whose patch strategy is merge (containers,
// by name) merges item by item; other lists are replaced. Pod conditions
// merge by type.
#[test]
fn a_strategic_merge_patch_merges_containers_by_name_and_conditions_by_type() {
    let mut sim = cluster();
    let body =
        json!({ "spec": { "template": { "spec": { "containers": [ { "name": "sidecar", "image": "side:2" } ] } } } });
    let after = ok(&mut sim, 1_000, patch(web(), Patch::Strategic(body.clone()), PatchParams::default()));
    assert_eq!(
        after.spec["template"]["spec"]["containers"],
        json!([ { "name": "app", "image": "app:1" }, { "name": "sidecar", "image": "side:2" } ])
    );
    // The same body as a merge patch replaces the list.
    let replaced = ok(&mut sim, 1_200, patch(web(), Patch::Merge(body), PatchParams::default()));
    assert_eq!(replaced.spec["template"]["spec"]["containers"], json!([ { "name": "sidecar", "image": "side:2" } ]));

    let conditions = json!({ "status": { "conditions": [ { "type": "Ready", "status": "True" } ] } });
    let pod = key("Pod", "web-0");
    let status_patch =
        Action::PatchStatus { key: pod.clone(), patch: Patch::Strategic(conditions), params: PatchParams::default() };
    let after = ok(&mut sim, 1_400, status_patch);
    assert_eq!(
        after.status["conditions"],
        json!([ { "type": "Ready", "status": "True" }, { "type": "PodScheduled", "status": "True" } ])
    );
}

// "Update API Objects in Place Using kubectl patch" (kubernetes.io), "Use a
// strategic merge patch": custom resources do not support strategic merge
// patch (the API server answers 415 Unsupported Media Type); merge patch
// works, and replaces their lists.
#[test]
fn a_strategic_merge_patch_of_a_custom_resource_is_unsupported() {
    let mut sim = cluster();
    let widget = key("Widget", "w");
    let body = json!({ "spec": { "tags": ["c"] } });
    let status = refused(
        &mut sim,
        1_000,
        patch(widget.clone(), Patch::Strategic(body.clone()), PatchParams::default()),
        StatusReason::UnsupportedMediaType,
    );
    assert_eq!(status.code, 415);
    let after = ok(&mut sim, 1_200, merge(widget, body));
    assert_eq!(after.spec["tags"], json!(["c"]));
}

// "Server-Side Apply" (kubernetes.io), "Conflicts": applying a field that
// another manager owns with a different value fails with 409 Conflict
// naming the manager and the field; applying the same value makes the
// field shared; "Conflicts" → forcing: with force the applier takes the
// field and the other manager loses it.
#[test]
fn server_side_apply_conflicts_between_two_managers_and_force_takes_the_field() {
    let mut sim = cluster();
    let config = |replicas: u64| json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web" }, "spec": { "replicas": replicas } });
    let first = ok(&mut sim, 1_000, apply("alice", config(3)));
    assert_eq!(first.spec["replicas"], json!(3));
    assert_eq!(owners(&first), [("alice".to_string(), "Apply".to_string())]);
    assert!(first.metadata.managed_fields[0].fields_v1["f:spec"].get("f:replicas").is_some());

    let status = refused(&mut sim, 1_200, apply("bob", config(5)), StatusReason::Conflict);
    assert_eq!(status.code, 409);
    assert!(status.message.contains("conflict with \"alice\": .spec.replicas"), "{}", status.message);
    assert_eq!(stored(&sim, &web()).spec["replicas"], json!(3));

    // The same value: no conflict, the field is shared.
    let shared = ok(&mut sim, 1_400, apply("bob", config(3)));
    assert_eq!(owners(&shared).len(), 2);

    // Forced: bob takes it, alice no longer owns it (and so no longer
    // conflicts with bob's later change).
    let forced = patch(web(), Patch::Apply(config(7)), PatchParams::apply("bob").force());
    let taken = ok(&mut sim, 1_600, forced);
    assert_eq!(taken.spec["replicas"], json!(7));
    let alice = taken.metadata.managed_fields.iter().find(|e| e.manager == "alice");
    assert!(alice.is_none_or(|e| e.fields_v1["f:spec"].get("f:replicas").is_none()), "{alice:?}");
    assert_eq!(ok(&mut sim, 1_800, apply("bob", config(8))).spec["replicas"], json!(8));
}

// "Server-Side Apply" (kubernetes.io), "Merge strategy": a field the
// manager applied before and leaves out of its new configuration is
// removed if no other manager owns it; one another manager also owns
// stays.
#[test]
fn server_side_apply_removes_the_fields_a_manager_stopped_applying_and_owns_alone() {
    let mut sim = cluster();
    let config = |labels: Value| json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web", "labels": labels } });
    ok(&mut sim, 1_000, apply("alice", config(json!({ "mine": "1", "ours": "1" }))));
    ok(&mut sim, 1_200, apply("bob", config(json!({ "ours": "1" }))));
    let after = ok(&mut sim, 1_400, apply("alice", config(json!({}))));
    let labels = &after.metadata.labels;
    assert!(!labels.contains_key("mine"), "alice owned it alone: removed ({labels:?})");
    assert_eq!(labels.get("ours").map(String::as_str), Some("1"), "bob still owns it");
    assert_eq!(labels.get("app").map(String::as_str), Some("web"), "nobody applied it: untouched");
}

// "Server-Side Apply" (kubernetes.io), "Field management" and "Using
// server-side apply in a controller": apply creates an object that does
// not exist; an apply needs a field manager (422) and a body with
// apiVersion and kind (400).
#[test]
fn apply_creates_what_does_not_exist_and_needs_a_field_manager_and_a_typed_body() {
    let mut sim = cluster();
    let fresh = key("Deployment", "fresh");
    let body = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "fresh" }, "spec": { "replicas": 2 } });
    let created = ok(&mut sim, 1_000, patch(fresh.clone(), Patch::Apply(body.clone()), PatchParams::apply("ops")));
    assert_eq!(created.metadata.namespace, "default");
    assert!(!created.metadata.uid.is_empty());
    assert_eq!(owners(&created), [("ops".to_string(), "Apply".to_string())]);

    let other = key("Deployment", "other");
    let status = refused(
        &mut sim,
        1_200,
        patch(other.clone(), Patch::Apply(body.clone()), PatchParams::default()),
        StatusReason::Invalid,
    );
    assert!(status.message.contains("fieldManager"), "{}", status.message);
    let untyped = json!({ "metadata": { "name": "other" }, "spec": { "replicas": 2 } });
    let status = refused(
        &mut sim,
        1_400,
        patch(other.clone(), Patch::Apply(untyped), PatchParams::apply("ops")),
        StatusReason::BadRequest,
    );
    assert!(status.message.contains("missing"), "{}", status.message);
    // A merge patch of something that does not exist is 404.
    refused(&mut sim, 1_600, merge(other.clone(), json!({ "spec": {} })), StatusReason::NotFound);

    // An apply that names a uid creates nothing: the object it names is
    // gone, and another must not take its place (the API server's patch
    // handler answers 409 Conflict, "uid mismatch").
    let mut gone = body;
    gone["metadata"]["name"] = json!("other");
    gone["metadata"]["uid"] = json!(created.metadata.uid);
    let status = refused(
        &mut sim,
        1_800,
        patch(other.clone(), Patch::Apply(gone), PatchParams::apply("ops")),
        StatusReason::Conflict,
    );
    assert!(status.message.contains("uid mismatch"), "{status}");
    assert!(sim.store().get(&other, None).unwrap().is_none(), "nothing was created");
}

// "Server-Side Apply" (kubernetes.io), "Field management": writes other
// than apply are recorded too, with operation Update, under the client's
// manager name; a field another manager changes is no longer the
// applier's (so it can be applied again without conflict only by forcing).
#[test]
fn a_merge_patch_takes_ownership_of_the_fields_it_changes() {
    let mut sim = cluster();
    let config = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web" }, "spec": { "replicas": 3 } });
    ok(&mut sim, 1_000, apply("alice", config.clone()));
    let params = PatchParams { field_manager: "autoscaler".into(), ..Default::default() };
    let scaled = ok(&mut sim, 1_200, patch(web(), Patch::Merge(json!({ "spec": { "replicas": 9 } })), params));
    assert!(owners(&scaled).contains(&("autoscaler".to_string(), "Update".to_string())), "{:?}", owners(&scaled));
    let status = refused(
        &mut sim,
        1_400,
        apply("alice", json!({ "apiVersion": "apps/v1", "kind": "Deployment", "spec": { "replicas": 4 } })),
        StatusReason::Conflict,
    );
    assert!(status.message.contains("\"autoscaler\""), "{}", status.message);
    // Without a field manager, the writer's name is the manager.
    let unnamed = ok(&mut sim, 1_600, merge(web(), json!({ "spec": { "paused": true } })));
    assert!(
        unnamed.metadata.managed_fields.iter().any(|e| e.operation == "Update" && e.manager == "kubectl"),
        "{:?}",
        owners(&unnamed)
    );
}

// API concepts, "Resource versions" and "Update API Objects in Place Using
// kubectl patch": a patch without a resourceVersion applies to whatever
// is current, so two writers that computed their patch from the same old
// state both succeed and one change is lost; with metadata.resourceVersion
// in the patch the second is refused with 409 Conflict and can retry.
#[test]
fn two_patches_without_a_precondition_lose_an_update_and_with_one_the_second_conflicts() {
    let mut sim = cluster();
    let seen = stored(&sim, &web());
    let rv = seen.metadata.resource_version.clone();
    let replicas = seen.spec["replicas"].as_u64().unwrap();
    // Two writers each add one replica to what they saw.
    let add_one = |rv: Option<&str>| {
        let mut body = json!({ "spec": { "replicas": replicas + 1 } });
        if let Some(rv) = rv {
            body["metadata"] = json!({ "resourceVersion": rv });
        }
        merge(web(), body)
    };
    ok(&mut sim, 1_000, add_one(None));
    ok(&mut sim, 1_200, add_one(None));
    assert_eq!(stored(&sim, &web()).spec["replicas"], json!(2), "two increments, one lost");

    let mut sim = cluster();
    ok(&mut sim, 1_000, add_one(Some(&rv)));
    let status = refused(&mut sim, 1_200, add_one(Some(&rv)), StatusReason::Conflict);
    assert!(status.message.contains("has been modified"), "{}", status.message);
    assert_eq!(stored(&sim, &web()).spec["replicas"], json!(2));
}

// A patch names no incarnation: unlike an update, whose object's uid the
// update handler makes a precondition (409 for another incarnation's), a
// patch's handler builds its update from no object (apiserver
// `endpoints/handlers/patch.go`), so a uid the patch changes is judged by
// the registry's BeforeUpdate, which keeps metadata.uid immutable (422)
// once the storage layer found the resourceVersion current (409 if not).
#[test]
fn a_patch_that_changes_the_uid_is_invalid_once_its_resource_version_holds() {
    let mut sim = cluster();
    let pod = key("Pod", "web-0");
    let before = stored(&sim, &pod);
    let rv = before.metadata.resource_version.clone();
    let other_uid = |rv: Option<&str>| {
        let mut body = json!({ "metadata": { "uid": "not-its-uid" } });
        if let Some(rv) = rv {
            body["metadata"]["resourceVersion"] = json!(rv);
        }
        body
    };
    for (at, (what, action)) in (1..).map(|s| s * 1_000).zip([
        ("a merge patch", merge(pod.clone(), other_uid(None))),
        ("the same with its resourceVersion", merge(pod.clone(), other_uid(Some(&rv)))),
        (
            "a merge patch of the status",
            Action::PatchStatus {
                key: pod.clone(),
                patch: Patch::Merge(other_uid(None)),
                params: PatchParams::default(),
            },
        ),
    ]) {
        let status = refused(&mut sim, at, action, StatusReason::Invalid);
        assert!(
            status.message.contains("metadata.uid: Invalid value: \"not-its-uid\": field is immutable"),
            "{what}: {status}"
        );
    }
    // A stale resourceVersion is found first: the writer is told to reread.
    ok(&mut sim, 5_000, merge(pod.clone(), json!({ "metadata": { "labels": { "moved": "on" } } })));
    let status = refused(&mut sim, 6_000, merge(pod.clone(), other_uid(Some(&rv))), StatusReason::Conflict);
    assert!(status.message.contains("has been modified"), "{status}");
    // An update of the whole object names its incarnation: 409, as before.
    let mut update = stored(&sim, &pod);
    update.metadata.uid = "not-its-uid".into();
    let status = refused(&mut sim, 7_000, Action::Update { object: update, dry_run: false }, StatusReason::Conflict);
    assert!(status.message.starts_with("Precondition failed: UID in precondition: not-its-uid"), "{status}");
    assert_eq!(stored(&sim, &pod).metadata.uid, before.metadata.uid);
}

// API concepts, "Dry-run": a dry-run request goes through admission and
// validation and answers with the object as it would be, but nothing is
// stored and no watch sees it; a dry run that would fail fails the same.
#[test]
fn a_dry_run_is_validated_and_answered_but_nothing_is_stored() {
    let mut sim = cluster();
    let revision = sim.store().revision();
    let params = PatchParams::default().dry_run();
    let would = ok(&mut sim, 1_000, patch(web(), Patch::Merge(json!({ "spec": { "replicas": 4 } })), params.clone()));
    assert_eq!(would.spec["replicas"], json!(4));
    assert_eq!(sim.store().revision(), revision, "nothing stored");
    assert_eq!(stored(&sim, &web()).spec["replicas"], json!(1));
    let wrong = json!([ { "op": "remove", "path": "/spec/nope" } ]);
    refused(&mut sim, 1_200, patch(web(), Patch::Json(wrong), params), StatusReason::Invalid);
    let writes =
        sim.trace().entries.iter().filter(|e| matches!(e.event, Event::StoreWrite { ref by, .. } if by != "scenario"));
    assert_eq!(writes.count(), 0, "no store write in the trace, so nothing for a watch");
    let dry = sim
        .trace()
        .entries
        .iter()
        .find(|e| matches!(e.event, Event::WriteUnchanged { .. }))
        .expect("the dry run is in the trace");
    assert!(
        recon_trace::text::describe(dry).contains("dry run of merge patch"),
        "{}",
        recon_trace::text::describe(dry)
    );
}

// CustomResourceDefinitions, "Status subresource", as for update: a patch
// of the main resource leaves status alone; a patch of /status changes
// only status and does not bump generation.
#[test]
fn patch_and_patch_status_touch_only_their_part() {
    let mut sim = cluster();
    let widget = key("Widget", "w");
    let both = json!({ "spec": { "size": 2 }, "status": { "ready": true } });
    let main = ok(&mut sim, 1_000, merge(widget.clone(), both.clone()));
    assert_eq!(main.spec["size"], json!(2));
    assert_eq!(main.status.get("ready"), None, "status is the subresource's");
    assert_eq!(main.metadata.generation, 2);
    let status_patch = Action::PatchStatus {
        key: widget.clone(),
        patch: Patch::Merge(json!({ "spec": { "size": 9 }, "status": { "ready": true } })),
        params: PatchParams::default(),
    };
    let after = ok(&mut sim, 1_200, status_patch);
    assert_eq!(after.status["ready"], json!(true));
    assert_eq!(after.spec["size"], json!(2), "spec is not the status subresource's");
    assert_eq!(after.metadata.generation, 2);
    // A kind without a status subresource has no /status to patch.
    let no_status = key("ConfigMap", "none");
    let action = Action::PatchStatus { key: no_status, patch: Patch::Merge(json!({})), params: PatchParams::default() };
    refused(&mut sim, 1_400, action, StatusReason::NotFound);
}

// "Finalizers" (kubernetes.io), as for update: a patch cannot add a
// finalizer to an object being deleted (422), and a patch that removes the
// last one removes the object.
#[test]
fn finalizer_rules_hold_for_patches() {
    let mut sim = cluster();
    let pod = key("Pod", "web-0");
    write(&mut sim, 1_000, Action::delete(pod.clone())).unwrap();
    let add = json!({ "metadata": { "finalizers": ["example.com/cleanup", "example.com/late"] } });
    refused(&mut sim, 1_200, merge(pod.clone(), add), StatusReason::Invalid);
    let gone = write(&mut sim, 1_400, merge(pod.clone(), json!({ "metadata": { "finalizers": null } })));
    assert_eq!(gone, Ok(None), "the patch removed the object");
    assert!(sim.store().get(&pod, None).unwrap().is_none());
}

// etcd's request size limit (--max-request-bytes), as for update: a patch
// whose result is over the limit is refused and nothing is stored.
#[test]
fn a_patch_whose_result_is_over_the_size_limit_is_refused() {
    let mut sim = cluster_with("limits: { maxObjectBytes: 2000 }\n");
    let big = "x".repeat(3_000);
    let status = refused(&mut sim, 1_000, merge(web(), json!({ "spec": { "note": big } })), StatusReason::BadRequest);
    assert!(status.message.contains("too large"), "{}", status.message);
}

// API concepts, "Field validation": the API server decodes a request's
// body into the kind's type whatever the field validation level, and a
// field of the wrong type is refused with 400 Bad Request, worded by its
// decoder as "<Kind> in version \"<version>\" cannot be handled as a
// <Kind>: …" (an unknown field is only warned about by default). A patch's
// result is decoded the same way before it is stored. Nothing is written,
// so no controller is ever sent an object it cannot read.
#[test]
fn an_object_whose_fields_do_not_read_as_its_kind_is_refused() {
    let mut sim = cluster();
    let mut deployment = stored(&sim, &web());
    deployment.spec["replicas"] = json!("ten");
    let status =
        refused(&mut sim, 1_000, Action::Update { object: deployment, dry_run: false }, StatusReason::BadRequest);
    assert!(
        status
            .message
            .starts_with(r#"Deployment in version "v1" cannot be handled as a Deployment: invalid type: string "ten""#),
        "{}",
        status.message
    );

    let status =
        refused(&mut sim, 2_000, merge(web(), json!({ "spec": { "replicas": [3] } })), StatusReason::BadRequest);
    assert!(status.message.contains("cannot be handled as a Deployment"), "a patch's result: {}", status.message);

    let mut pod = stored(&sim, &key("Pod", "web-0"));
    pod.status["phase"] = json!(3);
    let status =
        refused(&mut sim, 3_000, Action::UpdateStatus { object: pod, dry_run: false }, StatusReason::BadRequest);
    assert!(
        status.message.starts_with(r#"Pod in version "v1" cannot be handled as a Pod: invalid type: integer `3`"#),
        "{}",
        status.message
    );

    let mut config = Object { api_version: "v1".into(), kind: "ConfigMap".into(), ..Default::default() };
    config.metadata.name = "settings".into();
    config.other.insert("data".into(), json!({ "retries": 3 }));
    let status = refused(&mut sim, 4_000, Action::Create { object: config, dry_run: true }, StatusReason::BadRequest);
    assert!(status.message.contains("cannot be handled as a ConfigMap"), "a dry run too: {}", status.message);

    // A create is judged against the last object created of its kind
    // (pods from one template share their spec): a part equal to that
    // one's was checked when it was stored, and a part that differs is
    // decoded, even with the rest in common.
    let pod = |name: &str, spec: serde_json::Value| {
        let mut pod = Object { api_version: "v1".into(), kind: "Pod".into(), ..Default::default() };
        pod.metadata.name = name.into();
        pod.spec = spec.into();
        Action::Create { object: pod, dry_run: false }
    };
    let containers = json!([{ "name": "web", "image": "web:1" }]);
    ok(&mut sim, 4_100, pod("a", json!({ "containers": containers })));
    ok(&mut sim, 4_200, pod("b", json!({ "containers": containers })));
    let status = refused(
        &mut sim,
        4_300,
        pod("c", json!({ "containers": containers, "priority": "high" })),
        StatusReason::BadRequest,
    );
    assert!(status.message.contains("cannot be handled as a Pod"), "{}", status.message);

    // An unknown field is not a wrong type; a custom resource's fields are
    // the CRD's to judge, and this simulator does not.
    ok(&mut sim, 5_000, merge(web(), json!({ "spec": { "note": "unknown field" } })));
    ok(&mut sim, 6_000, merge(key("Widget", "w"), json!({ "spec": { "size": "large" } })));
}

// API concepts, "Generated values" (generateName): the API server makes a
// unique name from the prefix.
#[test]
fn a_create_by_generate_name_gets_a_name_with_that_prefix() {
    let mut sim = cluster();
    let mut object = Object { api_version: "v1".into(), kind: "ConfigMap".into(), ..Default::default() };
    object.metadata.generate_name = "cfg-".into();
    let created = ok(&mut sim, 1_000, Action::Create { object, dry_run: false });
    assert!(created.metadata.name.starts_with("cfg-") && created.metadata.name.len() == 9, "{}", created.metadata.name);
}

// The trace shows a patch as such: its verb, its patch type and its field
// manager, in the timeline's words.
#[test]
fn the_trace_names_the_patch_type_and_field_manager() {
    let mut sim = cluster();
    let config = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "spec": { "replicas": 3 } });
    ok(&mut sim, 1_000, apply("alice", config.clone()));
    write(
        &mut sim,
        1_200,
        apply("bob", json!({ "apiVersion": "apps/v1", "kind": "Deployment", "spec": { "replicas": 4 } })),
    )
    .unwrap_err();
    let lines: Vec<String> = sim.trace().entries.iter().map(recon_trace::text::describe).collect();
    assert!(lines.iter().any(|l| l.contains("patch (apply by alice) Deployment default/web")), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("patch (apply by bob) Deployment default/web failed: Apply failed")),
        "{lines:#?}"
    );
}

/// `object` with `finalizer` added, as an update.
fn with_finalizer(mut object: Object, finalizer: &str) -> Action {
    object.metadata.finalizers.push(finalizer.into());
    Action::Update { object, dry_run: false }
}

// The generic registry's update (kube-apiserver's `Store.Update`, in
// apiserver's registry/generic/registry/store.go; API Concepts, "Resource
// versions"): the request's body (a patch's result) is decoded first, 400;
// then the storage layer checks the uid precondition the body's
// metadata.uid makes and then its resourceVersion, 409 each; the kind's
// validation runs last (Finalizers: no finalizer may be added to an object
// being deleted, 422). A write wrong in two ways is refused for the one
// checked first, so a stale write that is also invalid is told it is
// stale, and a controller that retries on Conflict retries it.
#[test]
fn a_write_wrong_in_two_ways_is_refused_for_what_kubernetes_checks_first() {
    let mut sim = cluster();
    let pod = key("Pod", "web-0");
    let before = stored(&sim, &pod);
    let marked = ok(&mut sim, 1_000, Action::delete(pod.clone()));
    assert!(marked.is_terminating(), "its finalizer holds it, marked");

    // Stale and adding a finalizer to an object being deleted: stale.
    let status = refused(&mut sim, 2_000, with_finalizer(before.clone(), "example.com/late"), StatusReason::Conflict);
    assert!(status.message.contains("has been modified"), "{status}");
    // The same change on the current version: invalid.
    refused(&mut sim, 3_000, with_finalizer(marked.clone(), "example.com/late"), StatusReason::Invalid);

    // Stale and of another incarnation: the uid precondition comes first.
    let mut other = before.clone();
    other.metadata.uid = "not-its-uid".into();
    let status = refused(&mut sim, 4_000, with_finalizer(other.clone(), "example.com/late"), StatusReason::Conflict);
    assert!(status.message.starts_with("Precondition failed: UID in precondition: not-its-uid"), "{status}");

    // And a body that does not decode is refused before all of those.
    other.status["phase"] = json!(3);
    let status = refused(&mut sim, 5_000, with_finalizer(other, "example.com/late"), StatusReason::BadRequest);
    assert!(status.message.contains("cannot be handled as a Pod"), "{status}");

    // A patch's result is decoded before its resourceVersion is compared.
    let stale =
        json!({ "metadata": { "resourceVersion": before.metadata.resource_version }, "spec": { "replicas": [3] } });
    refused(&mut sim, 6_000, merge(web(), stale), StatusReason::BadRequest);
    let stale = json!({ "metadata": { "resourceVersion": "999" }, "spec": { "replicas": 3 } });
    refused(&mut sim, 7_000, merge(web(), stale), StatusReason::Conflict);

    // Of an object that does not exist: 400 if the body does not decode,
    // else 404 (the body is decoded before the object is looked up).
    let mut gone = stored(&sim, &web());
    gone.metadata.name = "gone".into();
    refused(&mut sim, 8_000, Action::Update { object: gone.clone(), dry_run: false }, StatusReason::NotFound);
    gone.spec["replicas"] = json!("ten");
    refused(&mut sim, 9_000, Action::Update { object: gone, dry_run: false }, StatusReason::BadRequest);
}

// Custom resources: apiextensions-apiserver's strategy for custom
// resources (customresource/strategy.go) allows no unconditional update,
// so an update or status update of a custom resource without
// metadata.resourceVersion is refused with 422 Invalid, "must be
// specified for an update", where a built-in kind's is applied to
// whatever is current (API Concepts, "Resource versions"). A
// resourceVersion of "0" counts as none. A patch needs none: it is applied
// to the current version.
#[test]
fn an_update_of_a_custom_resource_must_name_the_version_it_replaces() {
    let mut sim = cluster();
    let widget = key("Widget", "w");
    let mut unconditional = stored(&sim, &widget);
    unconditional.metadata.resource_version.clear();
    unconditional.spec["size"] = json!(2);
    let status = refused(
        &mut sim,
        1_000,
        Action::Update { object: unconditional.clone(), dry_run: false },
        StatusReason::Invalid,
    );
    assert!(status.message.ends_with("metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"));
    unconditional.status = json!({ "ready": true }).into();
    refused(
        &mut sim,
        2_000,
        Action::UpdateStatus { object: unconditional.clone(), dry_run: false },
        StatusReason::Invalid,
    );
    // "0" is no version either (the storage parses it as 0, which is unset).
    unconditional.metadata.resource_version = "0".into();
    refused(&mut sim, 2_500, Action::UpdateStatus { object: unconditional, dry_run: false }, StatusReason::Invalid);

    let conditional = stored(&sim, &widget);
    let updated = ok(&mut sim, 3_000, with_finalizer(conditional, "example.com/keep"));
    assert_eq!(updated.metadata.finalizers, ["example.com/keep"]);
    assert_eq!(ok(&mut sim, 4_000, merge(widget, json!({ "spec": { "size": 3 } }))).spec["size"], 3);

    let mut deployment = stored(&sim, &web());
    deployment.metadata.resource_version.clear();
    deployment.spec["replicas"] = json!(4);
    let updated = ok(&mut sim, 5_000, Action::Update { object: deployment.clone(), dry_run: false });
    assert_eq!(updated.spec["replicas"], 4, "a built-in kind's update without one is unconditional");
    deployment.metadata.resource_version = "0".into();
    deployment.spec["replicas"] = json!(5);
    let updated = ok(&mut sim, 6_000, Action::Update { object: deployment, dry_run: false });
    assert_eq!(updated.spec["replicas"], 5, "and with \"0\" too");
}

/// A write that keeps a part of the object as it was stores that part once
/// for both versions, though the write brought a copy of its own: every
/// write from a Wasm plugin is decoded from JSON, and every patch's result
/// is built anew. The store keeps every version, so the copies added up,
/// and each later comparison of the versions (the generation's, the watch
/// caches' field selectors) walked both. The values are equal either way:
/// nothing a client reads changes.
#[test]
fn a_part_a_write_keeps_is_stored_once_for_both_versions() {
    let mut sim = cluster();
    let stored = |sim: &Sim, key: &ObjectKey| sim.store().get(key, None).unwrap().expect("stored").value;
    let pod = key("Pod", "web-0");

    // An update of the Deployment's labels, its object a copy.
    let before = stored(&sim, &web());
    let mut copy: Object = serde_json::from_value(serde_json::to_value(&*before).unwrap()).unwrap();
    assert!(!copy.spec.ptr_eq(&before.spec), "a copy holds its own spec");
    copy.metadata.labels = [("app".to_string(), "web-2".to_string())].into();
    ok(&mut sim, 1_000, Action::Update { object: copy, dry_run: false });
    let after = stored(&sim, &web());
    assert_eq!(after.metadata.labels.get("app").map(String::as_str), Some("web-2"));
    assert!(after.spec.ptr_eq(&before.spec), "the kept spec is the stored one");
    assert_eq!(after.metadata.generation, before.metadata.generation, "an unchanged spec keeps the generation");

    // A merge patch of the pod's labels: its spec and status stay shared.
    let before = stored(&sim, &pod);
    ok(&mut sim, 2_000, merge(pod.clone(), json!({"metadata": {"labels": {"tier": "web"}}})));
    let after = stored(&sim, &pod);
    assert!(after.spec.ptr_eq(&before.spec) && after.status.ptr_eq(&before.status), "spec and status kept");

    // A status update from a copy that changes the phase only: the
    // status is new, the spec (never written by it) stays shared.
    let before = stored(&sim, &pod);
    let mut copy: Object = serde_json::from_value(serde_json::to_value(&*before).unwrap()).unwrap();
    copy.status["phase"] = json!("Succeeded");
    ok(&mut sim, 3_000, Action::UpdateStatus { object: copy, dry_run: false });
    let after = stored(&sim, &pod);
    assert_eq!(after.status["phase"], "Succeeded");
    assert!(after.spec.ptr_eq(&before.spec));
    assert!(!after.status.ptr_eq(&before.status));
}
