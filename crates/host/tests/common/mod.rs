//! What the sandbox tests share: a plugin hand-written in WAT whose every
//! part can be replaced, and the run-time tests ([`run_time`]), which run
//! unchanged against the engine of the target: wasmtime natively
//! (`tests/sandbox.rs`), the browser's own `WebAssembly` in headless Chromium
//! (`tests/browser.rs`). Both must give the same crash reasons, byte for byte,
//! and the same fuel counts.

pub mod catalogue;
pub mod run_time;

use recon_abi::{ComponentConfig, Input, InputEvent, Instance};
use recon_host::{CompiledPlugin, Engine, Limits, Module};

/// Where the test plugins keep things in their memory.
pub const MANIFEST_AT: u32 = 0x100;
pub const OUTPUT_AT: u32 = 0x400;
pub const JUNK_AT: u32 = 0x800;
pub const INPUT_AT: u32 = 0x1000;

pub const MANIFEST: &str = r#"{"name":"test","abiVersion":1}"#;
pub const OUTPUT: &str = r#"{"actions":[]}"#;

/// A plugin with the ABI's exports; every part can be replaced.
pub struct Plugin {
    pub abi_version: i32,
    pub manifest: &'static str,
    pub output: &'static str,
    pub junk: &'static str,
    pub alloc: String,
    /// The body of `recon_handle (param $ptr i32) (param $len i32) (result i64) (local $i i32)`.
    pub handle: String,
    /// More module fields.
    pub extra: &'static str,
}

impl Default for Plugin {
    fn default() -> Self {
        Plugin {
            abi_version: 1,
            manifest: MANIFEST,
            output: OUTPUT,
            junk: "not json",
            alloc: format!("i32.const {INPUT_AT}"),
            handle: format!("i64.const {}", packed(OUTPUT_AT, OUTPUT.len())),
            extra: "",
        }
    }
}

impl Plugin {
    pub fn handling(handle: impl Into<String>) -> Plugin {
        Plugin { handle: handle.into(), ..Plugin::default() }
    }

    pub fn wat(&self) -> String {
        let Plugin { abi_version, manifest, output, junk, alloc, handle, extra } = self;
        let init = packed(MANIFEST_AT, manifest.len());
        format!(
            r#"(module
              (import "recon" "log" (func $log (param i32 i32)))
              (memory (export "memory") 1)
              (data (i32.const {MANIFEST_AT}) "{}")
              (data (i32.const {OUTPUT_AT}) "{}")
              (data (i32.const {JUNK_AT}) "{}")
              (func (export "recon_abi_version") (result i32) i32.const {abi_version})
              (func (export "recon_alloc") (param i32) (result i32) {alloc})
              (func (export "recon_init") (param i32 i32) (result i64) i64.const {init})
              (func (export "recon_handle") (param $ptr i32) (param $len i32) (result i64) (local $i i32) {handle})
              {extra})"#,
            escape(manifest),
            escape(output),
            escape(junk),
        )
    }

    pub fn bytes(&self) -> Vec<u8> {
        wat::parse_str(self.wat()).unwrap_or_else(|e| panic!("{e}\n{}", self.wat()))
    }

    pub fn compile(&self, limits: &Limits) -> CompiledPlugin {
        let module = Module::load("test.wasm", &self.bytes(), limits).unwrap();
        Engine::new().unwrap().compile(&module).unwrap()
    }
}

/// `(ptr << 32) | len`, as the plugin returns it.
pub fn packed(ptr: u32, len: usize) -> i64 {
    ((u64::from(ptr) << 32) | len as u64) as i64
}

pub fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

pub fn config() -> ComponentConfig {
    ComponentConfig { name: "test".into(), node: Some("node-1".into()), ..Default::default() }
}

/// An input whose JSON grows by one byte per unit of `n`.
pub fn input(n: usize) -> Input {
    Input { time_ms: 7, events: vec![InputEvent::Timer { key: "k".repeat(n) }], containers: None }
}

/// Runs `recon_handle` once on a fresh instance and returns the crash reason.
pub fn handle_crash(plugin: &Plugin, limits: &Limits) -> String {
    let mut instance = plugin.compile(limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(&input(0)).unwrap_err().reason
}

/// `recon_handle` loops once per input byte: 9 instructions per iteration.
pub fn counting_loop() -> Plugin {
    Plugin::handling(format!(
        "(block $done
           (loop $next
             (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
             (local.set $i (i32.add (local.get $i) (i32.const 1)))
             (br $next)))
         i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    ))
}

pub fn fuel_of(compiled: &CompiledPlugin, input: &Input) -> u64 {
    let mut instance = compiled.instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(input).unwrap();
    instance.fuel_used()
}
