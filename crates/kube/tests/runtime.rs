//! The runtime's semantics, driven through the plugin ABI as the host
//! drives it: a ConfigMap controller written against kube's API, given
//! lists, watch events, results and timers by hand.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use recon_abi::{
    Action as Wire, ActionResult, Controller as _, EventType, Input, InputEvent, ListMode, Object, ObjectKey,
    ObjectMeta, OwnerReference, Status, StatusReason, Verb, WatchEvent,
};
use recon_kube::api::{Api, Patch, PatchParams};
use recon_kube::runtime::controller::{Action, Controller};
use recon_kube::runtime::watcher;
use recon_kube::{Client, Plugin, ResourceExt};
use serde_json::json;

/// What the reconciler saw, in order.
type Log = Arc<Mutex<Vec<String>>>;

struct Data {
    client: Client,
    log: Log,
    /// Reconciles of this name fail.
    failing: &'static str,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("kube: {0}")]
    Kube(#[from] recon_kube::Error),
    #[error("told to fail")]
    Told,
}

/// Reads the Secret of the same name, then applies a label to the map; a
/// reconcile that finds no Secret requeues after 5s.
async fn reconcile(map: Arc<ConfigMap>, ctx: Arc<Data>) -> Result<Action, Error> {
    let (ns, name) = (map.namespace().unwrap(), map.name_any());
    ctx.log.lock().unwrap().push(format!("start {name}"));
    if name == ctx.failing {
        return Err(Error::Told);
    }
    let secrets = Api::<Secret>::namespaced(ctx.client.clone(), &ns);
    let secret = secrets.get_opt(&name).await?;
    ctx.log.lock().unwrap().push(format!("end {name} secret={}", secret.is_some()));
    if secret.is_none() {
        return Ok(Action::requeue(Duration::from_secs(5)));
    }
    let maps = Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns);
    let patch = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "labels": { "seen": "yes" } } });
    maps.patch(&name, &PatchParams::apply("test"), &Patch::Apply(&patch)).await?;
    Ok(Action::await_change())
}

fn error_policy(_map: Arc<ConfigMap>, _error: &Error, ctx: Arc<Data>) -> Action {
    ctx.log.lock().unwrap().push("error policy".into());
    Action::requeue(Duration::from_secs(1))
}

fn plugin(log: Log, failing: &'static str) -> Plugin {
    Plugin::new("maps", move || {
        let log = log.clone();
        async move {
            let client = Client::try_default().await?;
            let maps = Api::<ConfigMap>::all(client.clone());
            let secrets = Api::<Secret>::all(client.clone());
            Controller::new(maps, watcher::Config::default())
                .owns(secrets, watcher::Config::default())
                .run(reconcile, error_policy, Arc::new(Data { client, log, failing }))
                .for_each(|_| futures::future::ready(()))
                .await;
            Ok::<(), recon_kube::Error>(())
        }
    })
}

fn map(name: &str) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        metadata: ObjectMeta {
            name: name.into(),
            namespace: "default".into(),
            uid: format!("uid-{name}"),
            resource_version: "5".into(),
            ..ObjectMeta::default()
        },
        ..Object::default()
    }
}

fn listed(watch: usize, objects: Vec<Object>) -> InputEvent {
    InputEvent::Listed {
        watch,
        resource_version: "5".into(),
        objects: objects.into_iter().map(std::sync::Arc::new).collect(),
    }
}

fn event(watch: usize, event_type: EventType, object: Object) -> InputEvent {
    InputEvent::Watch { watch, event: WatchEvent::new(event_type, object.into()) }
}

fn input(time_ms: u64, events: Vec<InputEvent>) -> Input {
    Input { time_ms, events, containers: None }
}

/// The result of the request `id`: a get of the Secret `name`, found or not.
fn secret_result(id: u64, name: &str, found: bool) -> InputEvent {
    let key = ObjectKey::new("Secret", "default", name);
    let outcome = if found {
        let mut secret = map(name);
        secret.kind = "Secret".into();
        recon_abi::Outcome::Ok(Some(secret))
    } else {
        recon_abi::Outcome::Err(Status::new(StatusReason::NotFound, format!("secrets \"{name}\" not found")))
    };
    InputEvent::Result(Box::new(ActionResult { verb: Verb::Get, key, outcome, id: Some(id) }))
}

