//! Reading scenario files: defaults, located errors, validation rules,
//! normalisation and writing back.

use recon_scenario::{
    Check, Diagnostic, Millis, Scenario, ScenarioError, StepAction, Window, parse, parse_millis, parse_with_source,
    to_yaml,
};

/// The problems `text` has, as `(line, column, message)`; panics if it parses.
fn problems(text: &str) -> Vec<(usize, usize, String)> {
    let error = parse("test.yaml", text).expect_err("the scenario should be rejected");
    assert!(!error.diagnostics.is_empty(), "an error always carries a diagnostic");
    error.diagnostics.into_iter().map(|d| (d.line, d.column, d.message)).collect()
}

/// The one problem `text` has.
fn problem(text: &str) -> Diagnostic {
    let error = parse("test.yaml", text).expect_err("the scenario should be rejected");
    assert_eq!(error.diagnostics.len(), 1, "expected exactly one problem, got: {error}");
    error.diagnostics.into_iter().next().unwrap()
}

fn assert_problem(text: &str, line: usize, column: usize, path: &str, message: &str) {
    let d = problem(text);
    assert_eq!((d.line, d.column, d.path.as_str(), d.message.as_str()), (line, column, path, message));
}

fn rich() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rich.yaml")).unwrap()
}

// --- defaults and durations ---

#[test]
fn a_minimal_scenario_gets_the_documented_defaults() {
    let s = parse("min.yaml", "name: min\napiServers: [{name: a}]\nnodes: [{name: n}]\ncomponents: [{name: c, controller: k, apiServer: a}]\n").unwrap();
    assert_eq!((s.description.as_str(), s.seed, s.duration), ("", 0, Millis(30_000)));
    assert_eq!((s.network.latency.min, s.network.latency.max), (Millis(1), Millis(5)));
    let a = &s.api_servers[0];
    assert!(a.watch_cache.enabled);
    assert_eq!(a.watch_cache.lag, Millis(0));
    assert!(!a.consistent_reads_from_cache);
    assert!(a.partitions.is_empty());
    assert_eq!(a.request_timeout, Millis(1_000));
    assert_eq!(s.nodes[0].pods, 110);
    let c = &s.components[0];
    assert_eq!((c.node.as_deref(), c.failover.len(), c.list_mode, c.params.len()), (None, 0, None, 0));
    assert_eq!(c.start_at, Millis(0));
    assert!(c.leader_election.is_none());
    assert_eq!(s.checks.enabled, Check::DEFAULT.to_vec());
    assert!(!s.checks.enabled.contains(&Check::Convergence), "liveness is opt-in");
    assert!(s.expect.violations.is_empty() && s.objects.is_empty() && s.script.is_empty());
}

#[test]
fn durations_accept_units_fractions_and_plain_milliseconds() {
    for (text, ms) in [
        ("250ms", 250),
        ("2s", 2_000),
        ("1.5s", 1_500),
        ("1.1s", 1_100),
        (".5s", 500),
        ("1m", 60_000),
        ("0.25m", 15_000),
        ("42", 42),
        ("0", 0),
    ] {
        assert_eq!(parse_millis(text), Ok(Millis(ms)), "{text}");
    }
    for text in ["-5ms", "-1", "1.5ms", "0.0001s", "5h", "", "s", "1e3s", "1..5s", "99999999999999999999s"] {
        assert!(parse_millis(text).is_err(), "{text} should be rejected");
    }
}

#[test]
fn durations_are_written_in_a_form_they_are_read_back_from() {
    for ms in [0, 1, 999, 1_000, 1_500, 60_000, 90_000, 3_600_000, u64::MAX] {
        assert_eq!(parse_millis(&Millis(ms).to_string()), Ok(Millis(ms)));
    }
    assert_eq!(Millis(90_000).to_string(), "90s");
}

#[test]
fn a_window_is_half_open_and_open_ended_without_until() {
    let w = Window { from: Millis(5), until: Some(Millis(10)) };
    assert!(!w.contains(4) && w.contains(5) && w.contains(9) && !w.contains(10));
    assert!(Window { from: Millis(5), until: None }.contains(u64::MAX));
}

// --- errors from reading the YAML ---

#[test]
fn a_syntax_error_is_reported_at_its_line_and_column() {
    let text = "\
name: x
apiServers:
  - name: a
   bad: 1
";
    assert_problem(text, 4, 4, "", "while parsing a block collection, did not find expected '-' indicator");
    let d = problem("name: x\napiServers: [{name: a}\nnodes: []\n");
    assert_eq!((d.line, d.column), (3, 6), "{}", d.message);
}

