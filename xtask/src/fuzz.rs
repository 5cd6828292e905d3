//! Fuzzing: the targets in `fuzz/` under cargo-fuzz (libFuzzer), on the
//! stable toolchain.
//!
//! `cargo xtask fuzz [SECONDS]` runs every target from the committed
//! corpus with a fixed seed. `cargo xtask test` fuzzes only when asked
//! (`RECON_FUZZ_SECONDS=N` per target; none by default): the instrumented
//! build costs minutes after every change, and the ordinary test
//! `fuzz_replay` replays the corpus and every regression anyway.
//! cargo-fuzz is installed when missing. If it cannot be
//! installed or built, fuzzing is skipped with a message: the committed
//! corpus and every regression have been replayed through the same target
//! functions by the ordinary test `tests/tests/fuzz_replay.rs` anyway.
//!
//! `--sanitizer none`: the code under test is safe Rust, and without a
//! sanitizer cargo-fuzz passes the compiler no unstable flags, so no
//! nightly toolchain (and no `RUSTC_BOOTSTRAP`) is needed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, run, target_dir};

/// The fuzz targets, as named in `fuzz/fuzz_targets/`.
const TARGETS: &[&str] = &["scenario_file", "plugin_output", "plugin_module"];

/// The cargo-fuzz release the commands are written for.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Seconds per target in `cargo xtask test`: none unless asked.
pub const DEFAULT_SECONDS: u64 = 0;

/// Overrides [`DEFAULT_SECONDS`]: seconds per target in `cargo xtask test`.
const SECONDS_VAR: &str = "RECON_FUZZ_SECONDS";

/// The budget per target for `cargo xtask test`.
pub fn test_budget() -> Result<u64, String> {
    match std::env::var(SECONDS_VAR) {
        Ok(text) => text.parse().map_err(|_| format!("{SECONDS_VAR}={text}: not a number of seconds")),
        Err(_) => Ok(DEFAULT_SECONDS),
    }
}

/// Runs every target for `seconds` (0: none), or explains why it cannot.
pub fn run_all(root: &Path, seconds: u64) -> Result<(), String> {
    if seconds == 0 {
        eprintln!(
            "xtask: not fuzzing (the fuzz_replay test replayed the corpus and every regression); \
             `cargo xtask fuzz [SECONDS]` fuzzes, or {SECONDS_VAR}=N fuzzes N seconds per target here"
        );
        return Ok(());
    }
    let fuzz = root.join("fuzz");
    let out = target_dir(root).join("fuzz");
    if let Err(why) = ensure_cargo_fuzz().and_then(|()| build(&fuzz, &out)) {
        eprintln!(
            "xtask: fuzzing skipped: {why}\n       (the committed corpus and regressions were replayed through the same \
             functions by tests/tests/fuzz_replay.rs; to fuzz, fix the above and run `cargo xtask fuzz`)"
        );
        return Ok(());
    }
    for target in TARGETS {
        run_target(root, &out, target, seconds)?;
    }
    eprintln!("xtask: {} fuzz targets ran {seconds}s each without a crash", TARGETS.len());
    Ok(())
}

fn cargo_fuzz(fuzz: &Path, out: &Path, subcommand: &str) -> Command {
    let mut cmd = cargo();
    cmd.args(["fuzz", subcommand, "--sanitizer", "none", "--target-dir"]).arg(out).current_dir(fuzz);
    cmd
}

fn build(fuzz: &Path, out: &Path) -> Result<(), String> {
    run(&mut cargo_fuzz(fuzz, out, "build"))
}

/// Fuzzes one target: the working corpus (where new inputs go) lives under
/// the target directory; the committed corpus, the regressions and, for the
/// scenario parser, the shipped scenarios are read as seeds.
fn run_target(root: &Path, out: &Path, target: &str, seconds: u64) -> Result<(), String> {
    let fuzz = root.join("fuzz");
    let working = out.join("corpus").join(target);
    let artifacts = out.join("artifacts").join(target);
    for dir in [&working, &artifacts] {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut seeds: Vec<PathBuf> = vec![fuzz.join("corpus").join(target), fuzz.join("regressions").join(target)];
    if target == "scenario_file" {
        seeds.push(root.join("scenarios"));
    }
    let mut cmd = cargo_fuzz(&fuzz, out, "run");
    cmd.arg(target).arg(&working).args(seeds.iter().filter(|d| d.is_dir())).arg("--").args([
        format!("-max_total_time={seconds}"),
        "-seed=1".into(),
        "-timeout=10".into(),
        "-rss_limit_mb=2048".into(),
        format!("-artifact_prefix={}/", artifacts.display()),
    ]);
    run(&mut cmd).map_err(|e| {
        format!(
            "{e}\nfuzz target {target} found an input that breaks it, saved in {}.\n\
             Reproduce: cd fuzz && cargo fuzz run --sanitizer none {target} <that file>;\n\
             then copy it into fuzz/regressions/{target}/ with a name that says what it found.",
            artifacts.display()
        )
    })
}

/// Installs cargo-fuzz with `cargo install` unless `cargo fuzz` works.
fn ensure_cargo_fuzz() -> Result<(), String> {
    let works = cargo().args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if works {
        return Ok(());
    }
    eprintln!("xtask: installing cargo-fuzz {CARGO_FUZZ_VERSION}; this takes a minute, once");
    run(cargo().args(["install", "cargo-fuzz", "--version", CARGO_FUZZ_VERSION, "--locked"]))
        .map_err(|e| format!("{e}; install it yourself with `cargo install cargo-fuzz --locked`"))
}
