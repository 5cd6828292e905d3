//! Driving the built playground in headless Chromium.
//!
//! `cargo xtask test` builds the playground, serves it on 127.0.0.1 and
//! starts chromedriver, then runs these tests with `RECON_E2E_URL`,
//! `RECON_WEBDRIVER_URL` and `RECON_CHROME` set. Each [`Browser`] is a new
//! Chromium with a fresh profile, started with the flags this closed
//! network needs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};

/// How long a page may take to show what a test waits for. Generous: a
/// test fails on a wrong result, not on a slow machine.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// The environment variable `name`, or a panic that says how to run the tests.
fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the browser tests with `cargo xtask test`, which builds and serves the playground"
        )
    })
}

/// A headless Chromium on the playground. Dropping it without
/// [`Browser::close`] (a test that panicked) still ends the browser.
pub struct Browser {
    client: Client,
    profile: PathBuf,
    /// The WebDriver session, until [`Browser::close`] ended it.
    session: Option<String>,
    // Held while the browser lives: `cargo xtask test` runs the
    // end-to-end tests in one `cargo test` with every other test (one
    // build for all), whose test threads would otherwise start several
    // browsers at once on a small machine.
    _turn: MutexGuard<'static, ()>,
}

/// One browser at a time in this process.
static TURN: Mutex<()> = Mutex::new(());

static PROFILES: AtomicU32 = AtomicU32::new(0);

