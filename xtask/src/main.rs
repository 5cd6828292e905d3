//! `cargo xtask`: the project's commands, so a newcomer needs nothing but cargo.
//!
//! - `cargo xtask play`: build the playground (the app, its simulation
//!   worker and the plugins) and serve it on 127.0.0.1, printing the URL.
//! - `cargo xtask test`: every test there is: the native suites (the tests
//!   that run plugins under wasmtime find them through `RECON_PLUGIN_DIR`),
//!   the browser engine's tests in headless Chromium, and the playground's
//!   end-to-end tests in headless Chromium. Not fuzzing (see below).
//! - `cargo xtask fuzz [SECONDS]`: every fuzz target under cargo-fuzz
//!   (`fuzz/README.md`); `test` only replays their corpus and regressions.
//! - `cargo xtask bench`: the benchmarks (see BENCHMARKS.md), native and in
//!   the browser; `cargo xtask bench scale [FLAGS]`: the scale benchmark
//!   alone (cluster sizes up to Kubernetes' published limits); `cargo xtask
//!   bench browser [SECTION...]`: the browser benchmark alone. Every
//!   benchmark builds with the `dist` profile (whole-program optimisation,
//!   as the distributed CLI and, for size, the playground's worker), and
//!   so do the plugins it runs.
//! - `cargo xtask e2e [ARGS]`: only the playground's end-to-end tests (ARGS
//!   go to `cargo test`, e.g. `--test playground -- share`).
//! - `cargo xtask plugins`: just build the plugins and print where they are
//!   (the Rust ones, and those written in C where clang can build them).
//! - `cargo xtask size`: build the playground, print what a first visit
//!   downloads (gzipped) against its budget, and write that table into
//!   BENCHMARKS.md.
//!
//! Whatever a fresh machine lacks (the wasm32 target, wasm-bindgen-cli at
//! the locked version, Trunk, Chromium on Debian) is installed here, or the
//! command stops and says exactly what to run. Clang, for the plugins
//! written in C, is optional: `test` installs it on Debian, and where it
//! is missing those plugins and their tests are skipped with a line
//! saying what to install.