#[test]
fn an_unknown_field_is_reported_at_its_key_with_the_allowed_fields() {
    let text = "\
name: x
apiServers:
  - name: a
    watchCach:
      lag: 5ms
";
    assert_problem(
        text,
        4,
        5,
        "apiServers[0].watchCach",
        "unknown field `watchCach`, expected one of name, watchCache, consistentReadsFromCache, partitions, requestTimeout",
    );
}

/// The Kubernetes API reference gives each kind its top-level fields: most
/// keep their content in `spec` and `status`, some (ConfigMap's `data`,
/// Event's `involvedObject`) in fields of their own. A misspelt `spec` of a
/// built-in kind is reported where it is; a ConfigMap's `data` is kept.
#[test]
fn a_built_in_kind_has_its_own_top_level_fields_and_no_others() {
    let text = "\
name: x
apiServers: [{name: a}]
objects:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: default}
    data: {mode: fast}
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {name: web, namespace: default}
    sepc: {replicas: 1}
";
    assert_problem(
        text,
        11,
        5,
        "objects[1].sepc",
        "unknown field `sepc`: besides apiVersion, kind and metadata, a ReplicaSet has spec and status",
    );
    let text = text.split("  - apiVersion: apps/v1").next().unwrap();
    let scenario = parse("test.yaml", text).expect("a ConfigMap with data parses");
    assert_eq!(scenario.objects[0].other["data"], serde_json::json!({"mode": "fast"}));
    assert_eq!(
        serde_json::to_value(&scenario.objects[0]).unwrap()["data"]["mode"],
        "fast",
        "the field is written back where it was read"
    );
}

#[test]
fn an_unknown_field_in_a_step_lists_the_step_keys() {
    let text = "\
name: x
apiServers: [{name: a}]
script:
  - at: 1s
    reboot: {component: c}
";
    let d = problem(text);
    assert_eq!((d.line, d.column, d.path.as_str()), (5, 5, "script[0].reboot"));
    assert!(d.message.starts_with("unknown field `reboot`, expected one of at, via, create,"), "{}", d.message);
}

#[test]
fn a_negative_lag_is_rejected_at_its_value_with_or_without_a_unit() {
    for lag in ["-5ms", "-5"] {
        let text = format!("name: x\napiServers:\n  - name: a\n    watchCache: {{lag: {lag}}}\n");
        let d = problem(&text);
        assert_eq!((d.line, d.column, d.path.as_str()), (4, 23, "apiServers[0].watchCache.lag"));
        assert!(d.message.contains("is negative"), "{}", d.message);
    }
}

#[test]
fn a_value_of_the_wrong_type_says_what_was_expected() {
    let text = "\
name: x
apiServers: [{name: a}]
nodes:
  - name: n
    pods: -3
";
    assert_problem(text, 5, 11, "nodes[0].pods", "expected a whole number, zero or more");
    let d = problem("name: x\napiServers: [{name: a, consistentReadsFromCache: maybe}]\n");
    assert_eq!((d.line, d.column, d.message.as_str()), (2, 50, "expected true or false"));
}

#[test]
fn an_unknown_list_mode_or_check_lists_the_known_ones() {
    let text = "\
name: x
apiServers: [{name: a}]
components:
  - {name: c, controller: k, apiServer: a, listMode: stale}
checks:
  enabled: [podIdentity, split]
";
    // The deserializer stops at the first problem.
    assert_problem(
        text,
        4,
        54,
        "components[0].listMode",
        "unknown variant `stale`, expected one of any, quorum, consistent",
    );
    let d = problem("name: x\napiServers: [{name: a}]\nchecks:\n  enabled: [podIdentity, split]\n");
    assert_eq!((d.line, d.column), (4, 26));
    assert_eq!(
        d.message,
        "unknown variant `split`, expected one of podIdentity, statefulSetOrdinals, timeTravel, replicaCount, convergence, stuckDeleting, deletedLiveDependent, orphanedDependent, dependentOfDeletedOwner, lostWork, idleWithWorkLeft, historyPolicy, droppedMember"
    );
}

/// The history-policy check and its rules come together, and a rule names
/// its fields by dotted paths.
#[test]
fn history_policies_need_their_check_and_dotted_paths() {
    let base = "name: x\napiServers: [{name: a}]\n";
    let d = problem(&format!("{base}checks:\n  enabled: [historyPolicy]\n"));
    assert!(d.message.contains("there are none"), "{}", d.message);
    let rule = "  policies:\n    - kind: RabbitmqCluster\n      field: spec..replicas\n      rule: neverDecreases\n      \
                drives: { kind: StatefulSet, name: \"{name}-server\", field: spec.replicas }\n";
    let d = problem(&format!("{base}checks:\n  enabled: [historyPolicy]\n{rule}"));
    assert_eq!(d.path, "checks.policies[0].field");
    assert!(d.message.contains("not a dotted path"), "{}", d.message);
    let d = problem(&format!("{base}checks:\n  enabled: [timeTravel]\n{}", rule.replace("spec..", "spec.")));
    assert_eq!(d.path, "checks.policies");
    let ok = format!("{base}checks:\n  enabled: [historyPolicy]\n{}", rule.replace("spec..", "spec."));
    let scenario = recon_scenario::parse("x.yaml", &ok).expect("a well-formed policy parses");
    assert_eq!(scenario.checks.policies[0].drives.name_for("rabbit"), "rabbit-server");
    assert_eq!(scenario.checks.policies[0].rule, recon_scenario::PolicyRule::NeverDecreases);
}

