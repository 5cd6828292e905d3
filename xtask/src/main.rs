//! `cargo xtask`: the project's commands, so a newcomer needs nothing but cargo.
//!
//! - `cargo xtask play`: build the plugins, run the default scenario (#59848)
//!   and print its explanation. (The browser playground replaces this once it exists.)
//! - `cargo xtask test`: build the plugins for wasm32, then every test there
//!   is (the tests that run plugins under wasmtime find them through
//!   `RECON_PLUGIN_DIR`), plus the wasm32 build of the crates that must run
//!   in the browser.
//! - `cargo xtask plugins`: just build the plugins and print where they are.
//! - `cargo xtask bench`: the benchmarks (see BENCHMARKS.md).
//!
//! Whatever a fresh machine lacks (the wasm32 target) is installed here, or
//! the command stops and says exactly what to run.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The crates that must build for the browser (wasm32-unknown-unknown).
const WASM_CRATES: &[&str] = &["recon-abi", "recon-store", "recon-scenario", "recon-sim", "recon-sdk", "recon-catalog"];
const WASM_TARGET: &str = "wasm32-unknown-unknown";
const DEFAULT_SCENARIO: &str = "scenarios/pod-safety-59848.yaml";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("play") => play(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("plugins") => build_plugins().map(|dir| println!("{}", dir.display())),
        _ => {
            eprintln!("usage: cargo xtask <play | test | bench> [args]");
            eprintln!("  play   run the default scenario (#59848) and explain it");
            eprintln!("  test   run every test (native and the wasm32 build)");
            eprintln!("  bench    run the benchmarks and print their results");
            eprintln!("  plugins  build the controller plugins for wasm32 and print their directory");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Runs a command, echoing it first; an error names the failed command.
fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}").replace('"', "");
    eprintln!("+ {shown}");
    let status = cmd.status().map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`{shown}` failed ({status})")) }
}

fn play(args: &[String]) -> Result<(), String> {
    build_plugins()?;
    let scenario = args.first().map(String::as_str).unwrap_or(DEFAULT_SCENARIO);
    // The scenario's violation makes `recon run` exit 1: for play that is the
    // expected story, not a failure of the command.
    let status = cargo()
        .args(["run", "--quiet", "--release", "--package", "recon-cli", "--", "run", scenario])
        .status()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    match status.code() {
        Some(0 | 1) => Ok(()),
        _ => Err(format!("recon run {scenario} failed ({status})")),
    }
}

fn test(args: &[String]) -> Result<(), String> {
    let plugins = build_plugins()?;
    run(cargo().args(["test", "--workspace", "--all-targets"]).args(args).env(PLUGIN_DIR_VAR, &plugins))?;
    run(cargo().args(["test", "--workspace", "--doc"]).env(PLUGIN_DIR_VAR, &plugins))?;
    let mut wasm = cargo();
    wasm.args(["build", "--target", WASM_TARGET]);
    for c in WASM_CRATES {
        wasm.args(["--package", c]);
    }
    run(&mut wasm)?;
    eprintln!("xtask: all tests passed, and the simulator builds for {WASM_TARGET}");
    Ok(())
}

fn bench(args: &[String]) -> Result<(), String> {
    let plugins = build_plugins()?;
    run(cargo().args(["bench", "--package", "recon-tests"]).args(args).env(PLUGIN_DIR_VAR, &plugins))
}

/// Where tests and benchmarks look for the built plugins.
const PLUGIN_DIR_VAR: &str = "RECON_PLUGIN_DIR";

/// Builds every crate under `plugins/` for wasm32 (release) and returns the
/// directory holding the `.wasm` files.
fn build_plugins() -> Result<PathBuf, String> {
    ensure_wasm_target()?;
    let root = workspace_root();
    let mut build = cargo();
    build.args(["build", "--release", "--target", WASM_TARGET]);
    for name in plugin_packages(&root.join("plugins"))? {
        build.args(["--package", &name]);
    }
    run(&mut build)?;
    Ok(target_dir(&root).join(WASM_TARGET).join("release"))
}

/// The package names of the crates under `dir`, sorted.
fn plugin_packages(dir: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = \"").and_then(|r| r.strip_suffix('"')))
            .ok_or_else(|| format!("{} has no package name", manifest.display()))?;
        names.push(name.to_string());
    }
    names.sort();
    Ok(names)
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` if set, else `target/` in the workspace.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

/// Installs the wasm32 target with rustup if it is missing.
fn ensure_wasm_target() -> Result<(), String> {
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output().map_err(|_| {
        format!(
            "rustup was not found. Install the {WASM_TARGET} target for your toolchain by hand \
                 (e.g. `rustup target add {WASM_TARGET}`), or install rustup from https://rustup.rs"
        )
    })?;
    let list = String::from_utf8_lossy(&installed.stdout);
    if list.lines().any(|l| l.trim() == WASM_TARGET) {
        return Ok(());
    }
    eprintln!("xtask: the {WASM_TARGET} target is missing; installing it with rustup");
    run(Command::new("rustup").args(["target", "add", WASM_TARGET]))
        .map_err(|e| format!("{e}. Run `rustup target add {WASM_TARGET}` yourself and try again."))
}
