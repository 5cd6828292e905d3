//! A plugin for the tests of plugin logs and panics (issue 20), built
//! with the others by `cargo xtask plugins` but not shipped: it watches
//! Pods, logs one line at `recon_init` and one per `recon_handle` call
//! (`handle at 1200ms: 3 events`), and, once the input's time reaches its
//! `panicAtMs` parameter, panics with `asked to panic at 1200ms`, which
//! the SDK's panic hook logs and the host's crash reason carries. Once the
//! time reaches its `readClockAtMs` parameter it reads the real clock,
//! `std::time::Instant::now()`, which a plugin does not have.

use recon_abi::{ABI_VERSION, ComponentConfig, Controller, Input, Manifest, Output, WatchSpec};

/// The controller (see the crate documentation).
#[derive(Clone, Debug, Default)]
pub struct Logging {
    /// When to panic, if ever: the `panicAtMs` parameter.
    panic_at_ms: Option<u64>,
    /// When to read the clock, if ever: the `readClockAtMs` parameter.
    read_clock_at_ms: Option<u64>,
}

impl Controller for Logging {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.panic_at_ms = config.params.get("panicAtMs").and_then(|v| v.as_u64());
        self.read_clock_at_ms = config.params.get("readClockAtMs").and_then(|v| v.as_u64());
        recon_sdk::log(&format!("init {}", config.name));
        Manifest {
            name: "logging".into(),
            abi_version: ABI_VERSION,
            watches: vec![WatchSpec { kind: "Pod".into(), ..WatchSpec::default() }],
            ..Manifest::default()
        }
    }

    fn handle(&mut self, input: &Input) -> Output {
        recon_sdk::log(&format!("handle at {}ms: {} events", input.time_ms, input.events.len()));
        if self.panic_at_ms.is_some_and(|at| input.time_ms >= at) {
            panic!("asked to panic at {}ms", input.time_ms);
        }
        if self.read_clock_at_ms.is_some_and(|at| input.time_ms >= at) {
            recon_sdk::log(&format!("{:?}", std::time::Instant::now()));
        }
        Output::default()
    }
}

recon_sdk::export_controller!(Logging::default());