/// The dropped-member check and its aggregates come together; an
/// aggregate names its list by a dotted path and its member by at least
/// one templated field.
#[test]
fn aggregates_need_their_check_a_dotted_path_and_a_member() {
    let base = "name: x\napiServers: [{name: a}]\n";
    let d = problem(&format!("{base}checks:\n  enabled: [droppedMember]\n"));
    assert!(d.message.contains("there are none"), "{}", d.message);
    let aggregate = "  aggregates:\n    - kind: HdfsCluster\n      into: { kind: ClusterRoleBinding, name: nodes, field: \
                     subjects. }\n      member: { name: \"{name}-sa\", namespace: \"{namespace}\" }\n";
    let d = problem(&format!("{base}checks:\n  enabled: [droppedMember]\n{aggregate}"));
    assert_eq!(d.path, "checks.aggregates[0].into.field");
    let fixed = aggregate.replace("subjects.", "subjects");
    let d = problem(&format!("{base}checks:\n  enabled: [timeTravel]\n{fixed}"));
    assert_eq!(d.path, "checks.aggregates");
    let d = problem(&format!(
        "{base}checks:\n  enabled: [droppedMember]\n{}",
        fixed.replace("{ name: \"{name}-sa\", namespace: \"{namespace}\" }", "{}")
    ));
    assert_eq!(d.path, "checks.aggregates[0].member");
    let scenario = recon_scenario::parse("x.yaml", &format!("{base}checks:\n  enabled: [droppedMember]\n{fixed}"))
        .expect("a well-formed aggregate parses");
    let member = scenario.checks.aggregates[0].member_for("default", "alpha");
    assert_eq!(member["name"], "alpha-sa");
    assert_eq!(member["namespace"], "default");
}

#[test]
fn a_missing_required_field_is_reported_at_its_mapping() {
    assert_problem("name: x\napiServers:\n  - watchCache: {}\n", 3, 5, "apiServers[0]", "missing field `name`");
    assert_problem("apiServers: [{name: a}]\n", 1, 1, "", "missing field `name`");
    let object = "name: x\napiServers: [{name: a}]\nobjects:\n  - kind: Pod\n    metadata: {name: p}\n";
    assert_problem(object, 4, 5, "objects[0]", "missing field `apiVersion`");
}

#[test]
fn a_step_needs_exactly_one_action_and_via_only_on_requests() {
    let two =
        "name: x\napiServers: [{name: a}]\nscript:\n  - at: 1s\n    crash: {component: c}\n    cordon: {node: n}\n";
    assert_problem(two, 4, 5, "script[0]", "a script step takes one action, found cordon and crash");
    let none = "name: x\napiServers: [{name: a}]\nscript:\n  - at: 1s\n";
    assert!(problem(none).message.starts_with("a script step needs one action: create, apply,"));
    let via = "name: x\napiServers: [{name: a}]\nscript:\n  - {at: 1s, via: a, compact: {}}\n";
    assert_problem(via, 4, 5, "script[0]", "`via` only applies to create, apply, delete and scale steps");
}

#[test]
fn a_duplicate_key_is_reported_at_the_second_one() {
    let d = problem("name: x\napiServers: [{name: a}]\nname: y\n");
    assert_eq!((d.line, d.column), (3, 1));
    assert!(d.message.contains("duplicate mapping key `name`"), "{}", d.message);
}

#[test]
fn an_empty_file_is_reported_at_its_start() {
    let d = problem("");
    assert_eq!((d.line, d.column), (1, 1));
    assert!(!d.message.is_empty());
}

// --- validation ---

#[test]
fn a_scenario_without_api_servers_is_reported_at_the_list() {
    assert_problem("name: x\napiServers: []\n", 2, 13, "apiServers", "a scenario needs at least one API server");
}

#[test]
fn duplicate_names_are_reported_at_the_second_definition() {
    let text = "\
name: x
apiServers:
  - name: a
  - name: a
nodes: [{name: n}, {name: n}]
components:
  - {name: c, controller: k, apiServer: a}
  - {name: c, controller: k, apiServer: a}
";
    assert_eq!(
        problems(text),
        [
            (4, 11, "API server `a` is defined twice (first at line 3)".to_owned()),
            (5, 27, "node `n` is defined twice (first at line 5)".to_owned()),
            (8, 12, "component `c` is defined twice (first at line 7)".to_owned()),
        ]
    );
}

