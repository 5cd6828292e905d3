//! Kubernetes issue #59848, reproduced: a kubelet restarts, relists with
//! resourceVersion="0" from an API server whose cache is frozen by a
//! partition, and starts a pod that already runs elsewhere.

use recon_scenario::Check;
use recon_tests::{load, run, run_with_seed};
use recon_trace::{Event, explain_all, unavailability};

fn checks(trace: &recon_trace::Trace) -> Vec<Check> {
    let mut v: Vec<Check> = trace.violations().map(|(_, c, _)| c).collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn naive_list_mode_runs_web_0_on_two_nodes_and_travels_back_in_time() {
    let trace = run(&load("pod-safety-59848"));
    assert_eq!(checks(&trace), [Check::PodIdentity, Check::StatefulSetOrdinals, Check::TimeTravel]);
    let (identity, _, message) = trace.violations().find(|(_, c, _)| *c == Check::PodIdentity).unwrap();
    assert!(message.contains("default/web-0") && message.contains("node-1") && message.contains("node-2"), "{message}");
    let (travel, _, travel_message) = trace.violations().find(|(_, c, _)| *c == Check::TimeTravel).unwrap();
    assert!(travel_message.contains("kubelet-node-1") && travel_message.contains("apiserver-2"), "{travel_message}");
    assert!(travel.id < identity.id, "time travel is flagged before the damage");
}

#[test]
fn explanation_names_the_api_server_the_stale_revision_and_the_object() {
    let trace = run(&load("pod-safety-59848"));
    let explanations = explain_all(&trace);
    let x = explanations.iter().find(|x| x.check == Check::PodIdentity).expect("explained");
    let text: Vec<&str> = x.steps.iter().map(|s| s.text.as_str()).collect();
    let all = text.join("\n");
    // The list that brought the stale pod back, with its revisions.
    let (list_revision, store_revision, old_uid) = trace
        .entries
        .iter()
        .find_map(|e| match &e.event {
            Event::ListServed(list) if list.component == "kubelet-node-1" && list.api_server == "apiserver-2" => {
                Some((list.revision, list.store_revision, list.objects[0].uid.clone()))
            }
            _ => None,
        })
        .expect("kubelet-node-1 listed from apiserver-2");
    assert!(store_revision > list_revision);
    assert!(all.contains("kubelet-node-1 restarts"), "{all}");
    assert!(all.contains("apiserver-2 loses its connection to the store"), "{all}");
    assert!(
        all.contains(&format!("{} revisions", store_revision - list_revision))
            && all.contains(&format!("cache at revision {list_revision}")),
        "{all}"
    );
    assert!(all.contains("resourceVersion=\"0\""), "{all}");
    assert!(
        all.contains(&format!("Pod default/web-0 (uid {})", &old_uid[..8])) && all.contains("is deleted at revision"),
        "{all}"
    );
    assert!(all.contains("on node-1") && all.contains("on node-2"), "{all}");
    // Every step points at a real entry, in causal (trace) order.
    assert!(x.steps.windows(2).all(|w| w[0].entry < w[1].entry));
    assert_eq!(x.steps.last().unwrap().entry, x.violation);
}

#[test]
fn naive_variant_fails_for_every_seed() {
    let scenario = load("pod-safety-59848");
    for seed in 0..20 {
        let trace = run_with_seed(&scenario, seed);
        assert!(checks(&trace).contains(&Check::PodIdentity), "reproduce with seed={seed}");
    }
}

#[test]
fn quorum_first_list_is_safe_but_unavailable_until_failover() {
    let trace = run(&load("pod-safety-59848-quorum"));
    assert!(checks(&trace).is_empty(), "{:?}", trace.violations().map(|v| v.2.to_string()).collect::<Vec<_>>());
    let outage = unavailability(&trace);
    let kubelet = outage.iter().find(|u| u.component == "kubelet-node-1").expect("the kubelet could not list");
    assert!(kubelet.failures >= recon_sim::FAILOVER_AFTER);
    assert!(kubelet.last_error.contains("apiserver-2 cannot reach the store"), "{}", kubelet.last_error);
    assert!(kubelet.until_ms.is_some_and(|t| t > kubelet.from_ms));
    assert!(trace.entries.iter().any(|e| matches!(&e.event,
        Event::Failover { component, from, to } if component == "kubelet-node-1" && from == "apiserver-2" && to == "apiserver-1")));
}

#[test]
fn consistent_first_list_is_safe_but_unavailable_until_failover() {
    let trace = run(&load("pod-safety-59848-consistent"));
    assert!(checks(&trace).is_empty());
    assert!(unavailability(&trace).iter().any(|u| u.component == "kubelet-node-1"));
    assert!(
        trace
            .entries
            .iter()
            .any(|e| matches!(&e.event, Event::Failover { component, .. } if component == "kubelet-node-1"))
    );
}

#[test]
fn without_the_partition_resource_version_zero_is_harmless() {
    let trace = run(&load("pod-safety-59848-no-partition"));
    assert!(checks(&trace).is_empty());
}

#[test]
fn fixed_variants_stay_safe_for_every_seed() {
    for name in ["pod-safety-59848-quorum", "pod-safety-59848-consistent", "pod-safety-59848-no-partition"] {
        let scenario = load(name);
        for seed in 0..10 {
            assert!(checks(&run_with_seed(&scenario, seed)).is_empty(), "{name}: reproduce with seed={seed}");
        }
    }
}

#[test]
fn the_stale_pod_is_stopped_once_the_partition_heals() {
    let trace = run(&load("pod-safety-59848"));
    let (identity, _, _) = trace.violations().find(|(_, c, _)| *c == Check::PodIdentity).unwrap();
    let Event::ContainerStarted { pod, .. } = &trace.get(identity.causes[0]).unwrap().event else { panic!() };
    let stopped = trace.entries.range(identity.id as usize..).find(|e| {
        matches!(&e.event,
        Event::ContainerStopped { node, pod: p } if node == "node-1" && p == pod)
    });
    let stopped = stopped.expect("node-1 stops the stale container after the heal");
    assert!(stopped.time_ms >= 20_000, "not before the partition heals at 20s");
}
