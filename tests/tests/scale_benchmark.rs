//! The scale benchmark's own driver (`tests/bin/scale.rs`), on clusters
//! small enough for a test: each size runs in a child process, is run again
//! until its runs have taken `--min-seconds`, and the table gives each
//! size's rate as a share of the first size's.

use std::process::Command;

/// Two tiny sizes, natively: the first is its own yardstick (1.00), a size
/// asked to take some time is run more than once, and every run of a size
/// gave the same trace (the driver fails otherwise).
#[test]
fn the_driver_repeats_small_sizes_and_compares_each_rate_with_the_first() {
    let output = Command::new(env!("CARGO_BIN_EXE_scale"))
        .args(["--sizes", "4x20,8x40", "--min-seconds", "0.5"])
        .env_remove("RECON_PLUGIN_DIR")
        .output()
        .expect("the scale benchmark starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("| 4 |") || l.starts_with("| 8 |"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 2, "one native row per size: {stdout}");
    // | nodes | pods | engine | runs | build | median | fastest | slowest | entries | entries/s | ÷ first | peak | ratio |
    let (first, second) = (&rows[0], &rows[1]);
    assert_eq!(first[3], "native");
    assert!(first[4].parse::<u32>().unwrap() > 1, "a run of a few milliseconds is repeated: {stdout}");
    let seconds = |cell: &str| cell.trim_end_matches(" s").parse::<f64>().unwrap();
    let (median, fastest, slowest) = (seconds(first[6]), seconds(first[7]), seconds(first[8]));
    assert!(
        fastest <= median && median <= slowest,
        "the median run lies between the fastest and the slowest: {stdout}"
    );
    assert_eq!(first[11], "1.00", "the first size is the yardstick");
    let share: f64 = second[11].parse().unwrap();
    assert!(share > 0.0, "{stdout}");
    assert!(second[9].parse::<u64>().unwrap() > first[9].parse::<u64>().unwrap(), "twice the cluster, more entries");
}

/// The driver's Wasm run (`--one N P wasm`): the cluster's controllers as
/// plugins, loaded under the limits the cluster sets, give the trace the
/// native run gives.
#[test]
fn a_wasm_run_of_the_cluster_gives_the_native_trace() {
    let hash = |engine: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_scale"))
            .args(["--one", "3", "30", engine])
            .output()
            .expect("the scale benchmark starts");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        // build_s run_s entries peak_kib hash
        let last = stdout.lines().last().unwrap_or_default();
        let fields: Vec<&str> = last.split_whitespace().collect();
        assert_eq!(fields.len(), 5, "{stdout}");
        (fields[2].to_owned(), fields[4].to_owned())
    };
    let native = hash("native");
    assert!(native.0.parse::<u64>().unwrap() > 100, "the cluster ran: {native:?}");
    assert_eq!(hash("wasm"), native);
}

/// The limits the cluster sets its plugins (`limits.plugins`) grow with
/// its pods, so a Wasm run at the benchmark's sizes stays on the native
/// run's path. Measured: the ReplicaSet controller's first call at 1,000
/// nodes returns 10,521 creates (the default allows 10,000 actions a
/// call), and the scheduler's first call at 300 nodes binds 9,000 pods,
/// more than the default billion units of fuel pays for; the default
/// 64 MiB of memory holds a few thousand of the ReplicaSet controller's
/// pods, and at 5,000 nodes its first call returns 60.8 MB, above the
/// default 16 MiB of output. Parsing checks each limit against the most a
/// scenario may set.
#[test]
fn the_cluster_sets_plugin_limits_that_grow_with_its_pods() {
    let default = recon_host::Limits::DEFAULT;
    for (nodes, pods) in [(10, 300), (1_000, 30_000), (5_000, 150_000)] {
        let limits = recon_host::Limits::from(&recon_tests::scale::scenario(nodes, pods).limits.plugins);
        assert_eq!(limits.memory_bytes, recon_scenario::PluginLimits::MAX_MEMORY_BYTES);
        assert!(limits.max_actions_per_call as usize >= pods.max(default.max_actions_per_call as usize));
        assert!(limits.fuel_per_call >= default.fuel_per_call + 100_000 * pods as u64, "{nodes} nodes: {limits:?}");
        // A create from a template is about 1,200 bytes of output.
        let creates = (1_200 * pods as u64).min(recon_scenario::PluginLimits::MAX_OUTPUT_BYTES);
        assert!(limits.max_output_bytes >= creates.max(default.max_output_bytes), "{nodes} nodes: {limits:?}");
    }
}