#[test]
fn an_empty_name_is_reported() {
    let text = "name: x\napiServers: [{name: a}]\nnodes: [{name: ''}]\n";
    assert_problem(text, 3, 16, "nodes[0].name", "the node has an empty name");
}

#[test]
fn unknown_api_server_is_reported_at_its_line_and_column() {
    let text = "\
name: x
apiServers: [{name: a}, {name: b}]
components:
  - name: c
    controller: k
    apiServer: z
";
    assert_problem(text, 6, 16, "components[0].apiServer", "unknown API server `z` (defined: a, b)");
}

#[test]
fn unknown_failover_server_and_node_of_a_component_are_reported() {
    let text = "\
name: x
apiServers: [{name: a}]
components:
  - name: c
    controller: kubelet
    node: node-9
    apiServer: a
    failover: [a, b]
";
    assert_eq!(
        problems(text),
        [
            (6, 11, "unknown node `node-9` (no node is defined)".to_owned()),
            (8, 19, "unknown API server `b` (defined: a)".to_owned()),
        ]
    );
}

#[test]
fn a_latency_range_with_min_above_max_is_reported_at_max() {
    let text = "name: x\nnetwork:\n  latency: {min: 5ms, max: 1ms}\napiServers: [{name: a}]\n";
    assert_problem(text, 3, 28, "network.latency.max", "latency max 1ms is below min 5ms");
}

#[test]
fn zero_latency_is_reported_because_time_must_pass() {
    let text = "name: x\nnetwork:\n  latency: {min: 0ms, max: 1ms}\napiServers: [{name: a}]\n";
    assert_problem(text, 3, 18, "network.latency.min", "latency min must be at least 1ms");
}

#[test]
fn a_partition_that_ends_before_it_starts_is_reported_at_until() {
    let text = "\
name: x
apiServers:
  - name: a
    partitions:
      - from: 5s
        until: 5s
      - from: 6s
";
    assert_problem(
        text,
        6,
        16,
        "apiServers[0].partitions[0].until",
        "partition ends at 5s, which is not after it starts at 5s",
    );
}

#[test]
fn time_going_backwards_is_reported_at_the_later_step() {
    let text = "\
name: x
apiServers: [{name: a}]
script:
  - {at: 5s, compact: {}}
  - {at: 5s, compact: {}}
  - {at: 2s, compact: {}}
  - {at: 6s, compact: {}}
";
    assert_problem(text, 6, 10, "script[2].at", "time goes backwards: step at 2s comes after a step at 5s");
}

#[test]
fn a_step_after_the_end_of_the_run_is_reported() {
    let text = "\
name: x
duration: 30s
apiServers: [{name: a}]
script:
  - {at: 30s, compact: {}}
  - {at: 31s, compact: {}}
";
    assert_problem(text, 6, 10, "script[1].at", "step at 31s is after the end of the run at 30s");
}

#[test]
fn script_steps_must_name_existing_components_nodes_and_api_servers() {
    let text = "\
name: x
apiServers: [{name: a}]
nodes: [{name: n}]
components: [{name: c, controller: k, apiServer: a}]
script:
  - {at: 1s, crash: {component: x1}}
  - {at: 1s, restart: {component: x2, apiServer: b}}
  - {at: 1s, disconnect: {component: x3}}
  - {at: 1s, cordon: {node: m1}}
  - {at: 1s, uncordon: {node: m2}}
  - {at: 1s, delete: {kind: Pod, name: p}, via: b}
  - {at: 1s, restart: {component: c, apiServer: a}}
  - {at: 1s, uncordon: {node: n}}
";
    assert_eq!(
        problems(text),
        [
            (6, 33, "unknown component `x1` (defined: c)".to_owned()),
            (7, 35, "unknown component `x2` (defined: c)".to_owned()),
            (7, 50, "unknown API server `b` (defined: a)".to_owned()),
            (8, 38, "unknown component `x3` (defined: c)".to_owned()),
            (9, 29, "unknown node `m1` (defined: n)".to_owned()),
            (10, 31, "unknown node `m2` (defined: n)".to_owned()),
            (11, 49, "unknown API server `b` (defined: a)".to_owned()),
        ]
    );
}