/// The gets in an output, as (request id, name).
fn gets(output: &recon_abi::Output) -> Vec<(u64, String)> {
    output
        .actions
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            Wire::Get { key, .. } => Some((output.request_id(i).expect("every get has an id"), key.name.clone())),
            _ => None,
        })
        .collect()
}

fn started(log: &Log) -> usize {
    log.lock().unwrap().iter().filter(|l| l.starts_with("start")).count()
}

fn start(log: &Log, failing: &'static str) -> Plugin {
    let mut plugin = plugin(log.clone(), failing);
    let manifest = plugin.init(&recon_abi::ComponentConfig { name: "maps".into(), ..Default::default() });
    assert_eq!(manifest.name, "maps");
    let watched: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(watched, ["ConfigMap", "Secret"]);
    assert_eq!(manifest.list_mode, ListMode::Quorum, "kube's watcher lists the most recent state by default");
    assert!(manifest.allows(Verb::Patch, "ConfigMap") && manifest.allows(Verb::Get, "Secret"));
    plugin
}

#[test]
fn an_api_call_waits_for_its_result_by_request_id_across_calls() {
    let log = Log::default();
    let mut plugin = start(&log, "");
    let output = plugin.handle(&input(100, vec![listed(0, vec![map("a"), map("b")])]));
    let asked = gets(&output);
    assert_eq!(asked.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(*log.lock().unwrap(), ["start a", "start b"], "both wait for their reads");

    // b's result first: only b goes on, to its patch.
    let output = plugin.handle(&input(110, vec![secret_result(asked[1].0, "b", true)]));
    assert_eq!(*log.lock().unwrap(), ["start a", "start b", "end b secret=true"]);
    assert!(
        matches!(&output.actions[..], [Wire::Patch { key, patch: recon_abi::Patch::Apply(_), params }]
            if key.name == "b" && params.field_manager == "test"),
        "{output:?}"
    );
    assert!(output.request_id(0).is_some());

    // A result with an id nobody waits for changes nothing.
    let output = plugin.handle(&input(120, vec![secret_result(999, "zzz", true)]));
    assert!(output.actions.is_empty());
    assert_eq!(log.lock().unwrap().len(), 3);
}

#[test]
fn triggers_for_a_queued_object_make_one_reconcile() {
    let log = Log::default();
    let mut plugin = start(&log, "");
    let events = vec![
        listed(0, vec![map("a")]),
        event(0, EventType::Modified, map("a")),
        event(0, EventType::Modified, map("a")),
        // A Secret owned by a triggers a too.
        event(1, EventType::Added, owned_secret("s", "a")),
    ];
    let output = plugin.handle(&input(100, events));
    assert_eq!(gets(&output).len(), 1);
    assert_eq!(started(&log), 1);
}

fn owned_secret(name: &str, owner: &str) -> Object {
    let mut secret = map(name);
    secret.kind = "Secret".into();
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

#[test]
fn an_object_is_reconciled_once_at_a_time_and_again_after_a_trigger_during_its_reconcile() {
    let log = Log::default();
    let mut plugin = start(&log, "");
    let first = gets(&plugin.handle(&input(100, vec![listed(0, vec![map("a")])])));
    // A change while a's reconcile waits: no second reconcile yet.
    let output = plugin.handle(&input(105, vec![event(0, EventType::Modified, map("a"))]));
    assert!(gets(&output).is_empty());
    assert_eq!(started(&log), 1);
    // The first ends (no Secret: requeue in 5s); the queued trigger runs at once.
    let output = plugin.handle(&input(110, vec![secret_result(first[0].0, "a", false)]));
    assert_eq!(*log.lock().unwrap(), ["start a", "end a secret=false", "start a"]);
    assert_eq!(gets(&output).len(), 1);
}

#[test]
fn a_requeue_waits_for_virtual_time_through_a_host_timer() {
    let log = Log::default();
    let mut plugin = start(&log, "");
    let first = gets(&plugin.handle(&input(1_000, vec![listed(0, vec![map("a")])])));
    let output = plugin.handle(&input(1_010, vec![secret_result(first[0].0, "a", false)]));
    let timers: Vec<u64> = output
        .actions
        .iter()
        .filter_map(|a| match a {
            Wire::RequeueAfter { after_ms, .. } => Some(after_ms.to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(timers, [5_000], "requeue(5s) from t=1.010s");
    // Not before its time, whatever else arrives.
    plugin.handle(&input(6_009, vec![]));
    assert_eq!(started(&log), 1);
    let output = plugin.handle(&input(6_010, vec![InputEvent::Timer { key: "kube-timer/6010".into() }]));
    assert_eq!(started(&log), 2);
    assert_eq!(gets(&output).len(), 1);
}

#[test]
fn a_failed_reconcile_is_retried_as_the_error_policy_says() {
    let log = Log::default();
    let mut plugin = start(&log, "bad");
    let output = plugin.handle(&input(0, vec![listed(0, vec![map("bad")])]));
    assert_eq!(*log.lock().unwrap(), ["start bad", "error policy"]);
    assert!(output.actions.contains(&Wire::RequeueAfter { key: "kube-timer/1000".into(), after_ms: 1_000 }));
    plugin.handle(&input(1_000, vec![InputEvent::Timer { key: "kube-timer/1000".into() }]));
    assert_eq!(started(&log), 2);
}

#[test]
fn a_deleted_object_is_not_reconciled_even_if_it_was_queued() {
    let log = Log::default();
    let mut plugin = start(&log, "");
    let events = vec![listed(0, vec![]), event(0, EventType::Added, map("a")), event(0, EventType::Deleted, map("a"))];
    let output = plugin.handle(&input(0, events));
    assert!(output.actions.is_empty());
    assert_eq!(started(&log), 0);
}

#[test]
fn nothing_is_reconciled_before_the_first_list() {
    let log = Log::default();
    let mut plugin = start(&log, "");
    plugin.handle(&input(0, vec![event(1, EventType::Added, owned_secret("s", "a"))]));
    assert_eq!(started(&log), 0);
    // The list brings a, which the earlier trigger and the list both name: once.
    plugin.handle(&input(10, vec![listed(0, vec![map("a")])]));
    assert_eq!(started(&log), 1);
}

#[test]
fn a_panicking_main_crashes_only_its_instance_with_the_message() {
    let mut native =
        recon_kube::Native::new(Plugin::new("broken", || async { Err::<(), String>("no kubeconfig".into()) }));
    let crash = recon_abi::Instance::init(&mut native, &recon_abi::ComponentConfig::default()).unwrap_err();
    assert!(crash.reason.contains("main returned an error: \"no kubeconfig\""), "{crash}");
}

#[test]
fn a_main_that_returns_says_so_in_the_log_natively_as_in_wasm() {
    // A Wasm plugin's line goes to `recon.log`; linked natively, the same
    // line must reach the trace through `take_logs`, or the two differ.
    let mut native = recon_kube::Native::new(Plugin::new("done", || async { Ok::<(), String>(()) }));
    recon_abi::Instance::init(&mut native, &recon_abi::ComponentConfig::default()).unwrap();
    assert_eq!(recon_abi::Instance::take_logs(&mut native), ["main returned; the controller does nothing more"]);
    assert!(recon_abi::Instance::take_logs(&mut native).is_empty(), "taken once");
}

#[test]
fn requests_made_before_the_first_input_go_out_with_the_first_output() {
    let mut plugin = Plugin::new("reader", || async {
        let client = Client::try_default().await?;
        Api::<ConfigMap>::namespaced(client, "default").get("x").await?;
        Ok::<(), recon_kube::Error>(())
    });
    let manifest = plugin.init(&recon_abi::ComponentConfig::default());
    assert!(manifest.watches.is_empty());
    assert!(manifest.allows(Verb::Get, "ConfigMap"));
    let output = plugin.handle(&input(0, vec![]));
    assert_eq!(gets(&output), [(1, "x".to_owned())]);
}

#[test]
#[should_panic(expected = "outside a Recon plugin call")]
fn the_api_outside_a_plugin_call_says_so() {
    let client = futures::executor::block_on(Client::try_default()).unwrap();
    let _ = Api::<ConfigMap>::all(client);
}

#[test]
fn a_watched_kind_triggers_what_its_mapper_names_and_concurrency_limits_the_reconciles_at_once() {
    use recon_kube::runtime::controller::Config;
    use recon_kube::runtime::reflector::ObjectRef;
    let log = Log::default();
    let shared = log.clone();
    let mut plugin = Plugin::new("mapped", move || {
        let log = shared.clone();
        async move {
            let client = Client::try_default().await?;
            Controller::new(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
                .watches(Api::<Secret>::all(client.clone()), watcher::Config::default().labels("app=x"), |s: Secret| {
                    let named = s.metadata.annotations.unwrap_or_default().get("map").cloned();
                    named.map(|name| ObjectRef::<ConfigMap>::new(&name).within("default"))
                })
                .with_config(Config::default().concurrency(1))
                .run(reconcile, error_policy, Arc::new(Data { client, log, failing: "" }))
                .for_each(|_| futures::future::ready(()))
                .await;
            Ok::<(), recon_kube::Error>(())
        }
    });
    let manifest = plugin.init(&recon_abi::ComponentConfig::default());
    assert_eq!(manifest.watches[1].label_selector, "app=x");

    let first = gets(&plugin.handle(&input(0, vec![listed(0, vec![map("a"), map("b")]), listed(1, vec![])])));
    assert_eq!(first.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), ["a"], "one at a time");
    let mut secret = map("s");
    secret.kind = "Secret".into();
    secret.metadata.annotations.insert("map".into(), "a".into());
    let output =
        plugin.handle(&input(5, vec![secret_result(first[0].0, "a", false), event(1, EventType::Added, secret)]));
    // b was waiting first; a, triggered again by the Secret, waits behind it.
    assert_eq!(gets(&output).iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), ["b"]);
    let b = gets(&output);
    let output = plugin.handle(&input(6, vec![secret_result(b[0].0, "b", false)]));
    assert_eq!(gets(&output).iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), ["a"]);
    assert_eq!(started(&log), 3);
}

#[test]
fn a_watcher_stream_sees_a_relist_as_init_events_and_a_reflected_store_follows_it() {
    use recon_kube::runtime::{WatchStreamExt, reflector, watcher::Event, watcher::watcher};
    let log = Log::default();
    let shared = log.clone();
    let mut plugin = Plugin::new("watching", move || {
        let log = shared.clone();
        async move {
            let client = Client::try_default().await?;
            let (reader, writer) = reflector::store::<ConfigMap>();
            watcher(Api::<ConfigMap>::all(client), watcher::Config::default())
                .default_backoff()
                .reflect(writer)
                .for_each(|event| {
                    let line = match event.unwrap() {
                        Event::Init => "init".to_owned(),
                        Event::InitApply(m) => format!("init-apply {}", m.name_any()),
                        Event::InitDone => "init-done".to_owned(),
                        Event::Apply(m) => format!("apply {}", m.name_any()),
                        Event::Delete(m) => format!("delete {}", m.name_any()),
                    };
                    log.lock().unwrap().push(format!("{line} (store holds {})", reader.len()));
                    futures::future::ready(())
                })
                .await;
            Ok::<(), recon_kube::Error>(())
        }
    });
    let manifest = plugin.init(&recon_abi::ComponentConfig::default());
    assert_eq!(manifest.watches.len(), 1);
    plugin.handle(&input(0, vec![listed(0, vec![map("a"), map("b")]), event(0, EventType::Deleted, map("a"))]));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "init (store holds 0)",
            "init-apply a (store holds 0)",
            "init-apply b (store holds 0)",
            "init-done (store holds 2)",
            "delete a (store holds 1)",
        ]
    );
}

#[test]
fn a_reconcile_that_panics_crashes_its_instance_with_the_panic_message() {
    async fn panicking(_map: Arc<ConfigMap>, _ctx: Arc<()>) -> Result<Action, Error> {
        panic!("the map has no owner");
    }
    let mut native = recon_kube::Native::new(Plugin::new("panicking", || async {
        let client = Client::try_default().await?;
        Controller::new(Api::<ConfigMap>::all(client), watcher::Config::default())
            .run(panicking, |_, _, _| Action::await_change(), Arc::new(()))
            .for_each(|_| futures::future::ready(()))
            .await;
        Ok::<(), recon_kube::Error>(())
    }));
    recon_abi::Instance::init(&mut native, &recon_abi::ComponentConfig::default()).unwrap();
    let crash = recon_abi::Instance::handle(&mut native, &input(0, vec![listed(0, vec![map("a")])])).unwrap_err();
    assert_eq!(crash.reason, "recon_handle panicked: the map has no owner");
    // A fresh instance (the host's restart) starts over and lists again.
    let manifest = recon_abi::Instance::init(&mut native, &recon_abi::ComponentConfig::default()).unwrap();
    assert_eq!(manifest.watches.len(), 1);
}

#[test]
fn a_sleep_started_before_the_time_is_known_counts_from_the_first_input() {
    let mut plugin = Plugin::new("sleeper", || async {
        recon_kube::recon::sleep(Duration::from_secs(2)).await;
        Api::<ConfigMap>::namespaced(Client::try_default().await?, "default").get("x").await?;
        Ok::<(), recon_kube::Error>(())
    });
    plugin.init(&recon_abi::ComponentConfig::default());
    let output = plugin.handle(&input(1_000, vec![]));
    assert_eq!(output.actions, [Wire::RequeueAfter { key: "kube-timer/3000".into(), after_ms: 2_000 }]);
    assert!(plugin.handle(&input(2_999, vec![])).actions.is_empty());
    let output = plugin.handle(&input(3_000, vec![InputEvent::Timer { key: "kube-timer/3000".into() }]));
    assert_eq!(gets(&output).len(), 1);
}

#[test]
fn a_kind_used_only_inside_reconciles_is_allowed_by_declaring_it() {
    let mut plain = Plugin::new("plain", || async {});
    let manifest = plain.init(&recon_abi::ComponentConfig::default());
    assert!(!manifest.allows(Verb::Create, "Secret"));
    let mut declared = Plugin::new("declared", || async {}).allow::<Secret>();
    let manifest = declared.init(&recon_abi::ComponentConfig::default());
    assert!(manifest.allows(Verb::Create, "Secret") && manifest.allows(Verb::Delete, "Secret"));
}

/// A future that writes `poll NAME` in the log each time it is polled.
struct CountedPolls<F> {
    name: String,
    log: Log,
    inner: std::pin::Pin<Box<F>>,
}

impl<F: std::future::Future> std::future::Future for CountedPolls<F> {
    type Output = F::Output;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let line = format!("poll {}", self.name);
        self.log.lock().unwrap().push(line);
        self.inner.as_mut().poll(cx)
    }
}

