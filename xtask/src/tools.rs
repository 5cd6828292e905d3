//! The tools the commands need beyond cargo, installed when missing: the
//! wasm32 target, wasm-bindgen-cli at exactly the version in `Cargo.lock`,
//! Trunk, (for the browser tests) Chromium with its WebDriver, and (for
//! the plugins written in C) clang with wasm-ld.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{WASM_TARGET, cargo, run};

/// The Trunk release the playground is built with (newer ones need a newer rustc).
const TRUNK_VERSION: &str = "0.21.14";

/// What a command prints as its version, or `None` if it cannot be run.
fn version_of(program: &str) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Installs the wasm32 target with rustup if it is missing.
pub fn ensure_wasm_target() -> Result<(), String> {
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

/// The wasm-bindgen version in `Cargo.lock`: the CLI must match it exactly.
fn locked_wasm_bindgen(root: &Path) -> Result<String, String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\"" {
            let version = lines.next().and_then(|l| l.strip_prefix("version = \"")?.strip_suffix('"'));
            return version.map(str::to_owned).ok_or_else(|| "Cargo.lock has no wasm-bindgen version".into());
        }
    }
    Err("Cargo.lock does not mention wasm-bindgen".into())
}

/// Installs wasm-bindgen-cli (which brings `wasm-bindgen-test-runner`) at
/// the locked version unless it is already on PATH.
pub fn ensure_wasm_bindgen(root: &Path) -> Result<(), String> {
    let version = locked_wasm_bindgen(root)?;
    if version_of("wasm-bindgen").is_some_and(|v| v.split_whitespace().nth(1) == Some(version.as_str())) {
        return Ok(());
    }
    eprintln!(
        "xtask: installing wasm-bindgen-cli {version} (the version in Cargo.lock); this takes a few minutes, once"
    );
    run(cargo().args(["install", "wasm-bindgen-cli", "--version", &version])).map_err(|e| {
        format!("{e}. Install it yourself with `cargo install wasm-bindgen-cli --version {version}` and try again.")
    })
}

/// Installs Trunk unless it is on PATH at the expected version.
pub fn ensure_trunk() -> Result<(), String> {
    if version_of("trunk").is_some_and(|v| v.split_whitespace().nth(1) == Some(TRUNK_VERSION)) {
        return Ok(());
    }
    eprintln!("xtask: installing trunk {TRUNK_VERSION}; this takes a few minutes, once");
    // Trunk's own release profile asks for fat LTO in one codegen unit: the
    // longest step of a cold `cargo xtask test` (17 minutes of 95 on the
    // 2-core machine). Trunk only drives the build, so it is built
    // optimised but without them.
    let fast_build = ["--config", "profile.release.lto=false", "--config", "profile.release.codegen-units=16"];
    run(cargo().args(["install", "trunk", "--version", TRUNK_VERSION, "--locked"]).args(fast_build)).map_err(|e| {
        format!("{e}. Install it yourself with `cargo install trunk --version {TRUNK_VERSION} --locked` and try again.")
    })
}

/// The axe-core release the accessibility check runs (from the npm registry).
const AXE_VERSION: &str = "4.14.1";

/// axe-core's browser script, installed with npm into the target directory
/// when missing: the browser tests inject it into the playground and fail
/// on serious or critical findings. `None`, with a message, where npm is
/// missing or cannot reach its registry: that one check is then skipped.
pub fn ensure_axe(target: &Path) -> Option<PathBuf> {
    let dir = target.join("axe-core");
    let script = dir.join("node_modules").join("axe-core").join("axe.min.js");
    let installed = dir.join("node_modules").join("axe-core").join("package.json");
    let version_ok =
        std::fs::read_to_string(&installed).is_ok_and(|text| text.contains(&format!("\"version\": \"{AXE_VERSION}\"")));
    if script.is_file() && version_ok {
        return Some(script);
    }
    if version_of("npm").is_none() {
        eprintln!(
            "xtask: npm was not found, so the accessibility check (axe-core) is skipped; install Node.js and npm \
             (e.g. `apt-get install npm`) to run it"
        );
        return None;
    }
    eprintln!("xtask: installing axe-core {AXE_VERSION} with npm for the accessibility check");
    let _ = std::fs::create_dir_all(&dir);
    let installed = run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix"])
        .arg(&dir)
        .arg(format!("axe-core@{AXE_VERSION}")));
    match installed {
        Ok(()) if script.is_file() => Some(script),
        Ok(()) => {
            eprintln!(
                "xtask: npm installed axe-core but {} is missing; the accessibility check is skipped",
                script.display()
            );
            None
        }
        Err(e) => {
            eprintln!("xtask: {e}; the accessibility check (axe-core) is skipped");
            None
        }
    }
}

