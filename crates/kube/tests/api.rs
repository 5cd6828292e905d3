//! Every `Api` call as the ABI request it becomes, and its result as kube
//! returns it: a plugin whose `main` makes the calls, one at a time, and a
//! hand-played host that answers each by its request id.

use std::cell::RefCell;
use std::rc::Rc;

use either::Either;
use k8s_openapi::api::core::v1::ConfigMap;
use recon_abi::{
    Action as Wire, ActionResult, ComponentConfig, Controller as _, Input, InputEvent, Object, ObjectKey, ObjectList,
    ObjectMeta, Outcome, Patch as WirePatch, PropagationPolicy as WirePropagation, ResourceVersionMatch, Status,
    StatusReason, Verb,
};
use recon_kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy, VersionMatch,
};
use recon_kube::{Client, Plugin};
use serde_json::json;

/// What `main` got back from each call, in order.
type Seen = Rc<RefCell<Vec<String>>>;

fn map(name: &str, version: &str) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        metadata: ObjectMeta {
            name: name.into(),
            namespace: "apps".into(),
            resource_version: version.into(),
            ..ObjectMeta::default()
        },
        other: [("data".to_owned(), json!({ "k": name }))].into(),
        ..Object::default()
    }
}

fn typed(name: &str) -> ConfigMap {
    let mut map = ConfigMap::default();
    map.metadata.name = Some(name.into());
    map.data = Some([("k".to_owned(), name.to_owned())].into());
    map
}

/// Runs `main` one request at a time, answering each with `answer`;
/// returns the requests it made.
fn drive(
    main: impl Fn(Seen) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> + 'static,
    answer: impl Fn(&Wire) -> Outcome,
    seen: &Seen,
) -> Vec<Wire> {
    let seen_in_main = seen.clone();
    let mut plugin = Plugin::new("api", move || main(seen_in_main.clone()));
    plugin.init(&ComponentConfig::default());
    let mut requests = Vec::new();
    let mut events = Vec::new();
    for time_ms in 0..20 {
        let output = plugin.handle(&Input { time_ms, events: std::mem::take(&mut events), containers: None });
        for (i, action) in output.actions.iter().enumerate() {
            let (verb, key) = action.request_target().expect("only requests");
            let id = output.request_id(i).expect("every request has an id");
            events.push(InputEvent::Result(Box::new(ActionResult {
                verb,
                key,
                outcome: answer(action),
                id: Some(id),
            })));
            requests.push(action.clone());
        }
        if events.is_empty() {
            break;
        }
    }
    requests
}

