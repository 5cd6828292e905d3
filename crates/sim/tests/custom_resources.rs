//! Custom resources are served like built-ins: scope, the status
//! subresource, generation, and 404 for a kind nobody declared. Each test
//! names the Kubernetes documentation statement it follows (in our words);
//! docs/API-SEMANTICS.md lists them.

use recon_abi::{Action, Object, ObjectKey, Outcome, StatusReason};
use recon_sim::api::{ListRequest, Request, Selection};
use recon_sim::{Reply, Sim};

fn crd(kind: &str, plural: &str, scope: &str, status: bool) -> String {
    let subresources = if status { "\n          subresources: { status: {} }" } else { "" };
    format!(
        r#"
  - apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {{ name: {plural}.example.com }}
    spec:
      group: example.com
      names: {{ kind: {kind}, plural: {plural} }}
      scope: {scope}
      versions:
        - name: v1
          served: true
          storage: true{subresources}"#
    )
}

fn cluster() -> Sim {
    let objects = [
        crd("Widget", "widgets", "Namespaced", true),
        crd("Gizmo", "gizmos", "Namespaced", false),
        crd("Realm", "realms", "Cluster", true),
    ]
    .concat();
    let yaml = format!(
        "name: crds\nduration: 60s\nnetwork: {{ latency: {{ min: 1ms, max: 1ms }} }}\napiServers: [ {{ name: apiserver-1 }} ]\nobjects:{objects}\n"
    );
    let scenario = recon_scenario::parse("crds.yaml", &yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|_| None)).expect("no controllers needed")
}

fn object(kind: &str, name: &str, spec: serde_json::Value) -> Object {
    let mut o =
        Object { api_version: "example.com/v1".into(), kind: kind.into(), spec: spec.into(), ..Default::default() };
    o.metadata.name = name.into();
    o
}

/// Sends `request` at `at`, runs 100ms, returns the one reply.
fn ask(sim: &mut Sim, at: u64, request: Request) -> Reply {
    sim.run_until(at);
    let id = sim.request("apiserver-1", request).unwrap();
    sim.run_until(at + 100);
    let replies = sim.responses(id);
    assert_eq!(replies.len(), 1, "{replies:?}");
    replies[0].clone()
}

fn written(reply: Reply) -> Result<Object, recon_abi::Status> {
    match reply {
        Reply::Written { outcome: Outcome::Ok(Some(object)), .. } => Ok(object),
        Reply::Written { outcome: Outcome::Err(status), .. } | Reply::Failed(status) => Err(status),
        other => panic!("expected a write result, got {other:?}"),
    }
}

fn write(sim: &mut Sim, at: u64, action: Action) -> Result<Object, recon_abi::Status> {
    written(ask(sim, at, Request::Write(action)))
}

// Custom resources (kubernetes.io, "Extend the Kubernetes API with
// CustomResourceDefinitions"): a CRD's scope makes its objects namespaced
// or cluster-wide, exactly as for built-in kinds.
#[test]
fn a_custom_kind_has_the_scope_its_definition_declares() {
    let mut sim = cluster();
    let widget =
        write(&mut sim, 1_000, Action::Create { object: object("Widget", "w", serde_json::json!({})), dry_run: false });
    assert_eq!(widget.unwrap().metadata.namespace, "default");
    let realm =
        write(&mut sim, 1_200, Action::Create { object: object("Realm", "r", serde_json::json!({})), dry_run: false });
    assert_eq!(realm.unwrap().metadata.namespace, "");
    let list = Request::List(ListRequest {
        selection: Selection { kind: "Widget".into(), ..Default::default() },
        ..Default::default()
    });
    match ask(&mut sim, 1_400, list) {
        Reply::Read(served) => assert_eq!(served.objects.len(), 1),
        other => panic!("{other:?}"),
    }
}

