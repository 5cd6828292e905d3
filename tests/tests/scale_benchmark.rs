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