mod browser;
mod c_plugins;
mod disk;
mod fuzz;
mod phases;
mod serve;
mod size;
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The crates that must build for the browser (wasm32-unknown-unknown).
const WASM_CRATES: &[&str] = &[
    "recon-abi",
    "recon-store",
    "recon-scenario",
    "recon-trace",
    "recon-sim",
    "recon-sdk",
    "recon-catalog",
    "recon-host",
];
const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// The port `play` serves on unless told otherwise (`--port N`).
const PLAY_PORT: u16 = 8080;
/// Where tests and benchmarks look for the built plugins.
const PLUGIN_DIR_VAR: &str = "RECON_PLUGIN_DIR";
/// The package of the end-to-end browser tests, run on their own after
/// the playground is built and served.
const E2E_PACKAGE: &str = "recon-e2e";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("play") => play(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("e2e") => e2e(&args[1..]),
        Some("fuzz") => fuzz_longer(&args[1..]),
        Some("plugins") => build_plugins(PLUGIN_PROFILE).map(|dir| println!("{}", dir.display())),
        Some("web") => build_web().map(|dir| println!("{}", dir.display())),
        Some("size") => download_size(),
        _ => {
            eprintln!("usage: cargo xtask <command> [args]");
            eprintln!("  play [--port N]  build the playground and serve it on 127.0.0.1 (default port {PLAY_PORT})");
            eprintln!("  test             run every test: native, and in headless Chromium");
            eprintln!("  bench            run the benchmarks and print their results");
            eprintln!("  bench scale      only the scale benchmark");
            eprintln!("                   (--sizes NODESxPODS,... --wasm-up-to NODES --min-seconds S)");
            eprintln!("  bench browser [SECTION...]  only the browser benchmark, or some of its sections");
            eprintln!(
                "  e2e [ARGS]       build and serve the playground, run only its browser tests (ARGS go to cargo test)"
            );
            eprintln!("  fuzz [SECONDS]   run every fuzz target for SECONDS (default 600) with cargo-fuzz");
            eprintln!("  plugins          build the controller plugins for wasm32 and print their directory");
            eprintln!("  web              build the playground and print its directory");
            eprintln!("  size             build the playground, print what a visitor downloads, update BENCHMARKS.md");
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
    let port = match args {
        [] => PLAY_PORT,
        [flag, port] if flag == "--port" => port.parse().map_err(|_| format!("--port {port}: not a port number"))?,
        _ => return Err(format!("unexpected arguments {args:?}; usage: cargo xtask play [--port N]")),
    };
    let dist = build_web()?;
    // Another program may hold the usual port: any free one will do then.
    let addr = serve::start(&dist, port).or_else(|e| {
        eprintln!("xtask: {e}; using a free port instead");
        serve::start(&dist, 0)
    })?;
    println!();
    println!("  Recon playground: http://{addr}/");
    println!(
        "  (the default scenario, #59848, runs as the page opens; plugins to upload are in {}/plugins)",
        dist.display()
    );
    println!("  Press Ctrl-C to stop.");
    loop {
        std::thread::park();
    }
}

fn test(args: &[String]) -> Result<(), String> {
    let mut phases = phases::Phases::default();
    let outcome = test_phases(args, &mut phases);
    eprint!("{}", phases.summary());
    outcome
}

/// `cargo xtask test`'s phases, each timed (README, "What `cargo xtask
/// test` costs").
fn test_phases(args: &[String], phases: &mut phases::Phases) -> Result<(), String> {
    let root = workspace_root();
    disk::ensure_room(&target_dir(&root))?;
    let (plugins, chromium, dist) = phases.time("tools, plugins and the playground's build", || {
        tools::ensure_clang(&clang_scratch(&root));
        let plugins = build_plugins(PLUGIN_PROFILE)?;
        let chromium = tools::ensure_chromium()?;
        tools::ensure_wasm_bindgen(&root)?;
        let dist = build_web()?;
        Ok((plugins, chromium, dist))
    })?;
    // What a visitor downloads stays within its budget (src/size.rs).
    let rows = size::measure(&dist)?;
    print!("{}", size::table(&rows, size::BUDGET));
    size::check(&rows, size::BUDGET)?;
    // Every native test and the playground's end-to-end tests in one
    // `cargo test --workspace`: one feature resolution, so every
    // dependency is built once (a second invocation over a different set
    // of packages rebuilds wasmtime and the rest with other features, and
    // doubles the disk a cold run needs). The end-to-end tests take turns
    // with the browser themselves (`recon_e2e::Browser`).
    phases.time("cargo test --workspace (native and browser tests)", || {
        browser::with_playground(&dist, &chromium, |env| {
            run(cargo()
                .args(["test", "--workspace", "--all-targets"])
                .args(args)
                .envs(env.iter().cloned())
                .env(PLUGIN_DIR_VAR, &plugins))
        })
    })?;
    phases.time("doc tests", || run(cargo().args(["test", "--workspace", "--doc"]).env(PLUGIN_DIR_VAR, &plugins)))?;
    // Fuzzing is `cargo xtask fuzz`: its instrumented release build of the
    // whole simulator and wasmtime costs minutes after every change, and
    // what it found is replayed by `fuzz_replay` above. Opt in with
    // RECON_FUZZ_SECONDS (fuzz/README.md).
    phases.time("fuzz targets", || fuzz::run_all(&root, fuzz::test_budget()?))?;
    phases.time("the engine's tests in Chromium", || {
        let mut wasm = cargo();
        wasm.args(["build", "--target", WASM_TARGET]);
        for c in WASM_CRATES {
            wasm.args(["--package", c]);
        }
        run(&mut wasm)?;
        // In the browser: the plugin engine's own tests.
        browser::engine_tests(&root, &chromium, &plugins)
    })?;
    eprintln!("xtask: all tests passed, natively and in headless Chromium");
    Ok(())
}

/// `cargo xtask fuzz [SECONDS]`: every fuzz target for longer than the
/// test budget (default ten minutes each).
fn fuzz_longer(args: &[String]) -> Result<(), String> {
    let seconds = match args {
        [] => 600,
        [s] => s.parse().map_err(|_| format!("{s}: not a number of seconds; usage: cargo xtask fuzz [SECONDS]"))?,
        _ => return Err(format!("unexpected arguments {args:?}; usage: cargo xtask fuzz [SECONDS]")),
    };
    fuzz::run_all(&workspace_root(), seconds)
}

/// `cargo xtask e2e [ARGS]`: only the playground's end-to-end tests, for
/// working on the page; ARGS go to `cargo test` (a test binary with
/// `--test NAME`, a name filter after `--`).
fn e2e(args: &[String]) -> Result<(), String> {
    let plugins = build_plugins(PLUGIN_PROFILE)?;
    let chromium = tools::ensure_chromium()?;
    tools::ensure_wasm_bindgen(&workspace_root())?;
    playground_tests(&chromium, &plugins, args)
}

/// Builds and serves the playground, starts chromedriver and runs the
/// end-to-end tests against them, one at a time (each starts a browser).
/// `--workspace` with the end-to-end test targets named resolves features
/// as `cargo xtask test` does, so the two share one build.
fn playground_tests(chromium: &tools::Chromium, plugins: &Path, args: &[String]) -> Result<(), String> {
    let dist = build_web()?;
    let (cargo_args, test_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut targets = Vec::new();
    if !cargo_args.iter().any(|a| a == "--test" || a == "--bench") {
        for name in e2e_test_targets()? {
            targets.extend(["--test".to_owned(), name]);
        }
    }
    browser::with_playground(&dist, chromium, |env| {
        run(cargo()
            .args(["test", "--workspace"])
            .args(&targets)
            .args(cargo_args)
            .args(["--", "--test-threads=1"])
            .args(test_args)
            .envs(env.iter().cloned())
            .env(PLUGIN_DIR_VAR, plugins))
    })
}

/// The end-to-end test targets: the files in `e2e/tests/`.
fn e2e_test_targets() -> Result<Vec<String>, String> {
    let dir = workspace_root().join("e2e/tests");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut names: Vec<String> =
        entries.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".rs").map(str::to_owned)).collect();
    names.sort();
    Ok(names)
}

