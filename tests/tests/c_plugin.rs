//! The controller written in C (`plugins/c-team-config`, from
//! `docs/plugin-abi.md` alone) runs its own scenario under wasmtime and
//! does what its README says: a ConfigMap `team-info` in every Namespace
//! labelled `recon.example/team`, kept to `team: <label>` with updates
//! whose resourceVersion is a precondition. `cargo xtask plugins` builds
//! it where clang can target wasm32; elsewhere these tests print why they
//! were skipped and pass.

use recon_abi::{ObjectKey, StatusReason, Verb};
use recon_sim::{Sim, Trace};
use recon_trace::{Event, explain};

/// The plugin's file name, without `.wasm`.
const FILE_STEM: &str = "recon_plugin_c_team_config";
/// The name its crash reasons would start with.
const NAME: &str = "c-team-config.wasm";
const SCENARIO: &str = include_str!("../../plugins/c-team-config/scenario.yaml");

/// A namespace's `team-info` map, if it has one: its data and its
/// `managed-by` label.
type TeamInfo = Option<(serde_json::Value, Option<String>)>;

/// What a run of the scenario left: each namespace's `team-info` map, and
/// the trace.
struct Run {
    maps: Vec<(&'static str, TeamInfo)>,
    trace: Trace,
}

/// Runs the scenario with the C plugin as `team-config`; `None` where the
/// plugin was not built (the reason is printed).
fn run() -> Option<Run> {
    run_yaml(SCENARIO)
}

/// Runs a scenario (the plugin's, changed) with the C plugin as `team-config`.
fn run_yaml(yaml: &str) -> Option<Run> {
    recon_tests::optional_plugin_file(FILE_STEM)?;
    let plugin = recon_tests::wasm_plugin(FILE_STEM, NAME);
    let scenario = recon_scenario::parse("plugins/c-team-config/scenario.yaml", yaml).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::new(&scenario, recon_tests::wasm_instantiate([("c-team-config".to_owned(), plugin)].into()))
        .expect("the scenario builds");
    sim.run();
    let map = |namespace: &str| {
        let key = ObjectKey::new("ConfigMap", namespace, "team-info");
        let map = sim.store().get(&key, None).expect("the store answers")?.value;
        let managed_by = map.metadata.labels.get("app.kubernetes.io/managed-by").cloned();
        Some((map.other.get("data").cloned().unwrap_or_default(), managed_by))
    };
    let maps = ["payments", "checkout", "scratch"].into_iter().map(|ns| (ns, map(ns))).collect();
    Some(Run { maps, trace: sim.into_trace() })
}

/// A map as the controller keeps it, for team `t`.
fn team(t: &str) -> Option<(serde_json::Value, Option<String>)> {
    Some((serde_json::json!({ "team": t }), Some("c-team-config".to_owned())))
}

/// Every line the controller logged, in order.
fn log_lines(trace: &Trace) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in &trace.entries {
        if let Event::Logged { component, lines: logged } = &entry.event {
            assert_eq!(component, "team-config");
            lines.extend(logged.iter().cloned());
        }
    }
    lines
}

#[test]
fn the_c_controller_keeps_a_team_config_map_in_every_labelled_namespace_and_no_other() {
    let Some(run) = run() else { return };
    assert!(explain::crashes(&run.trace).is_empty(), "no crash: {:?}", explain::crashes(&run.trace));
    assert_eq!(run.trace.violations().count(), 0);
    assert_eq!(run.maps[0], ("payments", team("billing")), "created at the start, edits undone");
    assert_eq!(run.maps[1], ("checkout", team("shop")), "created at 1s, following the relabel at 9s");
    assert_eq!(run.maps[2], ("scratch", None), "an unlabelled namespace gets none");
    let lines = log_lines(&run.trace);
    assert_eq!(
        lines[0],
        "c-team-config starting as team-config: a ConfigMap team-info in every Namespace labelled recon.example/team"
    );
    for expected in [
        "created ConfigMap payments/team-info for team billing at resourceVersion ",
        "created ConfigMap checkout/team-info for team web at resourceVersion ",
        "updated ConfigMap payments/team-info for team billing at resourceVersion ",
        "updated ConfigMap checkout/team-info for team shop at resourceVersion ",
    ] {
        assert!(lines.iter().any(|l| l.starts_with(expected)), "{expected:?} in {lines:#?}");
    }
    // The same scenario, the same trace: the C plugin is as deterministic as the rest.
    assert_eq!(run.trace.hash(), self::run().expect("built").trace.hash());
}

