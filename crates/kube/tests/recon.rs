//! What a controller gets from Recon beyond kube's API (`kube::recon`:
//! component parameters, the informer's last resourceVersion) and the
//! kube APIs the built-in ReplicaSet controller needs (`owns_stream`,
//! `Store::wait_until_ready`), driven through the plugin ABI as the host
//! drives them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use recon_abi::{Controller as _, EventType, Input, InputEvent, Object, ObjectMeta, OwnerReference, WatchEvent};
use recon_kube::api::Api;
use recon_kube::runtime::controller::{Action, Controller};
use recon_kube::runtime::{WatchStreamExt, reflector, watcher};
use recon_kube::{Client, Native, Plugin, ResourceExt, recon};
use serde_json::json;

/// What the controller saw, in order.
type Log = Arc<Mutex<Vec<String>>>;

fn lines(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn object(kind: &str, name: &str, resource_version: &str) -> Object {
    Object {
        api_version: "v1".into(),
        kind: kind.into(),
        metadata: ObjectMeta {
            name: name.into(),
            namespace: "default".into(),
            uid: format!("uid-{name}"),
            resource_version: resource_version.into(),
            ..ObjectMeta::default()
        },
        ..Object::default()
    }
}

fn input(time_ms: u64, events: Vec<InputEvent>) -> Input {
    Input { time_ms, events, containers: None }
}

fn listed(watch: usize, resource_version: &str, objects: Vec<Object>) -> InputEvent {
    InputEvent::Listed {
        watch,
        resource_version: resource_version.into(),
        objects: objects.into_iter().map(std::sync::Arc::new).collect(),
    }
}

fn event(watch: usize, event_type: EventType, object: Object) -> InputEvent {
    InputEvent::Watch { watch, event: WatchEvent::new(event_type, object.into()) }
}

fn config(params: serde_json::Value) -> recon_abi::ComponentConfig {
    let params: BTreeMap<String, serde_json::Value> = serde_json::from_value(params).unwrap();
    recon_abi::ComponentConfig { name: "c".into(), params, ..Default::default() }
}

/// A `main` that logs the parameters `timeoutMs` (a number) and `mode`
/// (a string), as a controller reads its flags.
fn reads_params(log: Log) -> Plugin {
    Plugin::new("params", move || {
        let log = log.clone();
        async move {
            let timeout: Option<u64> = recon::param("timeoutMs")?;
            let mode: Option<String> = recon::param("mode")?;
            log.lock().unwrap().push(format!("timeoutMs={timeout:?} mode={mode:?}"));
            Ok::<(), recon::ParamError>(())
        }
    })
}

#[test]
fn main_reads_the_components_parameters_and_none_for_one_the_scenario_does_not_set() {
    let log = Log::default();
    let mut plugin = reads_params(log.clone());
    plugin.init(&config(json!({ "timeoutMs": 3000, "other": true })));
    assert_eq!(lines(&log), ["timeoutMs=Some(3000) mode=None"]);
    // Every instance reads them afresh, as a restarted process its flags.
    plugin.init(&config(json!({ "mode": "relist" })));
    assert_eq!(lines(&log), ["timeoutMs=None mode=Some(\"relist\")"]);
}

/// A kube-rs controller keeps its objects as its own types, so as a Wasm
/// plugin it asks for whole watch events and its glue keeps no second
/// copy of what was delivered (see `Controller::omit_unchanged`).
#[test]
fn a_kube_controller_is_sent_whole_objects() {
    let plugin = reads_params(Log::default());
    assert!(!plugin.omit_unchanged());
}

#[test]
fn a_parameter_of_the_wrong_type_crashes_the_component_with_its_name() {
    let log = Log::default();
    let mut native = Native::new(reads_params(log.clone()));
    let crash = recon_abi::Instance::init(&mut native, &config(json!({ "timeoutMs": "soon" })))
        .expect_err("main returns the error");
    assert!(crash.reason.contains("timeoutMs"), "{}", crash.reason);
    assert!(crash.reason.contains("main returned an error"), "{}", crash.reason);
    assert!(lines(&log).is_empty());
}

/// Runs a ConfigMap controller with `reconcile` until the plugin ends.
async fn run<Ctx: 'static, F>(
    maps: Controller<ConfigMap>,
    context: Arc<Ctx>,
    reconcile: impl FnMut(Arc<ConfigMap>, Arc<Ctx>) -> F + 'static,
) -> Result<(), recon_kube::Error>
where
    F: std::future::Future<Output = Result<Action, recon_kube::Error>> + 'static,
{
    maps.run(reconcile, |_, _, _| Action::await_change(), context).for_each(|_| futures::future::ready(())).await;
    Ok(())
}