#[test]
fn an_object_needs_api_version_kind_and_a_name() {
    let text = "\
name: x
apiServers: [{name: a}]
objects:
  - apiVersion: ''
    kind: ''
    metadata: {labels: {a: b}}
  - apiVersion: v1
    kind: Pod
    metadata: {generateName: web-}
  - apiVersion: v1
    kind: Pod
";
    assert_eq!(
        problems(text),
        [
            (4, 17, "the object has an empty apiVersion".to_owned()),
            (5, 11, "the object has an empty kind".to_owned()),
            (6, 15, "the object needs metadata.name or metadata.generateName".to_owned()),
            (10, 5, "the object needs metadata.name or metadata.generateName".to_owned()),
        ]
    );
}

#[test]
fn duplicate_initial_objects_are_reported_after_namespaces_default() {
    let text = "\
name: x
apiServers: [{name: a}]
objects:
  - {apiVersion: v1, kind: Pod, metadata: {name: p}}
  - {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: other}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: p}}
  - {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: default}}
";
    assert_problem(text, 7, 50, "objects[3].metadata.name", "Pod default/p is defined twice (first at line 4)");
}

#[test]
fn a_node_object_must_not_repeat_a_scenario_node() {
    let text = "\
name: x
apiServers: [{name: a}]
nodes:
  - name: node-1
objects:
  - {apiVersion: v1, kind: Node, metadata: {name: node-1}}
";
    assert_problem(text, 6, 51, "objects[0].metadata.name", "Node node-1 is defined twice (first at line 4)");
}

#[test]
fn a_cluster_scoped_object_must_not_have_a_namespace() {
    let text = "name: x\napiServers: [{name: a}]\nobjects:\n  - {apiVersion: v1, kind: Node, metadata: {name: n, namespace: ns}}\n";
    assert_problem(
        text,
        4,
        65,
        "objects[0].metadata.namespace",
        "Node objects are cluster-scoped and have no namespace",
    );
}

#[test]
fn objects_in_create_and_apply_steps_are_checked_and_apply_needs_a_name() {
    let text = "\
name: x
apiServers: [{name: a}]
script:
  - at: 1s
    create: {apiVersion: v1, kind: Pod, metadata: {generateName: p-}}
  - at: 2s
    apply: {apiVersion: v1, kind: Pod, metadata: {generateName: p-}}
  - at: 3s
    create: {apiVersion: v1, kind: '', metadata: {name: q}}
";
    assert_eq!(
        problems(text),
        [
            (7, 50, "apply needs metadata.name (generateName only works with create)".to_owned()),
            (9, 36, "the object has an empty kind".to_owned()),
        ]
    );
}

#[test]
fn an_expected_violation_needs_its_check_enabled() {
    let text = "\
name: x
apiServers: [{name: a}]
checks: {enabled: [podIdentity]}
expect:
  violations: [podIdentity, timeTravel]
";
    assert_problem(
        text,
        5,
        29,
        "expect.violations[1]",
        "expects a time travel violation, but the time travel check is not in checks.enabled",
    );
}

#[test]
fn every_problem_is_reported_in_file_order_one_line_each() {
    let text = "\
name: x
apiServers: [{name: a}, {name: a}]
components: [{name: c, controller: k, apiServer: b}]
script:
  - {at: 2s, crash: {component: d}}
  - {at: 1s, compact: {}}
";
    let error = parse("many.yaml", text).unwrap_err();
    assert_eq!(
        error.to_string(),
        "many.yaml:2:32: API server `a` is defined twice (first at line 2)\n\
         many.yaml:3:50: unknown API server `b` (defined: a)\n\
         many.yaml:5:33: unknown component `d` (defined: c)\n\
         many.yaml:6:10: time goes backwards: step at 1s comes after a step at 2s"
    );
}

// --- normalisation ---

#[test]
fn namespaced_objects_without_a_namespace_get_default() {
    let text = "\
name: x
apiServers: [{name: a}]
objects:
  - {apiVersion: v1, kind: Pod, metadata: {name: p}}
  - {apiVersion: v1, kind: Pod, metadata: {name: q, namespace: prod}}
  - {apiVersion: v1, kind: Node, metadata: {name: n}}
script:
  - {at: 1s, create: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}}
  - {at: 1s, apply: {apiVersion: v1, kind: Namespace, metadata: {name: prod}}}
  - {at: 1s, delete: {kind: Pod, name: p}}
  - {at: 1s, scale: {kind: StatefulSet, name: web, replicas: 1}}
  - {at: 1s, delete: {kind: Node, name: n}}
";
    let s = parse("ns.yaml", text).unwrap();
    let namespaces: Vec<&str> = s.objects.iter().map(|o| o.metadata.namespace.as_str()).collect();
    assert_eq!(namespaces, ["default", "prod", ""]);
    let steps: Vec<&str> = s
        .script
        .iter()
        .map(|step| match &step.action {
            StepAction::Create { object, .. } | StepAction::Apply { object, .. } => object.metadata.namespace.as_str(),
            StepAction::Delete { target, .. } | StepAction::Scale { target, .. } => target.namespace.as_str(),
            other => panic!("unexpected step {other:?}"),
        })
        .collect();
    assert_eq!(steps, ["default", "", "default", "default", ""]);
}