#[test]
fn reads_are_get_and_list_with_their_parameters_and_not_found_is_none_for_get_opt() {
    let seen = Seen::default();
    let requests = drive(
        |seen| {
            Box::pin(async move {
                let api = Api::<ConfigMap>::namespaced(Client::try_default().await.unwrap(), "apps");
                let got = api.get("a").await.unwrap();
                seen.borrow_mut().push(format!("get {:?}", got.data.unwrap()["k"]));
                let missing = api.get_opt("missing").await.unwrap();
                seen.borrow_mut().push(format!("get_opt {missing:?}"));
                let err = api.get("missing").await.unwrap_err();
                assert!(matches!(&err, recon_kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"));
                let lp = ListParams::default().labels("app=web").limit(2);
                let lp =
                    ListParams { resource_version: Some("7".into()), version_match: Some(VersionMatch::Exact), ..lp };
                let list = api.list(&lp).await.unwrap();
                let names: Vec<String> = list.items.iter().map(|m| m.metadata.name.clone().unwrap()).collect();
                seen.borrow_mut().push(format!("list {names:?} at {:?}", list.metadata.resource_version.unwrap()));
            })
        },
        |action| match action {
            Wire::Get { key, .. } if key.name == "a" => Outcome::Ok(Some(map("a", "3"))),
            Wire::Get { key, .. } => Outcome::Err(Status::new(StatusReason::NotFound, format!("{key} not found"))),
            Wire::List { .. } => Outcome::Listed(ObjectList {
                resource_version: "7".into(),
                items: vec![map("a", "3"), map("b", "4")],
                continue_token: None,
            }),
            other => panic!("unexpected {other:?}"),
        },
        &seen,
    );
    assert_eq!(*seen.borrow(), ["get \"a\"", "get_opt None", "list [\"a\", \"b\"] at \"7\""]);
    assert_eq!(requests[0], Wire::Get { key: ObjectKey::new("ConfigMap", "apps", "a"), resource_version: None });
    assert_eq!(
        requests[3],
        Wire::List {
            kind: "ConfigMap".into(),
            namespace: "apps".into(),
            field_selector: String::new(),
            label_selector: "app=web".into(),
            resource_version: Some("7".into()),
            resource_version_match: Some(ResourceVersionMatch::Exact),
            limit: Some(2),
            continue_token: None,
        }
    );
}

#[test]
fn writes_are_create_update_patch_and_delete_and_a_conflict_is_an_api_error_with_code_409() {
    let seen = Seen::default();
    let requests = drive(
        |seen| {
            Box::pin(async move {
                let api = Api::<ConfigMap>::namespaced(Client::try_default().await.unwrap(), "apps");
                let created = api.create(&PostParams::default(), &typed("a")).await.unwrap();
                seen.borrow_mut().push(format!("created at {:?}", created.metadata.resource_version.unwrap()));
                match api.replace("a", &PostParams::default(), &typed("a")).await {
                    Err(recon_kube::Error::Api(e)) if e.code == 409 => seen.borrow_mut().push("conflict".into()),
                    other => panic!("{other:?}"),
                }
                api.replace_status("a", &PostParams { dry_run: true, ..PostParams::default() }, &typed("a"))
                    .await
                    .unwrap();
                let apply = PatchParams::apply("me").force();
                api.patch("a", &apply, &Patch::Apply(&typed("a"))).await.unwrap();
                api.patch("a", &PatchParams::default(), &Patch::Merge(json!({ "data": { "k": null } }))).await.unwrap();
                api.patch("a", &PatchParams::default(), &Patch::Strategic(json!({}))).await.unwrap();
                let ops: json_patch_v4::Patch =
                    serde_json::from_value(json!([{ "op": "remove", "path": "/data" }])).unwrap();
                api.patch_status("a", &PatchParams::default(), &Patch::<()>::Json(ops)).await.unwrap();
                let unnamed = api.patch("a", &PatchParams::default(), &Patch::Apply(json!({}))).await.unwrap_err();
                seen.borrow_mut().push(format!("apply without a manager: {unnamed}"));
                let dp = DeleteParams {
                    propagation_policy: Some(PropagationPolicy::Foreground),
                    preconditions: Some(Preconditions { uid: Some("u".into()), resource_version: None }),
                    grace_period_seconds: Some(0),
                    ..DeleteParams::default()
                };
                match api.delete("a", &dp).await.unwrap() {
                    Either::Left(held) => seen.borrow_mut().push(format!("held {:?}", held.metadata.name.unwrap())),
                    Either::Right(_) => panic!("the answer held it"),
                }
                assert!(api.delete("a", &DeleteParams::default()).await.unwrap().is_right());
            })
        },
        |action| match action {
            Wire::Update { .. } => Outcome::Err(Status::new(StatusReason::Conflict, "the object has been modified")),
            Wire::Delete { uid: None, .. } => Outcome::Ok(None),
            _ => Outcome::Ok(Some(map("a", "9"))),
        },
        &seen,
    );
    assert_eq!(
        *seen.borrow(),
        [
            "created at \"9\"",
            "conflict",
            "apply without a manager: Failed to build request: failed to validate request: \
             PatchParams::apply(manager) is required for server-side apply",
            "held \"a\"",
        ]
    );
    let Wire::Create { object, dry_run: false } = &requests[0] else { panic!("{:?}", requests[0]) };
    assert_eq!(object.metadata.namespace, "apps", "the Api's namespace");
    assert_eq!(object.other["data"], json!({ "k": "a" }));
    assert!(matches!(&requests[1], Wire::Update { object, dry_run: false } if object.metadata.name == "a"));
    assert!(matches!(&requests[2], Wire::UpdateStatus { dry_run: true, .. }), "PostParams::dry_run goes to the server");
    let Wire::Patch { patch: WirePatch::Apply(body), params, .. } = &requests[3] else { panic!("{:?}", requests[3]) };
    assert_eq!((body["kind"].as_str(), params.field_manager.as_str(), params.force), (Some("ConfigMap"), "me", true));
    assert!(
        matches!(&requests[4], Wire::Patch { patch: WirePatch::Merge(b), .. } if b == &json!({ "data": { "k": null } }))
    );
    assert!(matches!(&requests[5], Wire::Patch { patch: WirePatch::Strategic(_), .. }));
    assert!(matches!(&requests[6], Wire::PatchStatus { patch: WirePatch::Json(ops), .. } if ops[0]["op"] == "remove"));
    assert_eq!(
        requests[7],
        Wire::Delete {
            key: ObjectKey::new("ConfigMap", "apps", "a"),
            uid: Some("u".into()),
            resource_version: None,
            grace_period_seconds: Some(0),
            propagation_policy: Some(WirePropagation::Foreground),
            dry_run: false,
        }
    );
    assert_eq!(requests.len(), 9, "the apply without a manager never left the plugin");
    assert!(requests.iter().all(|r| r.request_target().unwrap().0 != Verb::Get));
}