/// Chromium and its WebDriver, for the browser tests.
pub struct Chromium {
    /// The browser.
    pub browser: PathBuf,
    /// The WebDriver server for it.
    pub driver: PathBuf,
}

/// Finds Chromium and chromedriver (`CHROME` and `CHROMEDRIVER` override
/// the search), installing Debian's packages when they are missing and
/// this is a Debian machine where we may.
pub fn ensure_chromium() -> Result<Chromium, String> {
    if let Some(found) = find_chromium() {
        return Ok(found);
    }
    let how = "Install Chromium and its WebDriver (Debian: `apt-get install chromium chromium-driver`), \
               or point CHROME and CHROMEDRIVER at them, and try again.";
    if !may_apt_get() {
        return Err(format!("the browser tests need Chromium and chromedriver, which were not found. {how}"));
    }
    eprintln!("xtask: installing Debian's chromium and chromium-driver for the browser tests");
    apt_get_install(&["chromium", "chromium-driver"]).map_err(|e| format!("{e}. {how}"))?;
    find_chromium().ok_or_else(|| format!("chromium was installed but not found. {how}"))
}

/// Whether this is a Debian machine where we may install packages (as root).
fn may_apt_get() -> bool {
    let debian = Path::new("/usr/bin/apt-get").exists();
    debian && Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Installs Debian packages with apt-get (after refreshing its lists).
fn apt_get_install(packages: &[&str]) -> Result<(), String> {
    run(Command::new("apt-get").arg("update"))?;
    run(Command::new("apt-get").args(["install", "-y"]).args(packages).env("DEBIAN_FRONTEND", "noninteractive"))
}

fn find_chromium() -> Option<Chromium> {
    let pick = |var: &str, names: &[&str]| -> Option<PathBuf> {
        if let Some(path) = std::env::var_os(var) {
            return Some(PathBuf::from(path));
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).flat_map(|dir| names.iter().map(move |n| dir.join(n))).find(|p| p.is_file())
    };
    let browser = pick("CHROME", &["chromium", "chromium-browser", "google-chrome"])?;
    let driver = pick("CHROMEDRIVER", &["chromedriver"])?;
    Some(Chromium { browser, driver })
}

/// What to do when clang cannot build the plugins written in C.
pub const CLANG_HOW: &str =
    "install clang and lld (Debian: `apt-get install clang lld`), or set CLANG to a clang that targets wasm32";

/// The clang to build C plugins with: `CLANG`, or `clang` on PATH.
pub fn clang() -> PathBuf {
    std::env::var_os("CLANG").map_or_else(|| PathBuf::from("clang"), PathBuf::from)
}

/// `clang` if it can compile C to wasm32 and link it with wasm-ld, proved
/// by building a one-line module in `scratch`; or why not, in a few words.
pub fn find_clang(clang: &Path, scratch: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let source = scratch.join("probe.c");
    std::fs::write(&source, "int probe(void) { return 1; }\n")
        .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    let probe = Command::new(clang)
        .args(["--target=wasm32-unknown-unknown", "-nostdlib", "-Wl,--no-entry", "-o"])
        .arg(scratch.join("probe.wasm"))
        .arg(&source)
        .output();
    match probe {
        Err(_) => Err(format!("{} was not found", clang.display())),
        Ok(out) if out.status.success() => Ok(clang.to_path_buf()),
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("it failed");
            Err(format!("{} cannot build for wasm32 ({})", clang.display(), first.trim()))
        }
    }
}

/// Installs Debian's clang and lld when no clang can build for wasm32 and
/// this is a Debian machine where we may, as [`ensure_chromium`] does.
/// Never fails the command: without clang the plugins written in C and
/// their tests are skipped (with a line saying so).
pub fn ensure_clang(scratch: &Path) {
    if find_clang(&clang(), scratch).is_ok() || !may_apt_get() {
        return;
    }
    eprintln!("xtask: installing Debian's clang and lld to build the plugins written in C");
    if let Err(e) = apt_get_install(&["clang", "lld"]) {
        eprintln!("xtask: {e}; the plugins written in C will be skipped");
    }
}