// Status subresource (same page, "Subresources"): with it, an update of
// the main resource ignores changes to status and an update of status
// ignores everything else, and metadata.generation counts changes to
// everything but metadata and status.
#[test]
fn with_a_status_subresource_status_and_spec_are_written_apart() {
    let mut sim = cluster();
    let w = write(
        &mut sim,
        1_000,
        Action::Create { object: object("Widget", "w", serde_json::json!({"size": 1})), dry_run: false },
    )
    .unwrap();
    let mut with_status = w.clone();
    with_status.status = serde_json::json!({"ready": true}).into();
    let updated = write(&mut sim, 1_200, Action::Update { object: with_status, dry_run: false }).unwrap();
    assert_eq!(updated.status, serde_json::Value::Null, "an update leaves status alone");
    assert_eq!(updated.metadata.generation, 1, "nothing but status changed");
    let mut report = updated;
    report.status = serde_json::json!({"ready": true}).into();
    let status = write(&mut sim, 1_400, Action::UpdateStatus { object: report, dry_run: false }).unwrap();
    assert_eq!(status.status["ready"], true);
    assert_eq!(status.metadata.generation, 1, "status is not counted");
    let mut bigger = status.clone();
    bigger.spec = serde_json::json!({"size": 2}).into();
    assert_eq!(
        write(&mut sim, 1_600, Action::Update { object: bigger, dry_run: false }).unwrap().metadata.generation,
        2
    );
}

// Same page: without a status subresource, status is an ordinary part of
// the object (written by update, counted by generation), and the status
// endpoint does not exist (404).
#[test]
fn without_a_status_subresource_status_is_part_of_the_object() {
    let mut sim = cluster();
    let g =
        write(&mut sim, 1_000, Action::Create { object: object("Gizmo", "g", serde_json::json!({})), dry_run: false })
            .unwrap();
    let mut with_status = g.clone();
    with_status.status = serde_json::json!({"phase": "Ready"}).into();
    let updated = write(&mut sim, 1_200, Action::Update { object: with_status, dry_run: false }).unwrap();
    assert_eq!(updated.status["phase"], "Ready");
    assert_eq!(updated.metadata.generation, 2);
    let refused = write(&mut sim, 1_400, Action::UpdateStatus { object: updated, dry_run: false }).unwrap_err();
    assert_eq!(refused.reason, StatusReason::NotFound);
}

// apimachinery's NotFound and AlreadyExists errors name an object by its
// group-qualified resource and its name in quotes, `<plural>.<group>
// "<name>"` for a custom resource (its CRD's plural and group): the
// message a kube-rs or client-go controller is handed.
#[test]
fn a_custom_resource_is_named_in_refusals_as_kubernetes_names_it() {
    let mut sim = cluster();
    let gizmo = object("Gizmo", "g", serde_json::json!({}));
    write(&mut sim, 1_000, Action::Create { object: gizmo.clone(), dry_run: false }).unwrap();
    let again = write(&mut sim, 1_200, Action::Create { object: gizmo, dry_run: false }).unwrap_err();
    assert_eq!(
        (again.reason, again.message.as_str()),
        (StatusReason::AlreadyExists, r#"gizmos.example.com "g" already exists"#)
    );
    let delete = Action::Delete {
        key: ObjectKey::new("Gizmo", "default", "nope"),
        uid: None,
        resource_version: None,
        grace_period_seconds: None,
        propagation_policy: None,
        dry_run: false,
    };
    let missing = write(&mut sim, 1_400, delete).unwrap_err();
    assert_eq!(
        (missing.reason, missing.message.as_str()),
        (StatusReason::NotFound, r#"gizmos.example.com "nope" not found"#)
    );
}

// The API server serves only the resources it knows: a kind nobody
// declared is 404 Not Found, for writes and reads alike.
#[test]
fn an_undeclared_kind_is_not_found() {
    let mut sim = cluster();
    let refused =
        write(&mut sim, 1_000, Action::Create { object: object("Gadget", "x", serde_json::json!({})), dry_run: false });
    assert_eq!(refused.unwrap_err().reason, StatusReason::NotFound);
    let delete = Action::Delete {
        key: ObjectKey::new("Gadget", "default", "x"),
        uid: None,
        resource_version: None,
        grace_period_seconds: None,
        propagation_policy: None,
        dry_run: false,
    };
    assert_eq!(write(&mut sim, 1_200, delete).unwrap_err().reason, StatusReason::NotFound);
    let list = Request::List(ListRequest {
        selection: Selection { kind: "Gadget".into(), ..Default::default() },
        ..Default::default()
    });
    match ask(&mut sim, 1_400, list) {
        Reply::Failed(status) => assert_eq!(status.reason, StatusReason::NotFound),
        other => panic!("{other:?}"),
    }
}
