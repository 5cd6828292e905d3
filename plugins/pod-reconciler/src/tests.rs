use recon_abi::{
    Action as Wire, ActionResult, ComponentConfig, Controller as _, Input, InputEvent, Object, ObjectKey, ObjectMeta,
    Outcome, Status, StatusReason, Verb,
};

use super::*;

fn pod(resource_version: &str) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "Pod".into(),
        metadata: ObjectMeta {
            name: "web".into(),
            namespace: "default".into(),
            uid: "uid-web".into(),
            resource_version: resource_version.into(),
            labels: [(MIRROR_LABEL, "true"), ("app", "web"), ("tier", "frontend")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            ..ObjectMeta::default()
        },
        ..Object::default()
    }
}

fn started() -> kube::Plugin {
    let mut plugin = controller();
    let manifest = plugin.init(&ComponentConfig { name: "pod-reconciler".into(), ..Default::default() });
    assert_eq!(manifest.watches.len(), 1);
    assert_eq!(manifest.watches[0].kind, "Pod");
    assert_eq!(manifest.watches[0].label_selector, format!("{MIRROR_LABEL}=true"));
    plugin
}

fn call(plugin: &mut kube::Plugin, time_ms: u64, events: Vec<InputEvent>) -> recon_abi::Output {
    plugin.handle(&Input { time_ms, events, containers: None })
}

/// The reconcile's replace: its object and request id.
fn the_replace(output: &recon_abi::Output) -> (&Object, u64) {
    let [Wire::Update { object, .. }] = &output.actions[..] else { panic!("one replace, got {output:?}") };
    (object, output.request_id(0).expect("a request has an id"))
}

/// The requeue timers an output asks for, in milliseconds from now.
fn timers(output: &recon_abi::Output) -> Vec<u64> {
    output
        .actions
        .iter()
        .filter_map(|a| match a {
            Wire::RequeueAfter { after_ms, .. } => Some(*after_ms),
            _ => None,
        })
        .collect()
}

fn refused(id: u64, reason: StatusReason) -> InputEvent {
    InputEvent::Result(Box::new(ActionResult {
        verb: Verb::Update,
        key: ObjectKey::new("Pod", "default", "web"),
        outcome: Outcome::Err(Status::new(reason, "the object has been modified")),
        id: Some(id),
    }))
}

#[test]
fn the_annotation_lists_every_label_but_the_selector_in_key_order() {
    let labels = [("tier", "frontend"), (MIRROR_LABEL, "true"), ("app", "web")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(mirrored(&labels), "app=web,tier=frontend");
    assert_eq!(mirrored(&BTreeMap::new()), "");
}

#[test]
fn the_back_off_doubles_from_a_quarter_second_up_to_eight_seconds() {
    let millis: Vec<u128> = (1..=8).map(|n| backoff(n).as_millis()).collect();
    assert_eq!(millis, [250, 500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
    assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
}

#[test]
fn a_listed_pod_is_replaced_with_its_annotation_and_the_stores_resource_version() {
    let mut plugin = started();
    let listed = InputEvent::Listed { watch: 0, resource_version: "7".into(), objects: vec![pod("7").into()] };
    let output = call(&mut plugin, 1_000, vec![listed]);
    let (object, _) = the_replace(&output);
    assert_eq!(object.key(), ObjectKey::new("Pod", "default", "web"));
    assert_eq!(object.metadata.resource_version, "7", "the store's version is the write's precondition");
    assert_eq!(object.metadata.annotations.get(ANNOTATION).map(String::as_str), Some("app=web,tier=frontend"));
}

#[test]
fn each_refused_replace_in_a_row_backs_off_twice_as_long_and_a_success_resyncs() {
    let mut plugin = started();
    let listed = InputEvent::Listed { watch: 0, resource_version: "7".into(), objects: vec![pod("7").into()] };
    let (_, mut id) = the_replace(&call(&mut plugin, 1_000, vec![listed]));
    let mut now = 1_000;
    // Each 409 Conflict: the error policy requeues after 250 ms, 500 ms, 1 s.
    for wait in [250, 500, 1_000] {
        let output = call(&mut plugin, now, vec![refused(id, StatusReason::Conflict)]);
        assert_eq!(timers(&output), [wait], "{output:?}");
        now += wait;
        let retry = call(&mut plugin, now, vec![InputEvent::Timer { key: format!("kube-timer/{now}") }]);
        id = the_replace(&retry).1;
    }
    // Then the write goes through: the pod is checked again after RESYNC.
    let mut stored = pod("9");
    stored.metadata.annotations.insert(ANNOTATION.into(), "app=web,tier=frontend".into());
    let done = ActionResult { verb: Verb::Update, key: stored.key(), outcome: Outcome::Ok(Some(stored)), id: Some(id) };
    let output = call(&mut plugin, now, vec![InputEvent::Result(Box::new(done))]);
    assert_eq!(timers(&output), [RESYNC.as_millis() as u64]);
    // A failure after the success starts again from the first back-off.
    let retry = call(&mut plugin, now + 5_000, vec![InputEvent::Timer { key: format!("kube-timer/{}", now + 5_000) }]);
    let (_, id) = the_replace(&retry);
    let output = call(&mut plugin, now + 5_000, vec![refused(id, StatusReason::Forbidden)]);
    assert_eq!(timers(&output), [250]);
}