/// Kubernetes, *API Concepts* → *Resource versions*
/// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions):
/// an update that carries a `metadata.resourceVersion` is applied only if
/// the object is still at that version, else it is refused with 409
/// Conflict; and a read at `resourceVersion="0"` may be served from the
/// cache, however old. So the controller's cheap read can be stale, and
/// its precondition turns that into a Conflict it retries from etcd,
/// never into undoing a change it has not seen.
#[test]
fn a_stale_cached_read_costs_the_c_controller_a_conflict_and_a_read_from_etcd_never_an_unseen_edit() {
    let Some(run) = run() else { return };
    let payments = ObjectKey::new("ConfigMap", "payments", "team-info");
    let mut conflicts = Vec::new();
    let mut updates = Vec::new();
    for entry in &run.trace.entries {
        match &entry.event {
            Event::WriteFailed { verb: Verb::Update, key, status, by, .. } if by == "team-config" => {
                assert_eq!((key.as_key(), status.reason), (&payments, StatusReason::Conflict), "{status:?}");
                conflicts.push(entry.time_ms);
            }
            Event::StoreWrite { verb: Verb::Update, key, by, .. } if by == "team-config" && *key == payments => {
                updates.push(entry.time_ms);
            }
            _ => {}
        }
    }
    // Each of the two edits reaches the controller 2 s late, through a
    // cache that holds an older version than etcd: one refused update each.
    assert_eq!(conflicts.len(), 2, "{conflicts:?}");
    assert!(conflicts.iter().all(|t| (6_000..7_000).contains(t)), "{conflicts:?}");
    assert_eq!(updates.len(), 1, "one update on the current version puts the data back: {updates:?}");
    assert!(conflicts[0] < updates[0], "the write that succeeds follows the refused one");
    let lines = log_lines(&run.trace);
    let retried = "update of ConfigMap payments/team-info refused (409 Conflict): its read was stale; \
                   reading it again from etcd";
    assert_eq!(lines.iter().filter(|l| *l == retried).count(), 2, "{lines:#?}");
}

#[test]
fn a_write_that_fails_otherwise_is_logged_and_retried_by_the_c_controller_a_second_later() {
    // The API server is cut off from etcd for the first 1.5 s: its cache
    // answers the read (404), the create waits for etcd and fails (503
    // after the request timeout of 1 s). The controller's requeue brings
    // it back once the partition has healed.
    let lag = "    watchCache: { lag: 2s }\n";
    let cut_off = SCENARIO.replace(lag, &format!("{lag}    partitions: [ {{ from: 0s, until: 1500ms }} ]\n"));
    assert_ne!(cut_off, SCENARIO, "the scenario's API server is where this test expects it");
    let Some(run) = run_yaml(&cut_off) else { return };
    let lines = log_lines(&run.trace);
    let failed = "create of ConfigMap payments/team-info failed (503 ServiceUnavailable); \
                  checking every namespace again in 1s";
    let at = lines.iter().position(|l| l == failed).unwrap_or_else(|| panic!("{failed:?} in {lines:#?}"));
    assert!(lines[at + 1].starts_with("created ConfigMap payments/team-info for team billing"), "{lines:#?}");
    let requeued = run.trace.entries.iter().any(|e| {
        matches!(&e.event, Event::Reconcile(call)
            if call.component == "team-config" && call.actions.iter().any(|a| a.to_string().starts_with("requeue retry after 1000ms")))
    });
    assert!(requeued, "the retry is a requeueAfter, on the trace");
    assert_eq!(run.maps[0], ("payments", team("billing")));
    assert!(explain::crashes(&run.trace).is_empty());
}

/// What `recon check-plugin` runs (`recon_host::check`): the module is
/// valid and its manifest is the one its README describes.
#[test]
fn recon_check_plugin_accepts_the_c_controller_and_reads_its_manifest() {
    let Some(file) = recon_tests::optional_plugin_file(FILE_STEM) else { return };
    let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let manifest = recon_host::check(NAME, &bytes, &recon_host::Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(manifest.name, "c-team-config");
    let watches: Vec<_> = manifest
        .watches
        .iter()
        .map(|w| (w.kind.as_str(), w.label_selector.as_str(), w.field_selector.as_str()))
        .collect();
    assert_eq!(watches, [("Namespace", "recon.example/team", ""), ("ConfigMap", "", "metadata.name=team-info")]);
    assert_eq!(manifest.writes.len(), 1);
    assert_eq!(manifest.writes[0].kind, "ConfigMap");
    assert_eq!(manifest.writes[0].verbs, [Verb::Get, Verb::Create, Verb::Update]);
    assert!(!manifest.node_agent);
}