/// `cargo xtask size`: the download-size table, printed and written into
/// BENCHMARKS.md, from the same measurement the budget check uses.
fn download_size() -> Result<(), String> {
    let dist = build_web()?;
    let rows = size::measure(&dist)?;
    let table = size::table(&rows, size::BUDGET);
    print!("{table}");
    let path = workspace_root().join("BENCHMARKS.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let updated = size::replace_table(&text, &table)?;
    std::fs::write(&path, updated).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: wrote the table into {}", path.display());
    size::check(&rows, size::BUDGET)
}

/// The Cargo profile of every benchmark's native side: the distributed
/// CLI's (`[profile.dist]`, whole-program optimisation like the
/// playground's `web` profile), so a browser/native ratio is like for like.
/// The plugins are built with it too, so a plugin/native ratio is as well:
/// the same optimisation on both sides. Slow to build, so only `bench`
/// uses it, never `test`.
const BENCH_PROFILE: &str = "dist";

/// The Cargo profile of the plugins everything but the benchmarks uses.
const PLUGIN_PROFILE: &str = "release";

/// `cargo xtask bench [scale FLAGS | browser [SECTION...] | ARGS]`: every
/// benchmark, or the scale benchmark alone, or the browser benchmark alone
/// (some of its sections, by name); all built with [`BENCH_PROFILE`].
fn bench(args: &[String]) -> Result<(), String> {
    let plugins = build_plugins(BENCH_PROFILE)?;
    // The scale benchmark is long (minutes at the largest size) and its own
    // program, so it runs alone: `cargo xtask bench scale [flags]`.
    if args.first().is_some_and(|a| a == "scale") {
        return run(cargo()
            .args(["run", "--profile", BENCH_PROFILE, "--package", "recon-tests", "--bin", "scale", "--"])
            .args(&args[1..])
            .env(PLUGIN_DIR_VAR, &plugins));
    }
    let browser_only = args.first().is_some_and(|a| a == "browser");
    if !browser_only {
        run(cargo()
            .args(["bench", "--profile", BENCH_PROFILE, "--package", "recon-tests"])
            .args(args)
            .env(PLUGIN_DIR_VAR, &plugins))?;
    }
    let chromium = tools::ensure_chromium()?;
    let dist = build_web()?;
    let sections = if browser_only { &args[1..] } else { &[][..] };
    if sections.is_empty() {
        println!("## Download size\n");
        print!("{}", size::table(&size::measure(&dist)?, size::BUDGET));
    }
    browser::with_playground(&dist, &chromium, |env| {
        run(cargo()
            .args(["bench", "--profile", BENCH_PROFILE, "--package", E2E_PACKAGE, "--bench", "browser", "--"])
            .args(sections)
            .envs(env.iter().cloned())
            .env(PLUGIN_DIR_VAR, &plugins))
    })
}

/// Builds every crate under `plugins/` and `tests/plugins/` for wasm32
/// with Cargo profile `profile`, and the plugins written in C where clang
/// can, and returns the directory holding the `.wasm` files
/// (`<target>/wasm32-unknown-unknown/<profile>`).
fn build_plugins(profile: &str) -> Result<PathBuf, String> {
    tools::ensure_wasm_target()?;
    let root = workspace_root();
    let mut build = cargo();
    build.args(["build", "--profile", profile, "--target", WASM_TARGET]);
    // The test plugins (`tests/plugins/`) too, beside the shipped ones:
    // tests find both in the one directory.
    for name in plugin_packages(&root.join("plugins"))?.into_iter().chain(plugin_packages(&root.join("tests/plugins"))?)
    {
        build.args(["--package", &name]);
    }
    run(&mut build)?;
    let out = target_dir(&root).join(WASM_TARGET).join(profile);
    let clang = tools::find_clang(&tools::clang(), &clang_scratch(&root));
    c_plugins::build_all(&root.join("plugins"), &out, &clang)?;
    Ok(out)
}

/// Where clang's probe writes its scratch files.
fn clang_scratch(root: &Path) -> PathBuf {
    target_dir(root).join("c-plugins")
}

/// Builds the playground with Trunk (release) into `<target>/playground`,
/// with the built-in plugins beside it in `plugins/` for users to download,
/// study and upload again. Returns the directory.
fn build_web() -> Result<PathBuf, String> {
    let root = workspace_root();
    let plugins = build_plugins(PLUGIN_PROFILE)?;
    tools::ensure_wasm_bindgen(&root)?;
    tools::ensure_trunk()?;
    let dist = target_dir(&root).join("playground");
    // Offline: Trunk must use the wasm-bindgen on PATH, never download one.
    run(Command::new("trunk")
        .args(["build", "--release", "--cargo-profile", "web", "--offline", "--dist"])
        .arg(&dist)
        .arg(root.join("index.html"))
        .current_dir(&root))?;
    refuse_unsatisfiable_imports(&dist)?;
    let shipped = dist.join("plugins");
    std::fs::create_dir_all(&shipped).map_err(|e| format!("cannot create {}: {e}", shipped.display()))?;
    for name in plugin_packages(&root.join("plugins"))? {
        let file = format!("{}.wasm", name.replace('-', "_"));
        std::fs::copy(plugins.join(&file), shipped.join(&file))
            .map_err(|e| format!("cannot copy {file} into the playground: {e}"))?;
    }
    Ok(dist)
}

/// Fails when a program's JS glue `require`s a module: wasm-bindgen writes
/// that for a wasm import it does not provide (a plugin's `recon.log`, say,
/// linked into the worker), and no browser has `require`, so the program
/// would never start — a worker that silently never answers.
fn refuse_unsatisfiable_imports(dist: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dist).map_err(|e| format!("cannot read {}: {e}", dist.display()))?;
    for path in entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "js")) {
        let glue = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if let Some(at) = glue.find("require(") {
            let import = glue[at..].lines().next().unwrap_or_default();
            return Err(format!(
                "{} imports what no browser provides ({import}): a wasm import that only a plugin's host \
                 satisfies was linked into the playground",
                path.display()
            ));
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glue_that_requires_a_module_is_refused_with_the_import_named() {
        let dir = std::env::temp_dir().join(format!("recon-xtask-imports-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("recon-web.js"), "const imports = { wbg: {} };\n").unwrap();
        assert_eq!(refuse_unsatisfiable_imports(&dir), Ok(()));
        std::fs::write(dir.join("recon-worker.js"), "let x;\n    const import1 = require(\"recon\");\n").unwrap();
        let error = refuse_unsatisfiable_imports(&dir).unwrap_err();
        assert!(error.contains("recon-worker.js") && error.contains("require(\"recon\")"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
