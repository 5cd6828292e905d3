//! `finalizer()` through the plugin ABI: the finalizer goes on first, the
//! apply branch runs while it holds, the cleanup branch runs once the
//! object is being deleted, and then the finalizer comes off, each write
//! conditional on the version the decision was made on.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use recon_abi::{
    Action as Wire, ActionResult, ComponentConfig, Controller as _, EventType, Input, InputEvent, Object, ObjectMeta,
    Outcome, Patch, Status, StatusReason, Verb, WatchEvent,
};
use recon_kube::runtime::controller::{Action, Controller};
use recon_kube::runtime::finalizer::{Error, Event, finalizer};
use recon_kube::runtime::watcher;
use recon_kube::{Api, Client, Plugin, ResourceExt};
use serde_json::json;

const FINALIZER: &str = "example.com/cleanup";

type Log = Arc<Mutex<Vec<String>>>;

struct Data {
    client: Client,
    log: Log,
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

async fn reconcile(map: Arc<ConfigMap>, ctx: Arc<Data>) -> Result<Action, Error<Never>> {
    let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), &map.namespace().unwrap());
    let log = ctx.log.clone();
    finalizer(&api, FINALIZER, map, |event| async move {
        let line = match event {
            Event::Apply(map) => format!("apply {}", map.name_any()),
            Event::Cleanup(map) => format!("cleanup {}", map.name_any()),
        };
        log.lock().unwrap().push(line);
        Ok::<_, Never>(Action::await_change())
    })
    .await
}

fn error_policy(_map: Arc<ConfigMap>, error: &Error<Never>, ctx: Arc<Data>) -> Action {
    ctx.log.lock().unwrap().push(format!("failed: {error}"));
    Action::await_change()
}

fn plugin(log: Log) -> Plugin {
    Plugin::new("finalizing", move || {
        let log = log.clone();
        async move {
            let client = Client::try_default().await?;
            Controller::new(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
                .run(reconcile, error_policy, Arc::new(Data { client, log }))
                .for_each(|_| futures::future::ready(()))
                .await;
            Ok::<(), recon_kube::Error>(())
        }
    })
}

fn map(version: &str, finalizers: &[&str], deleting: bool) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        metadata: ObjectMeta {
            name: "a".into(),
            namespace: "default".into(),
            uid: "uid-a".into(),
            resource_version: version.into(),
            finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
            deletion_timestamp: deleting.then(|| recon_abi::format_timestamp(9_000)),
            ..ObjectMeta::default()
        },
        ..Object::default()
    }
}

fn call(plugin: &mut Plugin, time_ms: u64, events: Vec<InputEvent>) -> recon_abi::Output {
    plugin.handle(&Input { time_ms, events, containers: None })
}

fn modified(object: Object) -> InputEvent {
    InputEvent::Watch { watch: 0, event: WatchEvent::new(EventType::Modified, object.into()) }
}

/// The one merge patch in `output`: its request id and body.
fn merge_patch(output: &recon_abi::Output) -> (u64, serde_json::Value) {
    match &output.actions[..] {
        [Wire::Patch { patch: Patch::Merge(body), .. }] => (output.request_id(0).unwrap(), body.clone()),
        other => panic!("one merge patch, got {other:?}"),
    }
}

fn patched(id: u64, outcome: Outcome) -> InputEvent {
    let key = recon_abi::ObjectKey::new("ConfigMap", "default", "a");
    InputEvent::Result(Box::new(ActionResult { verb: Verb::Patch, key, outcome, id: Some(id) }))
}

#[test]
fn the_finalizer_goes_on_first_holds_through_apply_and_comes_off_after_cleanup() {
    let log = Log::default();
    let mut plugin = plugin(log.clone());
    plugin.init(&ComponentConfig::default());

    let listed =
        InputEvent::Listed { watch: 0, resource_version: "5".into(), objects: vec![map("5", &[], false).into()] };
    let (id, body) = merge_patch(&call(&mut plugin, 0, vec![listed]));
    assert_eq!(body, json!({ "metadata": { "finalizers": [FINALIZER], "resourceVersion": "5" } }));
    call(&mut plugin, 10, vec![patched(id, Outcome::Ok(Some(map("6", &[FINALIZER], false))))]);
    assert!(log.lock().unwrap().is_empty(), "nothing is applied before the finalizer holds");

    let output = call(&mut plugin, 20, vec![modified(map("6", &[FINALIZER], false))]);
    assert!(output.actions.is_empty());
    assert_eq!(*log.lock().unwrap(), ["apply a"]);

    let deleting = map("7", &["other", FINALIZER], true);
    let (id, body) = merge_patch(&call(&mut plugin, 30, vec![modified(deleting)]));
    assert_eq!(*log.lock().unwrap(), ["apply a", "cleanup a"]);
    assert_eq!(body, json!({ "metadata": { "finalizers": ["other"], "resourceVersion": "7" } }));

    // A conflict (the object moved on) is the reconcile's error.
    let conflict = Status::new(StatusReason::Conflict, "the object has been modified");
    call(&mut plugin, 40, vec![patched(id, Outcome::Err(conflict))]);
    let last = log.lock().unwrap().last().cloned().unwrap();
    assert!(last.starts_with("failed: failed to remove finalizer") && last.contains("409"), "{last}");
}