// --- writing back ---

#[test]
fn a_rich_scenario_survives_a_round_trip_through_yaml() {
    let s = parse("rich.yaml", &rich()).unwrap();
    // The fixture is read as written (so the round trip below is not vacuous).
    assert_eq!(s.api_servers.len(), 3);
    assert_eq!(s.network.latency.max, Millis(1_500));
    assert_eq!(s.nodes[0].labels["ssd"], "true");
    assert_eq!(s.components[0].params["mode"], serde_json::json!("yes"));
    assert_eq!(s.components[0].params["nested"], serde_json::json!({"list": [1, "2", null, true]}));
    let args = &s.objects[0].spec["template"]["spec"]["containers"][0]["args"];
    assert_eq!(*args, serde_json::json!(["--port", "80", "~", "null", "0755", "1e3", "off", ""]));
    assert_eq!(s.objects[0].status["big"], serde_json::json!(u64::MAX));
    assert_eq!(s.objects[0].status["ratio"], serde_json::json!(1.0));
    assert_eq!(s.objects[0].metadata.annotations["note"], "multi\nline");
    assert_eq!(s.script.len(), 12);
    assert!(matches!(&s.script[7].action, StepAction::Restart { api_server: None, .. }));
    assert_eq!(s.expect.violations, [Check::PodIdentity]);

    let written = to_yaml(&s);
    assert_eq!(parse("written.yaml", &written), Ok(s), "written:\n{written}");
}

#[test]
fn writing_is_stable_after_one_round_trip() {
    let once = to_yaml(&parse("rich.yaml", &rich()).unwrap());
    let twice = to_yaml(&parse("once.yaml", &once).unwrap());
    assert_eq!(once, twice);
}

#[test]
fn the_readme_script_example_parses_with_one_step_per_action() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let script = readme
        .split("```yaml\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap())
        .find(|block| block.starts_with("script:"))
        .expect("the README has a script example");
    let header = "\
name: readme
apiServers: [{name: apiserver-1}, {name: apiserver-2}]
nodes: [{name: node-1}]
components:
  - {name: scheduler, controller: scheduler, apiServer: apiserver-1}
  - {name: kubelet-node-1, controller: kubelet, node: node-1, apiServer: apiserver-1}
";
    let s = parse("README.md", &format!("{header}{script}")).unwrap();
    let actions: Vec<&str> = s
        .script
        .iter()
        .map(|step| match step.action {
            StepAction::Create { .. } => "create",
            StepAction::Apply { .. } => "apply",
            StepAction::Delete { .. } => "delete",
            StepAction::Scale { .. } => "scale",
            StepAction::Cordon { .. } => "cordon",
            StepAction::Uncordon { .. } => "uncordon",
            StepAction::Crash { .. } => "crash",
            StepAction::Restart { .. } => "restart",
            StepAction::Disconnect { .. } => "disconnect",
            StepAction::Compact { .. } => "compact",
        })
        .collect();
    let every =
        ["create", "apply", "delete", "scale", "cordon", "uncordon", "crash", "restart", "disconnect", "compact"];
    assert_eq!(actions, every);
}

// --- source map ---

#[test]
fn the_source_map_locates_paths_and_falls_back_to_the_nearest_ancestor() {
    let text = "\
name: x
apiServers: [{name: a}]
components:
  - name: c
    controller: nope
    apiServer: a
";
    let (s, source) = parse_with_source("s.yaml", text).unwrap();
    assert_eq!(s.components[0].controller, "nope");
    assert_eq!(source.locate("components[0].controller"), Some((5, 17)));
    assert_eq!(source.locate("components[0].params.x"), Some((4, 5)));
    assert_eq!(source.locate("components[7]"), Some((4, 3)));
    assert_eq!(source.locate(""), Some((1, 1)));
    let error = ScenarioError::at("s.yaml", &source, "components[0].controller", "unknown controller `nope`");
    assert_eq!(error.to_string(), "s.yaml:5:17: unknown controller `nope`");
    assert_eq!(error.diagnostics[0].path, "components[0].controller");
}

#[test]
fn a_parsed_scenario_is_plain_data() {
    // Scenario compares and clones without its source map.
    fn plain<T: Clone + PartialEq + std::fmt::Debug + serde::Serialize>() {}
    plain::<Scenario>();
}

// --- robustness ---

