//! The `recon` binary as a user runs it: output, exit status, files written.

// The same scratch directories as recon-audit's tests.
#[path = "../../audit/tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use support::Scratch;

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name)
}

fn recon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recon")).args(args).output().expect("recon runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A file in the test's own directory, with these contents.
fn write_file(scratch: &Scratch, name: &str, contents: &str) -> PathBuf {
    let path = scratch.path().join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn violation_exits_1_and_explains_the_stale_list() {
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("[pod identity] pod default/web-0 runs on two nodes at once"), "{text}");
    assert!(text.contains("answers from its watch cache"), "{text}");
    assert!(text.contains("apiserver-2 loses its connection to the store"), "{text}");
    assert!(text.contains("Outcome matches the scenario's expectation."), "{text}");
}

#[test]
fn fixed_variant_exits_0_and_reports_the_unavailability() {
    let out = recon(&["run", scenario("pod-safety-59848-quorum.yaml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("No safety property broke."), "{text}");
    assert!(text.contains("kubelet-node-1 from t="), "{text}");
    assert!(text.contains("cannot reach the store"), "{text}");
}

#[test]
fn trace_file_is_the_stable_json_whose_hash_is_printed() {
    let scratch = Scratch::of_this_test();
    let out_path = write_file(&scratch, "trace.json", "");
    let out =
        recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--trace", out_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let json = std::fs::read_to_string(&out_path).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(value["scenario"], "pod-safety-59848");
    assert!(value["entries"].as_array().is_some_and(|e| e.len() > 50));
    // The hash printed is the file's (FNV-1a of its bytes).
    let fnv1a = recon_trace::fnv1a(json.as_bytes());
    assert!(stdout(&out).contains(&format!("trace     {fnv1a:016x}\n")), "{}", stdout(&out));
    // Same run, same bytes.
    let again = write_file(&scratch, "trace2.json", "");
    recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--trace", again.to_str().unwrap()]);
    assert_eq!(json, std::fs::read_to_string(&again).unwrap());
    // Written beside the file and renamed over it: nothing else is left.
    let mut left: Vec<String> = std::fs::read_dir(scratch.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["trace.json", "trace2.json"]);
}

/// A path that is a symbolic link (as `/dev/stdout` is) is written
/// through, in place: the link stays a link, and its target gets the
/// trace. Renaming a finished file over it would replace the link.
#[cfg(unix)]
#[test]
fn a_trace_written_to_a_symbolic_link_goes_to_its_target() {
    let scratch = Scratch::of_this_test();
    let target = write_file(&scratch, "target.json", "");
    let link = scratch.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--trace", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "still a link");
    let json = std::fs::read_to_string(&target).unwrap();
    assert!(json.starts_with(r#"{"scenario":"pod-safety-59848""#), "{}", &json[..json.len().min(80)]);
}

/// `--trace -` writes the trace to standard output, alone, so that a
/// reader (`| jq`) gets one JSON document; the summary, with the trace's
/// hash, goes to standard error.
#[test]
fn a_trace_to_standard_output_comes_alone_and_the_summary_goes_to_standard_error() {
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--trace", "-"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("standard output is the trace alone");
    assert_eq!(value["scenario"], "pod-safety-59848");
    let fnv1a = recon_trace::fnv1a(&out.stdout);
    assert!(stderr(&out).contains(&format!("trace     {fnv1a:016x}\n")), "{}", stderr(&out));
    assert!(stderr(&out).contains("[pod identity]"), "{}", stderr(&out));
}

/// `--trace /dev/stdout > FILE` leaves the file holding the trace alone,
/// and so does naming the file itself. Either path is the file standard
/// output writes to, so the trace is written through standard output:
/// opening the path again would truncate the file and start a second
/// handle at its start, and the summary would be written over the
/// trace's first bytes.
#[cfg(target_os = "linux")]
#[test]
fn a_trace_to_the_file_standard_output_writes_to_is_not_written_over() {
    let scratch = Scratch::of_this_test();
    let path = write_file(&scratch, "out.json", "");
    for trace_path in [std::path::Path::new("/dev/stdout"), &path] {
        let file = std::fs::File::create(&path).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_recon"))
            .args(["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--trace", trace_path.to_str().unwrap()])
            .stdout(file)
            .output()
            .expect("recon runs");
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let written = std::fs::read(&path).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&written)
            .unwrap_or_else(|e| panic!("--trace {}: the file is not the trace alone: {e}", trace_path.display()));
        assert_eq!(value["scenario"], "pod-safety-59848");
        let fnv1a = recon_trace::fnv1a(&written);
        assert!(stderr(&out).contains(&format!("trace     {fnv1a:016x}\n")), "{}", stderr(&out));
    }
}

/// A reader of `--trace -` that stops early (`| head -c 100`) ends the
/// trace quietly: no error, and the command exits with the run's own
/// status, as when it stops reading the summary. The trace here (about
/// 250 KB) is larger than a pipe holds, so its writing meets the closed
/// pipe.
#[cfg(unix)]
#[test]
fn a_trace_reader_that_stops_early_is_no_error() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_recon"))
        .args(["run", scenario("replicaset-flapping.yaml").to_str().unwrap(), "--trace", "-"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("recon runs");
    let mut first = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // Dropped: the read end closes, and the rest of the trace meets a broken pipe.
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with(br#"{"scenario":"replicaset-flapping""#));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!stderr(&out).contains("cannot write"), "{}", stderr(&out));
    assert!(stderr(&out).contains("scenario  replicaset-flapping"), "{}", stderr(&out));
}

/// A trace that cannot be written is an error (exit status 2) that names
/// the file, and whatever was at the path before is still there: the
/// trace is written beside it and renamed over it only once whole. Here
/// the place beside it is taken by a directory, so nothing can be
/// written.
#[test]
fn a_trace_that_cannot_be_written_leaves_the_file_as_it_was() {
    let scratch = Scratch::of_this_test();
    let out_path = write_file(&scratch, "trace.json", "the last run's trace");
    std::fs::create_dir(scratch.path().join("trace.json.partial")).unwrap();
    let out =
        recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--trace", out_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(&format!("cannot write the trace to {}: ", out_path.display())),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "the last run's trace");
}

#[test]
fn seed_override_changes_the_run_but_not_the_outcome() {
    let path = scenario("pod-safety-59848.yaml");
    let a = stdout(&recon(&["run", path.to_str().unwrap(), "--seed", "11"]));
    let b = stdout(&recon(&["run", path.to_str().unwrap(), "--seed", "12"]));
    let hash = |s: &str| s.lines().find(|l| l.starts_with("trace")).unwrap().to_string();
    assert_ne!(hash(&a), hash(&b));
    assert!(a.contains("seed      11") && b.contains("[pod identity]"));
}

#[test]
fn malformed_scenario_exits_2_with_file_line_and_column() {
    let scratch = Scratch::of_this_test();
    let path = write_file(&scratch, "bad.yaml", "name: x\napiServers:\n  - name: a\n    lag: 5ms\n");
    let out = recon(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&format!("{}:4:5:", path.display())), "{err}");
    assert!(err.contains("lag"), "{err}");
}

#[test]
fn unknown_controller_exits_2_pointing_at_the_name() {
    let yaml =
        "name: x\napiServers: [ { name: a } ]\ncomponents:\n  - name: c\n    controller: kubelett\n    apiServer: a\n";
    let scratch = Scratch::of_this_test();
    let path = write_file(&scratch, "unknown.yaml", yaml);
    let out = recon(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&format!("{}:5:17:", path.display())), "{err}");
    assert!(err.contains("\"kubelett\"") && err.contains("kubelet"), "{err}");
}

#[test]
fn missing_file_exits_2() {
    let out = recon(&["run", "does-not-exist.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read the scenario"));
}

#[test]
fn expect_flag_fails_when_the_outcome_differs() {
    let text = std::fs::read_to_string(scenario("pod-safety-59848-no-partition.yaml")).unwrap();
    let wrong = text.replace("  violations: []", "  violations: [podIdentity]");
    let scratch = Scratch::of_this_test();
    let path = write_file(&scratch, "wrong-expect.yaml", &wrong);
    assert_eq!(recon(&["run", path.to_str().unwrap()]).status.code(), Some(0));
    let out = recon(&["run", path.to_str().unwrap(), "--expect"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("Outcome differs from the scenario's expectation"));
}

/// A built plugin from `cargo xtask test` (which sets `RECON_PLUGIN_DIR`).
fn built_plugin(crate_name: &str) -> PathBuf {
    let dir = std::env::var_os("RECON_PLUGIN_DIR")
        .expect("RECON_PLUGIN_DIR is not set: run the tests with `cargo xtask test`, which builds the plugins first");
    PathBuf::from(dir).join(format!("{crate_name}.wasm"))
}

#[test]
fn check_plugin_prints_the_manifest_of_a_built_plugin() {
    let out = recon(&["check-plugin", built_plugin("recon_plugin_kubelet_fixed").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("valid plugin") && text.contains("controller  kubelet-fixed"), "{text}");
    assert!(text.contains("list mode   Quorum") && text.contains("node agent  yes"), "{text}");
    assert!(text.contains("fields spec.nodeName=node-1"), "{text}");
}

#[test]
fn check_plugin_rejects_a_file_that_is_not_wasm_in_one_line() {
    let scratch = Scratch::of_this_test();
    let path = write_file(&scratch, "notes.wasm", "these are not the bytes you are looking for");
    let out = recon(&["check-plugin", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("rejected: notes.wasm is not a WebAssembly module"), "{err}");
}

#[test]
fn plugin_flag_swaps_in_the_fixed_kubelet_and_the_violation_disappears() {
    let plugin = format!("kubelet-node-1={}", built_plugin("recon_plugin_kubelet_fixed").display());
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--plugin", &plugin]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("No safety property broke.") && text.contains("kubelet-node-1 from t="), "{text}");
}

#[test]
fn plugin_flag_refuses_a_node_agent_off_a_node_and_warns_of_a_controller_on_one_as_the_playground_does() {
    let kubelet = format!("scheduler={}", built_plugin("recon_plugin_kubelet_fixed").display());
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--plugin", &kubelet]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "recon_plugin_kubelet_fixed.wasm is a node agent (kubelet-fixed), but scheduler runs on no node"
        ),
        "{err}"
    );
    let scheduler = format!("kubelet-node-2={}", built_plugin("recon_plugin_scheduler").display());
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--plugin", &scheduler]);
    assert_ne!(out.status.code(), Some(2), "it runs");
    let err = stderr(&out);
    assert!(
        err.starts_with("warning: recon_plugin_scheduler.wasm (scheduler) is not a node agent")
            && err.contains("nothing starts or stops node-2's containers"),
        "{err}"
    );
}

/// #59848 with `limits.plugins` appended.
fn with_plugin_limits(scratch: &Scratch, name: &str, limits: &str) -> PathBuf {
    let text = std::fs::read_to_string(scenario("pod-safety-59848.yaml")).unwrap();
    assert!(!text.contains("\nlimits:"), "the scenario sets no limits of its own");
    write_file(scratch, name, &format!("{text}\nlimits:\n  plugins:\n{limits}"))
}

#[test]
fn a_plugin_runs_under_the_limits_the_scenario_sets() {
    let plugin = format!("kubelet-node-1={}", built_plugin("recon_plugin_kubelet_fixed").display());
    let scratch = Scratch::of_this_test();
    let starved = with_plugin_limits(&scratch, "starved.yaml", "    fuelPerCall: 1000\n");
    let out = recon(&["run", starved.to_str().unwrap(), "--plugin", &plugin]);
    let text = stdout(&out);
    // Its first calls (the allocation of its config, then `recon_init`)
    // cannot both fit in 1000 units: it crashes at once; the summary says so.
    let crashed = text.lines().find(|l| l.starts_with("- kubelet-node-1 ")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        crashed.contains("first at t=0.000s; last: recon_plugin_kubelet_fixed.wasm: recon_")
            && crashed.contains(" ran out of fuel (budget 1000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)"),
        "{text}{}",
        stderr(&out)
    );
    // The same plugin under the defaults, as in the test above, never runs out.
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--plugin", &plugin]);
    assert!(!stdout(&out).contains("ran out of fuel"), "{}", stdout(&out));
}

#[test]
fn check_plugin_applies_a_scenarios_limits_when_given_one() {
    let path = built_plugin("recon_plugin_kubelet_fixed");
    let scratch = Scratch::of_this_test();
    let small = with_plugin_limits(&scratch, "small.yaml", "    maxModuleBytes: 1000\n");
    let out = recon(&["check-plugin", path.to_str().unwrap(), "--scenario", small.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("bytes, above the limit of 1000 bytes for a plugin; the scenario's limits.plugins.maxModuleBytes raises it, up to 67108864"), "{err}");
    let bad =
        write_file(&scratch, "bad-limits.yaml", "name: x\napiServers: [{name: a}]\nlimits: {plugins: {fuel: 1}}\n");
    let out = recon(&["check-plugin", path.to_str().unwrap(), "--scenario", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad-limits.yaml:3:"), "{}", stderr(&out));
}

#[test]
fn plugin_flag_for_an_unknown_component_exits_2() {
    let out = recon(&["run", scenario("pod-safety-59848.yaml").to_str().unwrap(), "--plugin", "kubelet-node-9=x.wasm"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("the scenario has no component \"kubelet-node-9\"") && err.contains("kubelet-node-1"),
        "{err}"
    );
}

#[test]
fn explore_finds_shrinks_and_writes_a_scenario_that_replays() {
    let scratch = Scratch::of_this_test();
    let out_path = write_file(&scratch, "found.yaml", "");
    let workload = scenario("pod-safety-59848-workload.yaml");
    let out = recon(&["explore", workload.to_str().unwrap(), "--out", out_path.to_str().unwrap(), "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("First failing plan: #"), "{text}");
    assert!(text.contains("Shrunk to 2 fault(s)"), "{text}");
    assert!(text.contains("[pod identity] pod default/web-0 runs on two nodes at once"), "{text}");
    assert!(stderr(&out).contains("plans/s"), "progress on stderr: {}", stderr(&out));
    // The written scenario is ordinary and replays to the same violation.
    let replay = recon(&["run", out_path.to_str().unwrap(), "--expect"]);
    assert_eq!(replay.status.code(), Some(1));
    let replayed = stdout(&replay);
    assert!(replayed.contains("[pod identity]") && replayed.contains("Outcome matches"), "{replayed}");
    // Same input, same answer, with any number of threads.
    let again_path = write_file(&scratch, "found-again.yaml", "");
    let again = recon(&["explore", workload.to_str().unwrap(), "--out", again_path.to_str().unwrap(), "--jobs", "3"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), std::fs::read_to_string(&again_path).unwrap());
}

#[test]
fn explore_finds_nothing_against_the_fixed_kubelet_and_exits_0() {
    let text = std::fs::read_to_string(scenario("pod-safety-59848-workload.yaml")).unwrap();
    let fixed = text.replace("controller: kubelet\n", "controller: kubelet-fixed\n");
    assert_eq!(fixed.matches("kubelet-fixed").count(), 2);
    let scratch = Scratch::of_this_test();
    let path = write_file(&scratch, "fixed-workload.yaml", &fixed);
    let out = recon(&["explore", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("No violation found in"), "{}", stdout(&out));
}

#[test]
fn explore_shards_and_bad_arguments() {
    let workload = scenario("pod-safety-59848-workload.yaml");
    let out = recon(&["explore", workload.to_str().unwrap(), "--shard", "3/2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--shard"), "{}", stderr(&out));
    assert_eq!(recon(&["explore", "does-not-exist.yaml"]).status.code(), Some(2));
    // The budget counts plans of the whole list: of the first two, shard
    // 1/4 runs plan #1 only, and of the first one, nothing.
    let out = recon(&["explore", workload.to_str().unwrap(), "--shard", "1/4", "--budget", "2"]);
    assert!(stdout(&out).contains("running 1 (shard 1/4, budget 2)"), "{}", stdout(&out));
    let out = recon(&["explore", workload.to_str().unwrap(), "--shard", "1/4", "--budget", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("running 0 (shard 1/4, budget 1)"), "{}", stdout(&out));
}

#[test]
fn explore_with_the_fixed_kubelet_as_a_wasm_plugin_on_every_thread_finds_nothing() {
    let plugin = built_plugin("recon_plugin_kubelet_fixed");
    let workload = scenario("pod-safety-59848-workload.yaml");
    let (one, two) = (format!("kubelet-node-1={}", plugin.display()), format!("kubelet-node-2={}", plugin.display()));
    let out = recon(&["explore", workload.to_str().unwrap(), "--plugin", &one, "--plugin", &two, "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("No violation found in 131 plan(s)."), "{}", stdout(&out));
}

/// Runs `recon` with its standard output closed before it writes anything,
/// as `recon … | head -0` would: what it says on standard error, and its status.
fn with_reader_gone(args: &[&str]) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_recon"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("recon starts");
    // The reader leaves at once: every write recon makes meets a broken pipe.
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (child.wait().unwrap().code(), err)
}

#[test]
fn a_reader_that_stops_reading_ends_the_output_quietly_and_the_status_still_tells() {
    // Issue 19/20: `recon run … | head` panicked on the broken pipe.
    let (status, err) = with_reader_gone(&["run", "--timeline", scenario("pod-safety-59848.yaml").to_str().unwrap()]);
    assert_eq!(status, Some(1), "the run still reports its violation: {err}");
    assert!(err.is_empty(), "nothing on standard error: {err}");
    let (status, err) =
        with_reader_gone(&["check-plugin", built_plugin("recon_plugin_kubelet_fixed").to_str().unwrap()]);
    assert_eq!(status, Some(0), "{err}");
    assert!(err.is_empty(), "nothing on standard error: {err}");
}

#[test]
fn a_plugins_log_lines_are_printed_in_the_timeline_and_counted_in_the_summary() {
    // Issue 20: lines a plugin logged appeared nowhere.
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join("plugin-logs.yaml");
    std::fs::write(
        &path,
        "name: logs\nduration: 3s\napiServers: [ { name: a } ]\ncomponents:\n  - { name: logger, controller: replicaset, apiServer: a }\n",
    )
    .unwrap();
    let plugin = format!("logger={}", built_plugin("recon_test_plugin_logging").display());
    let out = recon(&["run", "--timeline", path.to_str().unwrap(), "--plugin", &plugin]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("logger                   logger logs: init logger"), "{text}");
    assert!(text.contains("logger logs: handle at "), "{text}");
    assert!(text.contains("Plugin logs (every line is in the timeline above):\n- logger: "), "{text}");
}

/// `--progress` shows the run on standard error, a line at a time off a
/// terminal (as here, where a CI log would keep every update), with a
/// line for the whole run whose count of entries is the summary's, then
/// one for hashing the trace the summary shows (seconds of work after a
/// run at Kubernetes' published limits); standard output and the exit
/// status are what they are without it. Without the flag, and with
/// standard error not a terminal, nothing is added.
#[test]
fn progress_goes_to_standard_error_and_changes_nothing_else() {
    let path = scenario("pod-safety-59848.yaml");
    let plain = recon(&["run", path.to_str().unwrap()]);
    let shown = recon(&["run", "--progress", path.to_str().unwrap()]);
    assert_eq!(stdout(&plain), stdout(&shown));
    assert_eq!(plain.status.code(), shown.status.code());
    assert_eq!(stderr(&plain), "", "no progress unless asked, off a terminal");
    let summary = stdout(&shown);
    let entries = summary
        .lines()
        .find_map(|l| l.strip_prefix("ran ")?.split(", ").nth(1)?.strip_suffix(" trace entries"))
        .unwrap_or_else(|| panic!("the summary counts the entries: {summary}"));
    let progress = stderr(&shown);
    // Off a terminal, each update is a line of its own: no carriage returns.
    assert!(!progress.contains('\r'), "{progress:?}");
    let mut lines = progress.lines().rev();
    let (hashed, ran) = (lines.next().unwrap_or_default(), lines.next().unwrap_or_default());
    assert!(ran.starts_with("ran t=30.000s of virtual time in "), "{progress:?}");
    assert!(ran.contains(&format!(": {entries} trace entries")), "{progress:?} against {entries}");
    assert!(hashed.starts_with("hashed the trace: ") && hashed.contains(" MB of JSON in "), "{progress:?}");
}

/// The trace hash `recon run` prints in its summary.
fn trace_hash(out: &Output) -> String {
    let text = stdout(out);
    let line = text.lines().find(|l| l.starts_with("trace ")).unwrap_or_else(|| panic!("no trace line: {text}"));
    line.trim_start_matches("trace").trim().to_owned()
}

/// `recon cluster` writes a cluster a controller author runs their own
/// controller in: the file and standard output hold the same scenario, it
/// runs with the built-in controllers, and with the ReplicaSet controller
/// swapped for its Wasm plugin the run is the same, trace for trace.
#[test]
fn cluster_writes_a_scenario_that_runs_a_controller_from_a_plugin_as_the_built_in() {
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join("cluster.yaml");
    let out = recon(&["cluster", "--nodes", "4", "--pods", "60", "--output", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "the scenario goes to the file alone");
    let printed = recon(&["cluster", "--nodes", "4", "--pods", "60"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), stdout(&printed));
    assert!(stdout(&printed).contains("name: scale-4-nodes-60-pods"), "{}", stdout(&printed));

    let native = recon(&["run", path.to_str().unwrap()]);
    assert_eq!(native.status.code(), Some(0), "{}", stdout(&native));
    assert!(stdout(&native).contains("No safety property broke."), "{}", stdout(&native));
    let plugin = format!("replicaset-controller={}", built_plugin("recon_plugin_replicaset").display());
    let wasm = recon(&["run", path.to_str().unwrap(), "--plugin", &plugin]);
    assert_eq!(wasm.status.code(), Some(0), "{}", stdout(&wasm));
    assert_eq!(trace_hash(&wasm), trace_hash(&native));
}

/// A node agent's author runs their plugin as every kubelet of a cluster
/// with one argument: a component name with a `*` gives the plugin to each
/// component it matches, and a later argument replaces it for the
/// components it names. A pattern matching nothing is refused, listing a
/// few of the components, and nothing runs.
#[test]
fn a_star_gives_a_plugin_to_every_kubelet_of_a_cluster_and_a_later_plugin_replaces_it_for_one() {
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join("cluster.yaml");
    let out = recon(&["cluster", "--nodes", "12", "--pods", "60", "--output", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let native = recon(&["run", path.to_str().unwrap()]);
    assert_eq!(native.status.code(), Some(0), "{}", stdout(&native));

    let kubelet = built_plugin("recon_plugin_kubelet");
    let every = format!("kubelet-*={}", kubelet.display());
    let wasm = recon(&["run", path.to_str().unwrap(), "--plugin", &every]);
    assert_eq!(wasm.status.code(), Some(0), "{}", stderr(&wasm));
    assert_eq!(trace_hash(&wasm), trace_hash(&native), "the twelve kubelets' plugin runs as the built-in");

    // kubelet-node-1, which the cluster restarts onto a lagging API
    // server, from the fixed kubelet's plugin instead (its first list after
    // a restart reads etcd): the run is that of the fixed kubelet among
    // built-in ones, which differs from the first.
    let fixed = format!("kubelet-node-1={}", built_plugin("recon_plugin_kubelet_fixed").display());
    let mixed = recon(&["run", path.to_str().unwrap(), "--plugin", &every, "--plugin", &fixed]);
    assert_eq!(mixed.status.code(), Some(0), "{}", stderr(&mixed));
    let fixed_alone = recon(&["run", path.to_str().unwrap(), "--plugin", &fixed]);
    assert_eq!(trace_hash(&mixed), trace_hash(&fixed_alone));
    assert_ne!(trace_hash(&mixed), trace_hash(&native));

    // A controller given to every kubelet warns for each, in four lines.
    let scheduler = format!("kubelet-*={}", built_plugin("recon_plugin_scheduler").display());
    let warned = recon(&["run", path.to_str().unwrap(), "--plugin", &scheduler]);
    assert_ne!(warned.status.code(), Some(2), "it runs");
    let err = stderr(&warned);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 4, "{err}");
    assert!(warnings[0].contains("recon_plugin_scheduler.wasm (scheduler) is not a node agent"), "{err}");
    assert_eq!(warnings[3], "warning: and 9 more like these, one per component");

    let none = format!("kubelet-node-2*1={}", kubelet.display());
    let refused = recon(&["run", path.to_str().unwrap(), "--plugin", &none]);
    assert_eq!(refused.status.code(), Some(2));
    let err = stderr(&refused);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no component of the scenario matches \"kubelet-node-2*1\" (it has: scheduler, ")
            && err.contains("… kubelet-node-12; 15 in all)"),
        "{err}"
    );
}

/// Kubernetes' default is 110 pods on a node: more pods than the nodes
/// hold is refused with what to do, and nothing is written. A cluster
/// past Kubernetes' published limits is written, with a note.
#[test]
fn cluster_refuses_pods_that_do_not_fit_and_notes_a_cluster_past_the_published_limits() {
    let scratch = Scratch::of_this_test();
    let path = scratch.path().join("cluster.yaml");
    let out = recon(&["cluster", "--nodes", "2", "--pods", "300", "--output", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "300 pods do not fit on 2 nodes of 110 pods each (Kubernetes' default); give at least 3 nodes"
    );
    assert!(!path.exists(), "nothing is written");

    let out = recon(&["cluster", "--nodes", "5001", "--pods", "10", "--output", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("Kubernetes tests clusters up to 5000 nodes and 150000 pods"), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&path).unwrap().contains("kubelet-node-5001"));

    let out = recon(&["cluster", "--nodes", "0", "--pods", "0"]);
    assert_eq!(out.status.code(), Some(2), "clap's own usage error: {}", stderr(&out));
}