/// Reads the Secret of the same name, counting the read's polls, and ends.
async fn reconcile_counting_polls(map: Arc<ConfigMap>, ctx: Arc<Data>) -> Result<Action, Error> {
    let name = map.name_any();
    let secrets = Api::<Secret>::namespaced(ctx.client.clone(), &map.namespace().unwrap());
    let get = secrets.get_opt(&name);
    CountedPolls { name: name.clone(), log: ctx.log.clone(), inner: Box::pin(get) }.await?;
    ctx.log.lock().unwrap().push(format!("end {name}"));
    Ok(Action::await_change())
}

/// A reconcile is polled when what it waits for is ready, not whenever
/// another one's is: with a hundred reconciles waiting for their own
/// writes, polling them all for every result made a result cost the
/// number running (kube-runtime's runner, on `FuturesUnordered`, polls
/// the woken ones too). The order among the woken stays the start order.
#[test]
fn a_waiting_reconcile_is_polled_again_only_when_its_own_result_comes() {
    let log = Log::default();
    let mut plugin = Plugin::new("maps", {
        let log = log.clone();
        move || {
            let log = log.clone();
            async move {
                let client = Client::try_default().await?;
                Controller::new(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
                    .run(reconcile_counting_polls, error_policy, Arc::new(Data { client, log, failing: "" }))
                    .for_each(|_| futures::future::ready(()))
                    .await;
                Ok::<(), recon_kube::Error>(())
            }
        }
    });
    plugin.init(&recon_abi::ComponentConfig { name: "maps".into(), ..Default::default() });
    let asked = gets(&plugin.handle(&input(100, vec![listed(0, vec![map("a"), map("b"), map("c")])])));
    assert_eq!(*log.lock().unwrap(), ["poll a", "poll b", "poll c"]);
    plugin.handle(&input(110, vec![secret_result(asked[1].0, "b", true)]));
    assert_eq!(*log.lock().unwrap(), ["poll a", "poll b", "poll c", "poll b", "end b"], "a and c still wait");
    plugin.handle(&input(120, vec![secret_result(asked[2].0, "c", false), secret_result(asked[0].0, "a", true)]));
    assert_eq!(
        log.lock().unwrap()[5..],
        ["poll a", "end a", "poll c", "end c"],
        "both woken in one call: polled in the order they started"
    );
}