#[test]
fn a_deeply_nested_spec_is_read_without_overflowing_the_stack() {
    // Reading positions through `Spanned` overflowed a test thread's stack
    // at this depth; the event walk behind the source map does not recurse.
    let depth = 58;
    let text = format!(
        "name: x\napiServers: [{{name: a}}]\nobjects:\n  - {{apiVersion: v1, kind: Pod, metadata: {{name: p}}, spec: {}1{}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let (s, source) = parse_with_source("deep.yaml", &text).unwrap();
    let mut value: &serde_json::Value = &s.objects[0].spec;
    for _ in 0..depth {
        value = &value[0];
    }
    assert_eq!(*value, serde_json::json!(1));
    let innermost = format!("objects[0].spec{}", "[0]".repeat(depth));
    assert_eq!(source.locate(&innermost), Some((4, 60 + depth)));
}

#[test]
fn garbage_and_truncated_input_never_panic() {
    let mut inputs: Vec<String> = [
        "",
        "\0\u{1}\u{7f}binary",
        "{",
        "[[[[",
        "- a\n- b\n",
        "name: x\napiServers: 5\n",
        "name: !!binary aGVsbG8=\napiServers: []\n",
        "a: &a [*a]\n",
        "? [complex, key]\n: value\n",
        "name: x\napiServers: [{name: a}]\n---\nname: y\n",
        "name: x\napiServers: [{name: a}]\nscript: [{at: 99999999999999999999999s, compact: {}}]\n",
        "name: x\napiServers: [{name: a}]\nduration: 1e400\n",
        "\u{feff}name: x\napiServers: [{name: a}]\n",
    ]
    .map(String::from)
    .to_vec();
    inputs.push("[".repeat(100_000));
    inputs.push((0..2_000).map(|i| format!("{}a:\n", " ".repeat(i))).collect());
    inputs.push(format!(
        "a: &a [x, x]\n{}",
        (1..30)
            .map(|i| format!(
                "b{i}: &b{i} [*{}, *{}]\n",
                if i == 1 { "a".into() } else { format!("b{}", i - 1) },
                if i == 1 { "a".into() } else { format!("b{}", i - 1) }
            ))
            .collect::<String>()
    ));
    let rich = rich();
    // Every fifth prefix: cut inside keys, values, quotes and flow collections.
    inputs.extend(rich.char_indices().step_by(5).map(|(i, _)| rich[..i].to_owned()));
    // Deterministic pseudo-random bytes, biased towards YAML punctuation.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..500 {
        let text: String = (0..64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b"ab:- \n[]{},&*!|>'\"#?%@`\t0.9"[(x % 27) as usize] as char
            })
            .collect();
        inputs.push(text);
    }
    for text in &inputs {
        if let Err(error) = parse("garbage.yaml", text) {
            assert!(!error.diagnostics.is_empty());
            assert!(error.diagnostics.iter().all(|d| d.line >= 1 && d.column >= 1 && !d.message.is_empty()));
        }
    }
}

// --- leader election and late starts ---

#[test]
fn leader_election_gets_client_go_like_defaults_scaled_to_a_run() {
    let s = parse(
        "t.yaml",
        "name: x\napiServers: [{name: a}]\ncomponents:\n  - {name: c, controller: replicaset, apiServer: a, leaderElection: {lease: rs}, startAt: 2s}\n",
    )
    .unwrap();
    let c = &s.components[0];
    let e = c.leader_election.as_ref().expect("leaderElection was given");
    assert_eq!((e.lease.as_str(), e.namespace.as_str()), ("rs", "kube-system"));
    assert_eq!((e.lease_duration, e.renew_deadline, e.retry_period), (Millis(3_000), Millis(2_000), Millis(500)));
    assert_eq!(c.start_at, Millis(2_000));
}

#[test]
fn leader_election_timings_out_of_order_are_reported_where_they_are() {
    let text = "\
name: x
apiServers: [{name: a}]
components:
  - name: c
    controller: replicaset
    apiServer: a
    leaderElection:
      lease: rs
      leaseDuration: 1s
      renewDeadline: 2s
";
    assert_problem(
        text,
        9,
        22,
        "components[0].leaderElection.leaseDuration",
        "leaseDuration 1s must be longer than renewDeadline 2s",
    );
}

#[test]
fn a_component_starting_after_the_run_ends_is_rejected() {
    let d = problem(
        "name: x\nduration: 5s\napiServers: [{name: a}]\ncomponents:\n  - {name: c, controller: replicaset, apiServer: a, startAt: 6s}\n",
    );
    assert_eq!(d.path, "components[0].startAt");
    assert_eq!(d.message, "starts at 6s, after the end of the run at 5s");
}

// --- plugin limits ---

