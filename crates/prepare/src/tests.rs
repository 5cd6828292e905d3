use recon_abi::ComponentConfig;

use super::*;

/// A plugin that declares `manifest` (JSON) and does nothing; its
/// `recon_init` runs `init` first (`unreachable` makes it crash as it starts).
fn plugin_with(manifest: &str, init: &str) -> PluginBytes {
    let wat = format!(
        r#"(module
          (memory (export "memory") 1)
          (data (i32.const 0x100) "{}")
          (data (i32.const 0x40) "{{\"actions\":[]}}")
          (func (export "recon_abi_version") (result i32) i32.const 1)
          (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
          (func (export "recon_init") (param i32 i32) (result i64) {init} i64.const {})
          (func (export "recon_handle") (param i32 i32) (result i64) i64.const 0x400000000e))"#,
        manifest.replace('"', "\\\""),
        (0x100i64 << 32) | manifest.len() as i64,
    );
    PluginBytes::new(wat::parse_str(&wat).expect("the test plugin assembles"))
}

/// A controller that is no node agent.
fn controller(name: &str) -> PluginBytes {
    plugin_with(&format!(r#"{{"name":"{name}","abiVersion":1}}"#), "")
}

/// A node agent.
fn node_agent(name: &str) -> PluginBytes {
    plugin_with(&format!(r#"{{"name":"{name}","abiVersion":1,"nodeAgent":true}}"#), "")
}

fn swap(component: &str, file_name: &str, plugin: PluginBytes) -> Swap {
    Swap { component: component.into(), file_name: file_name.into(), plugin }
}

fn default_file() -> ScenarioFile {
    let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
    ScenarioFile::parse("pod-safety-59848.yaml", library.yaml).unwrap()
}

/// The name the controller `instantiate` gives `component` declares.
fn controller_of(prepared: &Prepared, component: &str) -> String {
    let spec = prepared.scenario().components.iter().find(|c| c.name == component).unwrap();
    let mut instance = prepared.instantiate()(spec).expect("every component gets a controller");
    let config = ComponentConfig { name: spec.name.clone(), node: spec.node.clone(), ..Default::default() };
    instance.init(&config).unwrap().name
}

#[test]
fn a_plugin_stands_in_for_its_component_and_the_built_ins_run_everywhere_else() {
    let mut preparer = Preparer::new().unwrap();
    let swaps = [swap("kubelet-node-1", "k.wasm", node_agent("my-kubelet"))];
    let prepared = preparer.prepare(default_file(), &swaps).unwrap();
    assert_eq!(controller_of(&prepared, "kubelet-node-1"), "my-kubelet");
    assert_eq!(controller_of(&prepared, "kubelet-node-2"), "kubelet");
    assert_eq!(controller_of(&prepared, "scheduler"), "scheduler");
    assert!(prepared.warnings.is_empty(), "{:?}", prepared.warnings);
    // And it runs: the simulation builds and goes to its end.
    let mut sim = prepared.sim().unwrap();
    sim.run();
    assert!(sim.trace().entries.len() > 10);
}

/// docs/plugin-abi.md, *Running a plugin for a controller Recon does not
/// have*: a component may name any controller when a plugin stands in for it.
#[test]
fn a_plugin_runs_a_component_whose_controller_is_not_built_in() {
    let yaml = "name: mine\nduration: 2s\napiServers: [{name: a}]\n\
                components: [{name: my-operator-1, controller: my-operator, apiServer: a}]\n";
    let file = || ScenarioFile::parse("mine.yaml", yaml).unwrap();
    let mut preparer = Preparer::new().unwrap();
    let alone = preparer.prepare(file(), &[]).unwrap().sim().err().expect("no such built-in");
    assert!(alone.contains("unknown controller \"my-operator\""), "{alone}");
    let swaps = [swap("my-operator-1", "my_operator.wasm", controller("my-operator"))];
    let prepared = preparer.prepare(file(), &swaps).unwrap();
    assert_eq!(controller_of(&prepared, "my-operator-1"), "my-operator");
    let mut sim = prepared.sim().unwrap();
    sim.run();
    // It watches nothing: called once after it starts, with no events, and never again.
    let reconciles = sim
        .trace()
        .entries
        .iter()
        .filter(|e| matches!(&e.event, recon_sim::Event::Reconcile(call) if call.component == "my-operator-1"))
        .count();
    assert_eq!(reconciles, 1);
}

#[test]
fn a_plugin_for_a_component_the_scenario_lacks_is_refused_naming_those_it_has() {
    let mut preparer = Preparer::new().unwrap();
    let swaps = [swap("kubelet-node-9", "k.wasm", node_agent("k"))];
    let Err(error) = preparer.prepare(default_file(), &swaps) else { panic!("refused") };
    assert_eq!(error.component(), Some("kubelet-node-9"));
    assert_eq!(
        error.to_string(),
        "k.wasm: the scenario has no component \"kubelet-node-9\" (it has: scheduler, statefulset-controller, \
         kubelet-node-1, kubelet-node-2)"
    );
    assert_eq!(default_file().components_named("kubelet-node-9").unwrap_err(), error.to_string()["k.wasm: ".len()..]);
}

/// The names of the components `name` gives a plugin to.
fn named(file: &ScenarioFile, name: &str) -> Result<Vec<String>, String> {
    file.components_named(name).map(|found| found.into_iter().map(|c| c.name.clone()).collect())
}

#[test]
fn a_name_with_stars_gives_a_plugin_to_every_component_it_matches_in_the_scenarios_order() {
    let file = default_file();
    assert_eq!(named(&file, "kubelet-*").unwrap(), ["kubelet-node-1", "kubelet-node-2"]);
    assert_eq!(named(&file, "*-node-2").unwrap(), ["kubelet-node-2"]);
    assert_eq!(named(&file, "*controller*").unwrap(), ["statefulset-controller"]);
    assert_eq!(named(&file, "s*e*r").unwrap(), ["scheduler", "statefulset-controller"]);
    assert_eq!(named(&file, "*").unwrap().len(), 4);
    // Each star matches a run of its own: "kubelet-node-1" is not "kubelet-node-1-*".
    assert_eq!(
        named(&file, "kubelet-node-1*1").unwrap_err(),
        "no component of the scenario matches \"kubelet-node-1*1\" (it has: scheduler, statefulset-controller, \
         kubelet-node-1, kubelet-node-2)"
    );
    // A name without a star is a component's name, whole.
    assert!(named(&file, "kubelet").unwrap_err().starts_with("the scenario has no component \"kubelet\""));
}

#[test]
fn a_component_whose_name_holds_a_star_is_given_its_plugin_by_that_name_alone() {
    let mut file = default_file();
    file.scenario.components[0].name = "sched*".into();
    assert_eq!(named(&file, "sched*").unwrap(), ["sched*"]);
}

#[test]
fn a_clusters_thousand_components_are_listed_in_a_line_when_none_is_named() {
    let cluster = recon_catalog::cluster::yaml(1_000, 30_000);
    let file = ScenarioFile::parse("cluster.yaml", &cluster).unwrap();
    let error = named(&file, "kubelet-node-1001").unwrap_err();
    assert_eq!(
        error,
        "the scenario has no component \"kubelet-node-1001\" (it has: scheduler, deployment-controller, \
         replicaset-controller, kubelet-node-1, kubelet-node-2, kubelet-node-3, kubelet-node-4, kubelet-node-5, \
         kubelet-node-6, kubelet-node-7, … kubelet-node-1000; 1003 in all)"
    );
    assert_eq!(named(&file, "kubelet-node-*").unwrap().len(), 1_000);
    // 10, 100 to 109, and 1000.
    assert_eq!(named(&file, "kubelet-node-10*").unwrap().len(), 12);
}

#[test]
fn one_plugin_given_to_many_components_is_compiled_once_and_runs_as_each() {
    let mut preparer = Preparer::new().unwrap();
    let plugin = node_agent("k");
    let swaps: Vec<Swap> = named(&default_file(), "kubelet-*")
        .unwrap()
        .iter()
        .map(|component| swap(component, "k.wasm", plugin.clone()))
        .collect();
    let prepared = preparer.prepare(default_file(), &swaps).unwrap();
    assert_eq!(controller_of(&prepared, "kubelet-node-1"), "k");
    assert_eq!(controller_of(&prepared, "kubelet-node-2"), "k");
    assert_eq!(controller_of(&prepared, "scheduler"), "scheduler");
    assert_eq!(preparer.compiled(), 1);
}

#[test]
fn a_node_agent_off_a_node_is_refused_and_a_controller_on_a_node_runs_with_a_warning() {
    let mut preparer = Preparer::new().unwrap();
    let refused = preparer.prepare(default_file(), &[swap("scheduler", "k.wasm", node_agent("k"))]);
    let Err(error @ PrepareError::DoesNotFit { .. }) = refused else { panic!("a node agent on the scheduler") };
    assert_eq!(error.component(), Some("scheduler"));
    assert!(error.to_string().starts_with("k.wasm is a node agent (k), but scheduler runs on no node"), "{error}");

    let swaps = [swap("kubelet-node-2", "s.wasm", controller("sched"))];
    let prepared = preparer.prepare(default_file(), &swaps).unwrap();
    assert_eq!(
        prepared.warnings,
        ["s.wasm (sched) is not a node agent: while it stands in for kubelet-node-2, nothing starts or stops \
          node-2's containers"]
    );
    // A later plugin for the same component replaces the earlier one, and its warning.
    let swaps =
        [swap("kubelet-node-2", "s.wasm", controller("sched")), swap("kubelet-node-2", "k.wasm", node_agent("k"))];
    let prepared = preparer.prepare(default_file(), &swaps).unwrap();
    assert!(prepared.warnings.is_empty(), "{:?}", prepared.warnings);
    assert_eq!(controller_of(&prepared, "kubelet-node-2"), "k");
}

#[test]
fn a_file_that_is_not_a_plugin_is_refused_in_one_line_naming_the_file() {
    let mut preparer = Preparer::new().unwrap();
    let notes = swap("kubelet-node-1", "notes.wasm", PluginBytes::new(b"these are notes".to_vec()));
    let Err(error) = preparer.prepare(default_file(), std::slice::from_ref(&notes)) else { panic!("refused") };
    assert!(matches!(error, PrepareError::Rejected { .. }), "{error:?}");
    assert_eq!(error.component(), Some("kubelet-node-1"));
    let text = error.to_string();
    assert!(text.starts_with("notes.wasm") && !text.contains('\n'), "{text}");
    assert_eq!(preparer.check(&notes, &Default::default()).unwrap_err().to_string(), text);
}

#[test]
fn a_plugin_that_crashes_as_it_starts_fails_its_check_but_runs_and_crashes_in_the_run() {
    let mut preparer = Preparer::new().unwrap();
    let crashing = swap("kubelet-node-1", "crash.wasm", plugin_with(r#"{"name":"c","abiVersion":1}"#, "unreachable"));
    let error = preparer.check(&crashing, &Default::default()).unwrap_err();
    assert!(error.to_string().starts_with("crash.wasm"), "{error}");
    // In a run it is the component's crash, which the simulator reports.
    let prepared = preparer.prepare(default_file(), &[crashing]).unwrap();
    let mut sim = prepared.sim().unwrap();
    sim.run();
    let trace = sim.into_trace();
    assert!(recon_trace::crashes(&trace).iter().any(|c| c.component == "kubelet-node-1"));
}

#[test]
fn a_plugin_passes_its_check_with_what_it_declares() {
    let mut preparer = Preparer::new().unwrap();
    let manifest = preparer.check(&swap("scheduler", "s.wasm", controller("sched")), &Default::default()).unwrap();
    assert_eq!((manifest.name.as_str(), manifest.node_agent), ("sched", false));
}

#[test]
fn an_unknown_controller_is_reported_at_its_line_with_the_built_in_ones() {
    let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
    let text = library.yaml.replacen("controller: scheduler", "controller: schedulr", 1);
    let line = text.lines().position(|l| l.contains("schedulr")).unwrap() + 1;
    let file = ScenarioFile::parse("mine.yaml", &text).unwrap();
    let prepared = Preparer::new().unwrap().prepare(file, &[]).unwrap();
    let Err(error) = prepared.sim() else { panic!("the simulator refuses it") };
    assert!(error.starts_with(&format!("mine.yaml:{line}:")), "{error}");
    assert!(error.contains("unknown controller \"schedulr\"") && error.contains("kubelet-fixed"), "{error}");
}

/// Kubernetes' API concepts ("Field validation"): a body whose field has
/// the wrong type does not decode into the kind's type, and the API server
/// refuses it with 400 Bad Request. A scenario that writes one, as an
/// initial object or from its script, is refused at each such object's
/// line before anything runs, instead of crashing every kube-rs controller
/// it is sent to.
#[test]
fn an_object_that_does_not_read_as_its_kubernetes_type_is_refused_at_its_line() {
    let library = recon_catalog::scenario("replicaset-flapping").unwrap();
    let step = "  - { at: 1s, apply: { apiVersion: v1, kind: ConfigMap, metadata: { name: settings }, data: { size: [1] } } }\n";
    let text = library.yaml.replacen("      replicas: 10\n", "      replicas: \"ten\"\n", 1).replacen(
        "script:\n",
        &format!("script:\n{step}"),
        1,
    );
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).expect(needle) + 1;
    let Err(error) = ScenarioFile::parse("mine.yaml", &text) else { panic!("the scenario is refused") };
    let lines: Vec<String> = error.to_string().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2, "{error}");
    assert!(lines[0].starts_with(&format!("mine.yaml:{}:", line_of("- apiVersion: apps/v1"))), "{error}");
    assert!(lines[0].contains("ReplicaSet default/web does not read as a Kubernetes apps/v1 ReplicaSet"), "{error}");
    assert!(lines[0].contains(r#"invalid type: string "ten", expected i32"#), "{error}");
    assert!(lines[1].starts_with(&format!("mine.yaml:{}:", line_of("kind: ConfigMap"))), "{error}");
    assert!(lines[1].contains("ConfigMap default/settings does not read as a Kubernetes v1 ConfigMap"), "{error}");
    assert!(ScenarioFile::parse("mine.yaml", library.yaml).is_ok(), "the library's own scenario reads");
}
