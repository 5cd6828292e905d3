//! kube's `events::Recorder` as the ABI requests it makes: a new Event,
//! the next count of its series within six minutes, a new Event after.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use recon_abi::{
    Action as Wire, ActionResult, ComponentConfig, Controller as _, Input, InputEvent, Object, ObjectMeta, Outcome,
    Patch, Verb,
};
use recon_kube::runtime::events::{Event, EventType, Recorder, Reporter};
use recon_kube::{Client, Plugin};

fn pod() -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some("apps".into()),
        name: Some("web-0".into()),
        uid: Some("u-1".into()),
        ..ObjectReference::default()
    }
}

fn restarted() -> Event {
    Event {
        type_: EventType::Warning,
        reason: "Restarted".into(),
        note: Some("web-0 restarted".into()),
        action: "Restart".into(),
        secondary: None,
    }
}

/// Runs `main` as the host would, answering every request with success and
/// firing every timer when it is due; returns each request with the
/// virtual time it was made at.
fn run(plugin: &mut Plugin) -> Vec<(u64, Wire)> {
    let manifest = plugin.init(&ComponentConfig::default());
    assert!(
        manifest.allows(Verb::Create, "Event") && manifest.allows(Verb::Patch, "Event"),
        "a Recorder made in main allows Events"
    );
    let (mut time_ms, mut events, mut timers) = (0, Vec::new(), Vec::new());
    let mut requests = Vec::new();
    for _ in 0..50 {
        let output = plugin.handle(&Input { time_ms, events: std::mem::take(&mut events), containers: None });
        for (i, action) in output.actions.iter().enumerate() {
            if let Wire::RequeueAfter { key, after_ms } = action {
                timers.push((time_ms + after_ms, key.clone()));
                continue;
            }
            let (verb, key) = action.request_target().expect("a request");
            let id = output.request_id(i).expect("every request has an id");
            let stored = match action {
                Wire::Create { object, .. } => object.clone(),
                _ => Object {
                    api_version: "events.k8s.io/v1".into(),
                    kind: "Event".into(),
                    metadata: ObjectMeta {
                        name: key.name.clone(),
                        namespace: key.namespace.clone(),
                        ..ObjectMeta::default()
                    },
                    ..Object::default()
                },
            };
            events.push(InputEvent::Result(Box::new(ActionResult {
                verb,
                key,
                outcome: Outcome::Ok(Some(stored)),
                id: Some(id),
            })));
            requests.push((time_ms, action.clone()));
        }
        if events.is_empty() {
            timers.sort();
            let Some((due, key)) = (!timers.is_empty()).then(|| timers.remove(0)) else { break };
            time_ms = due;
            events.push(InputEvent::Timer { key });
        } else {
            time_ms += 1;
        }
    }
    requests
}

#[test]
fn a_repeat_within_six_minutes_is_the_next_count_of_its_series_and_a_later_one_a_new_event() {
    // kube-runtime's Recorder: the same event about the same object again
    // within its cache's six minutes is patched into the first Event's
    // series (count 2, 3, …); after that, a new Event. The Event is an
    // events.k8s.io/v1 Event in the object's namespace, regarding it, with
    // the reporter as reportingController and, without an instance, as
    // reportingInstance too (Kubernetes API reference, Event v1
    // events.k8s.io).
    let mut plugin = Plugin::new("restarts", || async {
        let recorder = Recorder::new(Client::try_default().await?, Reporter::from("restarts"));
        recon_kube::recon::sleep(Duration::from_secs(1)).await;
        recorder.publish(&restarted(), &pod()).await?;
        recon_kube::recon::sleep(Duration::from_secs(60)).await;
        recorder.publish(&restarted(), &pod()).await?;
        recorder.publish(&restarted(), &pod()).await?;
        recon_kube::recon::sleep(Duration::from_secs(7 * 60)).await;
        recorder.publish(&restarted(), &pod()).await?;
        Ok::<(), recon_kube::Error>(())
    });
    let requests = run(&mut plugin);
    assert_eq!(requests.len(), 4, "{requests:#?}");

    let (first_at, Wire::Create { object, .. }) = &requests[0] else { panic!("{:?}", requests[0]) };
    assert_eq!((object.api_version.as_str(), object.kind.as_str()), ("events.k8s.io/v1", "Event"));
    assert_eq!(object.metadata.namespace, "apps");
    let name = object.metadata.name.clone();
    assert!(name.starts_with("web-0."), "{name}");
    assert_eq!(object.other["regarding"]["uid"], "u-1");
    assert_eq!((object.other["reason"].as_str(), object.other["type"].as_str()), (Some("Restarted"), Some("Warning")));
    assert_eq!(object.other["reportingController"], "restarts");
    assert_eq!(object.other["reportingInstance"], "restarts");
    assert_eq!(object.other["note"], "web-0 restarted");
    assert!(
        object.other["eventTime"].as_str().is_some_and(|t| t.starts_with("1970-01-01T00:00:01")),
        "virtual time: {}",
        object.other["eventTime"]
    );

    for (request, count) in [(&requests[1], 2), (&requests[2], 3)] {
        let (_, Wire::Patch { key, patch: Patch::Merge(body), .. }) = request else { panic!("{request:?}") };
        assert_eq!(key.name, name, "the series is the first Event's");
        assert_eq!(body["series"]["count"], count);
    }
    let (later_at, Wire::Create { object: later, .. }) = &requests[3] else { panic!("{:?}", requests[3]) };
    assert!(later_at - first_at > 6 * 60 * 1000);
    assert_ne!(later.metadata.name, name, "a new Event once the series is forgotten");
}

#[test]
fn a_different_reason_or_object_is_a_separate_event() {
    let mut plugin = Plugin::new("restarts", || async {
        let recorder = Recorder::new(Client::try_default().await?, "restarts".into());
        recon_kube::recon::sleep(Duration::from_secs(1)).await;
        recorder.publish(&restarted(), &pod()).await?;
        recorder.publish(&Event { reason: "Killed".into(), ..restarted() }, &pod()).await?;
        let other = ObjectReference { name: Some("web-1".into()), uid: Some("u-2".into()), ..pod() };
        recorder.publish(&restarted(), &other).await?;
        Ok::<(), recon_kube::Error>(())
    });
    let requests = run(&mut plugin);
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|(_, r)| matches!(r, Wire::Create { .. })), "{requests:#?}");
}