/// A ConfigMap controller whose reconcile logs the ConfigMap watch's last
/// resourceVersion and checks again after a second.
fn logs_last_sync(log: Log) -> Plugin {
    Plugin::new("maps", move || {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(format!("main {:?}", recon::last_sync_resource_version::<ConfigMap>()));
            let client = Client::try_default().await?;
            let context = Arc::new(log.clone());
            let maps = Controller::new(Api::<ConfigMap>::all(client), watcher::Config::default());
            run(maps, context, |_map, log| async move {
                let synced = recon::last_sync_resource_version::<ConfigMap>();
                log.lock().unwrap().push(format!("{synced:?}"));
                Ok(Action::requeue(Duration::from_secs(1)))
            })
            .await
        }
    })
}

#[test]
fn the_last_sync_resource_version_follows_the_watchs_lists_events_and_bookmarks() {
    let log = Log::default();
    let mut plugin = logs_last_sync(log.clone());
    plugin.init(&config(json!({})));
    assert_eq!(lines(&log), ["main None"], "nothing delivered before the first list");
    // The list's own version, not its newest object's.
    plugin.handle(&input(0, vec![listed(0, "5", vec![object("ConfigMap", "a", "3")])]));
    assert_eq!(lines(&log), ["Some(\"5\")"]);
    plugin.handle(&input(500, vec![event(0, EventType::Modified, object("ConfigMap", "a", "7"))]));
    assert_eq!(lines(&log), ["Some(\"7\")"]);
    // A bookmark moves it on without a change to reconcile; the requeue shows it.
    plugin.handle(&input(1_000, vec![event(0, EventType::Bookmark, object("ConfigMap", "", "9"))]));
    assert!(lines(&log).is_empty());
    plugin.handle(&input(1_500, vec![InputEvent::Timer { key: "kube-timer/1500".into() }]));
    assert_eq!(lines(&log), ["Some(\"9\")"]);
}

fn owned_secret(name: &str, owner: &str) -> Object {
    let mut secret = object("Secret", name, "6");
    secret.metadata.owner_references = vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.into(),
        uid: format!("uid-{owner}"),
        controller: true,
        block_owner_deletion: false,
    }]
    .into();
    secret
}

/// A ConfigMap controller that runs the Secret watch itself: each Secret
/// is logged on its way into a store the reconcile waits for, then
/// triggers its owner through `owns_stream`.
fn owns_a_stream(log: Log) -> Plugin {
    Plugin::new("maps", move || {
        let log = log.clone();
        async move {
            let client = Client::try_default().await?;
            let maps = Controller::new(Api::<ConfigMap>::all(client.clone()), watcher::Config::default());
            let (secrets, writer) = reflector::store::<Secret>();
            let seen = log.clone();
            let secret_changes = watcher(Api::<Secret>::all(client), watcher::Config::default())
                .map(move |event| {
                    if let Ok(watcher::Event::Apply(secret)) = &event {
                        seen.lock().unwrap().push(format!("saw {}", secret.name_any()));
                    }
                    event
                })
                .reflect(writer)
                .touched_objects();
            let context = Arc::new((log.clone(), secrets));
            run(maps.owns_stream(secret_changes), context, |map, ctx| async move {
                ctx.1.wait_until_ready().await.expect("the secret watch lives as long as main");
                ctx.0.lock().unwrap().push(format!("reconcile {} secrets={}", map.name_any(), ctx.1.len()));
                Ok(Action::await_change())
            })
            .await
        }
    })
}

#[test]
fn owns_stream_triggers_the_owner_of_each_child_the_stream_yields_and_registers_the_childs_watch() {
    let log = Log::default();
    let mut plugin = owns_a_stream(log.clone());
    let manifest = plugin.init(&config(json!({})));
    let watched: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(watched, ["ConfigMap", "Secret"], "the stream's watcher is the only Secret watch");
    // The maps are listed first: their reconciles wait for the secret store.
    plugin.handle(&input(0, vec![listed(0, "5", vec![object("ConfigMap", "a", "5"), object("ConfigMap", "b", "5")])]));
    assert!(lines(&log).is_empty(), "no reconcile acts on an empty secret store");
    plugin.handle(&input(10, vec![listed(1, "6", vec![owned_secret("s", "b")])]));
    // The secret's owner b was triggered while its reconcile waited: it
    // runs once more when that one ends (one reconcile per object at a time).
    assert_eq!(lines(&log), ["reconcile a secrets=1", "reconcile b secrets=1", "reconcile b secrets=1"]);
    // A secret event goes through the stream: its owner only is reconciled.
    plugin.handle(&input(20, vec![event(1, EventType::Modified, owned_secret("s", "b"))]));
    assert_eq!(lines(&log), ["saw s", "reconcile b secrets=1"]);
    plugin.handle(&input(30, vec![event(1, EventType::Added, object("Secret", "loose", "8"))]));
    assert_eq!(lines(&log), ["saw loose"], "a secret nobody owns triggers nothing");
}