#[test]
fn plugin_limits_are_unset_by_default_and_read_and_written_back_when_set() {
    let base =
        "name: x\napiServers: [{name: a}]\nnodes: [{name: n}]\ncomponents: [{name: c, controller: k, apiServer: a}]\n";
    let plain = parse("x.yaml", base).unwrap();
    assert_eq!(plain.limits.plugins, Default::default());
    assert!(!to_yaml(&plain).contains("plugins"), "unset limits are not written");
    let text = format!("{base}limits:\n  plugins:\n    fuelPerCall: 5000\n    maxActionsPerCall: 3\n");
    let set = parse("x.yaml", &text).unwrap();
    assert_eq!(set.limits.plugins.fuel_per_call, Some(5_000));
    assert_eq!(set.limits.plugins.max_actions_per_call, Some(3));
    assert_eq!(set.limits.plugins.memory_bytes, None);
    assert_eq!(parse("again.yaml", &to_yaml(&set)).unwrap(), set);
}

#[test]
fn an_unknown_plugin_limit_lists_the_known_ones() {
    let text = "name: x\napiServers: [{name: a}]\nlimits:\n  plugins:\n    fuel: 5\n";
    assert_problem(
        text,
        5,
        5,
        "limits.plugins.fuel",
        "unknown field `fuel`, expected one of fuelPerCall, fuelPerVirtualSecond, memoryBytes, maxCallDepth, maxOutputBytes, \
         maxActionsPerCall, maxModuleBytes, maxFunctions",
    );
}

// Issue 20: a share link must not be able to ask a visitor's tab for
// minutes of real time per virtual second.
#[test]
fn a_fuel_per_virtual_second_above_its_ceiling_is_reported_at_its_value() {
    let text = "name: x\napiServers: [{name: a}]\nlimits:\n  plugins:\n    fuelPerVirtualSecond: 100000000001\n";
    assert_problem(
        text,
        5,
        27,
        "limits.plugins.fuelPerVirtualSecond",
        "fuelPerVirtualSecond 100000000001 is above the most a scenario may set, 100000000000",
    );
    let at_most = "name: x\napiServers: [{name: a}]\nlimits:\n  plugins:\n    fuelPerVirtualSecond: 100000000000\n";
    assert_eq!(parse("x.yaml", at_most).unwrap().limits.plugins.fuel_per_virtual_second, Some(100_000_000_000));
}

#[test]
fn a_plugin_limit_above_its_ceiling_is_reported_at_its_value() {
    let text = "name: x\napiServers: [{name: a}]\nlimits:\n  plugins:\n    memoryBytes: 4294967296\n";
    assert_problem(
        text,
        5,
        18,
        "limits.plugins.memoryBytes",
        "memoryBytes 4294967296 is above the most a scenario may set, 1073741824",
    );
}

#[test]
fn a_trace_limit_above_its_ceiling_is_reported_at_its_value() {
    // Issue 20: a share link must not be able to ask the tab that opens it
    // for an unbounded trace.
    let text = "name: x\napiServers: [{name: a}]\nlimits:\n  maxTraceEntries: 900000000\n";
    assert_problem(
        text,
        4,
        20,
        "limits.maxTraceEntries",
        "maxTraceEntries 900000000 is above the most a scenario may set, 20000000",
    );
    let at_most = "name: x\napiServers: [{name: a}]\nlimits:\n  maxTraceEntries: 20000000\n";
    assert_eq!(parse("x.yaml", at_most).unwrap().limits.max_trace_entries, 20_000_000);
}

// `kubectl delete --cascade=background|foreground|orphan`: the script's
// delete step takes the same words and sends them as the delete's
// propagationPolicy; a word kubectl would not take is an error at its
// line and column.
#[test]
fn a_delete_step_takes_kubectls_cascade_and_refuses_other_words_at_their_place() {
    let text = |cascade: &str| {
        format!(
            "name: x\napiServers: [{{name: a}}]\nscript:\n  - {{at: 1s, delete: {{kind: ReplicaSet, name: web{cascade}}}}}\n"
        )
    };
    let s = parse("cascade.yaml", &text(", cascade: foreground")).unwrap();
    let StepAction::Delete { cascade, .. } = &s.script[0].action else { panic!("a delete step") };
    assert_eq!(*cascade, Some(recon_abi::PropagationPolicy::Foreground));
    assert_eq!(parse("again.yaml", &to_yaml(&s)).unwrap(), s, "it survives a round trip");
    let plain = parse("plain.yaml", &text("")).unwrap();
    assert!(matches!(plain.script[0].action, StepAction::Delete { cascade: None, .. }));
    let d = problem(&text(", cascade: sideways"));
    assert_eq!((d.line, d.column, d.path.as_str()), (4, 61, "script[0].delete.cascade"), "at the word: {d:?}");
    assert_eq!(d.message, "unknown variant `sideways`, expected one of background, foreground, orphan");
}