impl Browser {
    /// A fresh browser (new profile) at the playground's `path`, e.g. `""`
    /// or `"?scenario=pod-safety-59848-quorum"`.
    #[allow(
        clippy::await_holding_lock,
        reason = "each test runs its own single-threaded runtime on its own thread, so the turn is held by one \
                  thread and released when the browser is dropped; nothing else on that runtime waits for it"
    )]
    pub async fn open(path: &str) -> Browser {
        // A test that panicked with a browser open poisons the lock; the
        // next test's browser is a fresh one all the same.
        let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let profile = std::env::temp_dir().join(format!(
            "recon-e2e-{}-{}",
            std::process::id(),
            PROFILES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).expect("the temporary directory is writable");
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1400,900",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!("--user-data-dir={}", profile.display())])
        .collect::<Vec<_>>();
        let mut capabilities = serde_json::Map::new();
        capabilities
            .insert("goog:chromeOptions".into(), serde_json::json!({ "binary": env("RECON_CHROME"), "args": args }));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&env("RECON_WEBDRIVER_URL"))
            .await
            .unwrap_or_else(|e| panic!("chromedriver did not start a browser: {e}"));
        let session = client.session_id().await.ok().flatten();
        let browser = Browser { client, profile, session, _turn: turn };
        browser.client.goto(&format!("{}{path}", env("RECON_E2E_URL"))).await.expect("the playground loads");
        browser
    }

    /// The WebDriver session's id, while the browser is open.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The WebDriver client, for anything the helpers do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The first element matching `css`, waiting for it to appear.
    pub async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css:?} appeared: {e}"))
    }

    /// Whether an element matching `css` is on the page now.
    pub async fn exists(&self, css: &str) -> bool {
        self.client.find(Locator::Css(css)).await.is_ok()
    }

    /// Waits until the text of the element matching `css` satisfies `ok`,
    /// and returns it. Polls: the page updates when the worker answers.
    pub async fn wait_text(&self, css: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        let mut last = String::new();
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = element.text().await
            {
                if ok(&text) {
                    return text;
                }
                last = text;
            }
            assert!(start.elapsed() < PATIENCE, "{css:?} never showed the expected text; last seen: {last:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The hash of the finished run on the page, waiting for one that is
    /// not `previous`.
    pub async fn hash_after(&self, previous: Option<&str>) -> String {
        self.wait_text("#trace-hash", |h| h.len() == 16 && Some(h) != previous).await
    }

    /// Opens the scenario editor and returns the text it shows.
    pub async fn open_editor(&self) -> String {
        self.find("#editor-toggle").await.click().await.unwrap();
        self.find("#editor-text").await.prop("value").await.unwrap().expect("the editor has a value")
    }

    /// Replaces the editor's text as typing would (an `input` event),
    /// without applying it.
    pub async fn type_scenario(&self, text: &str) {
        let set = "const t = document.querySelector('#editor-text'); t.value = arguments[0]; \
                   t.dispatchEvent(new Event('input', { bubbles: true }));";
        self.client.execute(set, vec![text.into()]).await.unwrap();
    }

    /// Types `text` into the open editor, waits until the page finds it
    /// valid, and applies it (which runs it).
    pub async fn apply_scenario(&self, text: &str) {
        self.type_scenario(text).await;
        self.wait_text("#editor-status", |t| t.starts_with("valid")).await;
        self.find("#editor-apply").await.click().await.unwrap();
    }

    /// Checks that, with a run under way, the page answers a click (the
    /// "about" toggle) within a second: the worker does the work, not the page.
    pub async fn assert_answers_while_running(&self) {
        self.find("#running").await;
        let clicked = Instant::now();
        self.find("#about-toggle").await.click().await.unwrap();
        self.find("#about").await;
        let answered = clicked.elapsed();
        assert!(self.exists("#running").await, "the run was still going when the page answered");
        assert!(answered < Duration::from_secs(1), "the page took {answered:?} to answer a click");
    }

    /// Drops files on the element matching `css` as a visitor's drag
    /// would (`dragenter`, `dragover`, `drop`, bubbling), each file made in
    /// the page from a `(name, bytes)` pair (text as `.as_bytes()`, or a
    /// built plugin).
    pub async fn drop_files(&self, css: &str, files: &[(&str, &[u8])]) {
        use base64::Engine as _;
        let drop = "const [css, files] = arguments; const data = new DataTransfer(); \
                    for (const [name, b64] of files) \
                      data.items.add(new File([Uint8Array.from(atob(b64), c => c.charCodeAt(0))], name)); \
                    const target = document.querySelector(css); \
                    for (const type of ['dragenter', 'dragover', 'drop']) \
                      target.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));";
        let base64 = base64::engine::general_purpose::STANDARD;
        let files: Vec<serde_json::Value> =
            files.iter().map(|(name, bytes)| serde_json::json!([name, base64.encode(bytes)])).collect();
        self.client.execute(drop, vec![css.into(), files.into()]).await.expect("the files are dropped");
    }

    /// From now on, keeps every file the page hands to a download (each
    /// `Blob` given to `URL.createObjectURL`, in `window.__saved`), to read
    /// back with [`Browser::downloaded_text`].
    pub async fn capture_downloads(&self) {
        let capture = "window.__saved = []; const create = URL.createObjectURL; \
                       URL.createObjectURL = (blob) => { window.__saved.push(blob); return create(blob); };";
        self.client.execute(capture, vec![]).await.expect("downloads are captured");
    }

    /// The text of the first file the page handed to a download since
    /// [`Browser::capture_downloads`].
    pub async fn downloaded_text(&self) -> String {
        let read = "const done = arguments[arguments.length - 1]; window.__saved[0].text().then(done);";
        let text = self.client.execute_async(read, vec![]).await.expect("the download is read back");
        text.as_str().expect("a download's text").to_owned()
    }

    /// Closes the browser and deletes its profile.
    pub async fn close(mut self) {
        if self.client.clone().close().await.is_ok() {
            self.session = None;
        }
    }
}

impl Drop for Browser {
    /// A test that panicked never reached [`Browser::close`]: end its
    /// session with a plain HTTP request (the test's runtime is unwinding)
    /// so that chromedriver stops the browser rather than leave it running
    /// after the tests. Then delete the profile.
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            let _ = webdriver_request("DELETE", &format!("session/{session}"));
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Sends a bodiless WebDriver request (`method`, `path` under the
/// chromedriver of `RECON_WEBDRIVER_URL`, an `http://HOST:PORT` address)
/// and returns the answer's status line, headers and body, waiting ten
/// seconds at most. Blocking and without the test's runtime, so that it
/// works while a test panics.
pub fn webdriver_request(method: &str, path: &str) -> Option<String> {
    use std::io::{BufRead, BufReader, Read, Write};
    let webdriver = std::env::var("RECON_WEBDRIVER_URL").ok()?;
    let host = webdriver.strip_prefix("http://")?.trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let request =
        format!("{method} /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    // chromedriver says `Connection: close` but keeps the connection open:
    // read up to the end of the body its length gives, not to the end.
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
        answer.push_str(&line);
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    answer.push_str(&String::from_utf8_lossy(&body));
    Some(answer)
}

/// A built plugin from `cargo xtask test` (which sets `RECON_PLUGIN_DIR`).
pub fn plugin_path(crate_name: &str) -> PathBuf {
    PathBuf::from(env("RECON_PLUGIN_DIR")).join(format!("{crate_name}.wasm"))
}

/// A component running an uploaded plugin: the component, the file's name
/// (it starts crash messages, so it is part of the trace) and its bytes.
pub type Swap<'a> = (&'a str, &'a str, &'a [u8]);

/// The trace hash of a library scenario run natively, with some components
/// running Wasm plugins under wasmtime: what the browser must reproduce.
pub fn native_hash(scenario: &str, plugins: &[Swap<'_>]) -> String {
    native_run(scenario, plugins).hash()
}

/// A library scenario run natively; see [`native_hash`].
pub fn native_run(scenario: &str, plugins: &[Swap<'_>]) -> recon_trace::Trace {
    let library = recon_catalog::scenario(scenario).unwrap_or_else(|| panic!("no library scenario {scenario}"));
    let scenario = recon_scenario::parse(scenario, library.yaml).expect("library scenarios parse");
    run_scenario(&scenario, plugins)
}

/// Runs a scenario natively, with the given components as Wasm plugins,
/// prepared as `recon run` and the playground's worker prepare it.
pub fn run_scenario(scenario: &recon_scenario::Scenario, plugins: &[Swap<'_>]) -> recon_trace::Trace {
    let swaps: Vec<recon_prepare::Swap> = plugins
        .iter()
        .map(|(component, file_name, bytes)| recon_prepare::Swap {
            component: component.to_string(),
            file_name: file_name.to_string(),
            plugin: recon_prepare::PluginBytes::new(bytes.to_vec()),
        })
        .collect();
    let file = recon_prepare::ScenarioFile::new("scenario.yaml", scenario.clone());
    let prepared = recon_prepare::Preparer::new().expect("wasmtime starts").prepare(file, &swaps);
    let mut sim = prepared.unwrap_or_else(|e| panic!("{e}")).sim().expect("the scenario builds");
    sim.run();
    sim.into_trace()
}

/// What `recon explore` finds in a scenario, natively, with the built-in
/// controllers: the answer the playground's search must give.
pub struct Explored {
    /// Plans searched at most (every plan within the default budget).
    pub plans: usize,
    /// The lowest failing plan's index, and the shrunk scenario as
    /// `recon explore` writes it; `None` if nothing broke.
    pub found: Option<(usize, recon_scenario::Scenario)>,
}

/// Runs `recon explore`'s search on `scenario` natively on `jobs` threads,
/// stopping at the first failure, and shrinks it.
pub fn explore_natively(scenario: &recon_scenario::Scenario, jobs: usize) -> Explored {
    use recon_explore::{DEFAULT_BUDGET, Explorer, SearchOptions, search, shard};
    let factory = || -> recon_sim::Instantiate { Box::new(|c| recon_catalog::instantiate(&c.controller)) };
    let explorer = Explorer::new(scenario, &factory, false).expect("the scenario builds");
    let plans = shard(explorer.plans(), DEFAULT_BUDGET, 0, 1);
    let options = SearchOptions { jobs, stop_at_first: true };
    let result = search(&explorer, &plans, &factory, options, &|_| {});
    let found = result.failures.first().map(|first| {
        let shrunk = explorer.shrink(&first.plan, &first.finding, &factory);
        (first.index, explorer.found_scenario(&shrunk))
    });
    Explored { plans: plans.len(), found }
}
