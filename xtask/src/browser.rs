//! Running things in headless Chromium: the plugin engine's tests (through
//! `wasm-bindgen-test-runner`) and the playground's end-to-end tests
//! (through chromedriver, against the built playground served locally).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::tools::Chromium;
use crate::{PLUGIN_DIR_VAR, WASM_TARGET, cargo, run};

/// Runs `recon-host`'s browser tests (`crates/host/tests/browser.rs`) in a
/// dedicated worker in headless Chromium. The runner reads Chromium's
/// flags from `crates/host/webdriver.json`.
pub fn engine_tests(root: &Path, chromium: &Chromium, plugins: &Path) -> Result<(), String> {
    let temp = BrowserTemp::new()?;
    run(cargo()
        .env("TMPDIR", &temp.0)
        .args(["test", "--package", "recon-host", "--target", WASM_TARGET, "--test", "browser"])
        .current_dir(root.join("crates/host"))
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", "wasm-bindgen-test-runner")
        .env("CHROMEDRIVER", &chromium.driver)
        .env("WASM_BINDGEN_TEST_TIMEOUT", "300")
        .env(PLUGIN_DIR_VAR, plugins))
}

/// A directory for Chromium's temporary files, removed when dropped.
///
/// Each browser leaves a directory of about 70 MB
/// (`org.chromium.Chromium.scoped_dir.*`) in the system's temporary
/// directory when its driver stops it, so every run of the browser tests
/// leaked some, on a disk CI shares. chromedriver, and the browsers it
/// starts, get this one as `TMPDIR` instead.
struct BrowserTemp(PathBuf);

impl BrowserTemp {
    fn new() -> Result<BrowserTemp, String> {
        let dir =
            crate::target_dir(&crate::workspace_root()).join("tmp").join(format!("chromium-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(BrowserTemp(dir))
    }
}

impl Drop for BrowserTemp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A chromedriver process, stopped when dropped.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serves the playground in `dist` and starts chromedriver, then calls `f`
/// with the environment the end-to-end tests read: `RECON_E2E_URL` (the
/// playground), `RECON_WEBDRIVER_URL` and `RECON_CHROME` (the browser).
pub fn with_playground(
    dist: &Path,
    chromium: &Chromium,
    f: impl FnOnce(&[(String, String)]) -> Result<(), String>,
) -> Result<(), String> {
    let site = crate::serve::start(dist, 0)?;
    let port = free_port()?;
    // Declared before the driver, so removed after it has stopped.
    let temp = BrowserTemp::new()?;
    let child = Command::new(&chromium.driver)
        .arg(format!("--port={port}"))
        .env("TMPDIR", &temp.0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", chromium.driver.display()))?;
    let _driver = Driver(child);
    wait_for_port(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(30))
        .map_err(|e| format!("chromedriver did not start listening: {e}"))?;
    let mut env = vec![
        ("RECON_E2E_URL".to_owned(), format!("http://{site}/")),
        ("RECON_WEBDRIVER_URL".to_owned(), format!("http://127.0.0.1:{port}")),
        ("RECON_CHROME".to_owned(), chromium.browser.display().to_string()),
    ];
    if let Some(axe) = crate::tools::ensure_axe(&crate::target_dir(&crate::workspace_root())) {
        env.push(("RECON_AXE_SCRIPT".to_owned(), axe.display().to_string()));
    }
    f(&env)
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Waits until something accepts connections on `addr` (a process that is
/// starting up), polling.
fn wait_for_port(addr: SocketAddr, limit: Duration) -> Result<(), String> {
    let start = Instant::now();
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() > limit => return Err(format!("{addr}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
