//! The catalogue of hostile plugins: one small module per way a plugin can
//! attack or break the host, each with the one line the host must answer.
//!
//! Each case is a module named after its file (`infinite_loop.wat` loads as
//! `infinite_loop.wasm`, and that name starts every message), or, for the
//! enormous ones, generated here. The table is shared by:
//!
//! - `tests/common/catalogue.rs`: every case against the engine of the
//!   target, wasmtime natively (`tests/sandbox.rs`) and the page's
//!   `WebAssembly` in headless Chromium (`tests/browser.rs`), with the exact
//!   message;
//! - `hostile/sim.rs`: every case in place of one component of #59848, in
//!   both engines too (natively from `tests/tests/hostile_plugins.rs` in
//!   recon-tests, in the browser from `tests/browser.rs`): only that
//!   component crashes, and the rest of the run is unchanged.
//!
//! | case | what it does | the host's answer |
//! |---|---|---|
//! | `infinite_loop` | loops forever | crash: ran out of fuel |
//! | `requeue_spinner` | spends much of its fuel on every call and asks to be called again in 1 ms | crash after 4 calls: ran out of its virtual second's fuel |
//! | `deep_recursion` | recurses without end | crash: call depth limit |
//! | `stack_exhaustion` | recurses with 64 live `i64`s per frame, depth limit lifted | crash: the stack budget |
//! | `large_frames` | recurses through a frame of 4,000 live `i64` locals | crash: the stack budget, at the same call in every engine |
//! | `float_to_int_trap` | converts 1e10 to an `i32` with the trapping conversion | crash: the same words in every engine |
//! | `memory_growth` | grows memory until it cannot | crash: trapped with memory at the cap |
//! | `huge_output_buffer` | returns a 20 MiB output | crash: output above the limit |
//! | `out_of_bounds_result` | returns a pointer outside memory | crash: out-of-bounds result |
//! | `out_of_bounds_length` | returns a 4 GiB length | crash: output above the limit |
//! | `out_of_bounds_alloc` | `recon_alloc` points past the end of memory | crash at init |
//! | `log_out_of_bounds` | logs from outside memory | runs; the log line says so |
//! | `not_utf8`, `not_json`, `unknown_action` | returns bytes that do not decode | crash: does not decode |
//! | `million_actions` | returns 1,000,000 actions (45 MB) | crash: output above the limit |
//! | `too_many_actions` | returns 10,001 actions | crash: actions above the limit |
//! | `hundred_mb_string` | returns a pod with a 100 MiB name | crash: output above the limit |
//! | `forbidden_write` | deletes kinds it may not | runs; the API server refuses |
//! | `forbidden_container` | starts a container, not a node agent | runs; the host refuses |
//! | `nan_payload` | answers by the bits of NaNs | runs, the same in every engine |
//! | `start_function` | has a start function | refused at load |
//! | `import_wasi`, `import_env_memory`, `import_recon_clock` | imports outside the ABI | refused at load |
//! | `import_log_wrong_type` | imports `recon.log` with another type | refused at load |
//! | `export_handle_wrong_signature`, `export_init_global` | ABI exports of the wrong type | refused at load |
//! | `data_segment_past_memory` | a data segment past its memory | refused at load |
//! | `huge_table` | a table of 100,000 elements | refused at load |
//! | `enormous_file` | a 17 MiB data segment | refused at load |
//! | `many_functions` | 20,001 functions | refused at load |
//! | `huge_function` | a function too large once metered | refused at load |
//! | `too_many_locals` | a function with too many locals once metered | refused at load |
//! | `nested_blocks` | a function of 1,001 nested blocks (compiling nesting costs more than its bytes) | refused at load |
//! | `huge_frame` | a function of 20,000 locals, a frame larger than the stack may take on top of a full budget | refused at load |

#![allow(dead_code, reason = "each test file uses a part")]

use recon_abi::ComponentConfig;
use recon_host::Limits;

/// The component of #59848 a hostile plugin replaces in the simulation.
pub const COMPONENT: &str = "kubelet-node-2";

/// The manifest of every case that gets as far as `recon_init` (but
/// `forbidden_write`, which declares a write).
pub const MANIFEST: &str = r#"{"name":"hostile","abiVersion":1,"watches":[{"kind":"Pod"}]}"#;

/// The configuration `recon_init` gets: the one #59848 gives [`COMPONENT`],
/// so that messages that count its bytes read the same in the simulation.
pub fn config() -> ComponentConfig {
    ComponentConfig { name: COMPONENT.into(), node: Some("node-2".into()), ..Default::default() }
}

/// How far a plugin gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// `Module::load` refuses it: the message is the error.
    Load,
    /// `recon_init` (or instantiation, or `recon_alloc` for its input) crashes:
    /// the message is the crash reason.
    Init,
    /// `recon_handle` (or `recon_alloc` for its input) crashes: the message is
    /// the crash reason.
    Handle,
    /// `recon_handle` returns `output` on each of its first `calls` calls in
    /// one virtual second, and crashes on the next: the message is the crash
    /// reason. A plugin whose calls add up to a limit none of them reaches alone.
    HandleAfter {
        /// The calls that succeed.
        calls: u32,
        /// What each of them returns, as JSON.
        output: &'static str,
    },
    /// It runs: the message is the output of `recon_handle`, as JSON.
    Runs,
}

/// One hostile plugin.
pub struct Case {
    /// The file's stem; the plugin is loaded as `<name>.wasm`.
    pub name: &'static str,
    /// The item of the catalogue it stands for.
    pub item: &'static str,
    /// The module.
    pub module: fn() -> Vec<u8>,
    /// The limits it runs under.
    pub limits: Limits,
    /// How far it gets.
    pub stage: Stage,
    /// What the host answers (see [`Stage`]), the same in every engine.
    pub message: &'static str,
    /// Whether `message` is the whole answer; if not, it is how the answer
    /// starts (the rest names a library's error, e.g. serde's list of
    /// variants, which is not the host's to fix).
    pub whole: bool,
    /// What the simulator says, one line per refused action, when the
    /// plugin runs ([`Stage::Runs`]) and asks for what it may not do.
    pub refused: &'static [&'static str],
}

impl Case {
    /// The plugin's file name, which starts every message.
    pub fn file(&self) -> String {
        format!("{}.wasm", self.name)
    }

    /// Whether `answer` is what the host must say.
    pub fn matches(&self, answer: &str) -> bool {
        if self.whole { answer == self.message } else { answer.starts_with(self.message) }
    }
}

/// The case named `name`.
pub fn case(name: &str) -> &'static Case {
    CASES.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no hostile case {name}"))
}

macro_rules! wat {
    ($file:literal) => {
        || wat::parse_str(include_str!(concat!($file, ".wat"))).unwrap_or_else(|e| panic!("{}: {e}", $file))
    };
}

const DEFAULT: Limits = Limits::DEFAULT;

/// Fuel for the infinite loop: enough to show the limit, little enough that
/// a simulation with a dozen restarts of it stays quick.
const LOOP_FUEL: Limits = Limits { fuel_per_call: 10_000_000, ..Limits::DEFAULT };

/// Room for a 100 MiB string in memory, so that the output limit, not the
/// memory cap, is what stops it.
const ROOMY: Limits = Limits { memory_bytes: 128 << 20, ..Limits::DEFAULT };

/// Fuel for the requeue spinner: a call's budget is enough for one of its
/// calls, a virtual second's for four.
// No allowance for input objects: the spinner crashes after the same
// number of calls alone and inside #59848, where its first call brings a list.
const SPIN_FUEL: Limits = Limits {
    fuel_per_call: 10_000_000,
    fuel_per_virtual_second: 25_000_000,
    fuel_per_input_object: 0,
    ..Limits::DEFAULT
};

/// No depth limit, so that the engine's own stack is what runs out.
const NO_DEPTH_LIMIT: Limits = Limits { max_call_depth: u32::MAX, ..Limits::DEFAULT };

/// Every case.
pub const CASES: &[Case] = &[
    // --- run time: crashes of that instance only ----------------------------
    Case {
        name: "infinite_loop",
        item: "infinite loop",
        module: wat!("infinite_loop"),
        limits: LOOP_FUEL,
        stage: Stage::Handle,
        message: "infinite_loop.wasm: recon_handle ran out of fuel (budget 10000000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "requeue_spinner",
        item: "a requeue every millisecond, each call spending much of its fuel",
        module: wat!("requeue_spinner"),
        limits: SPIN_FUEL,
        stage: Stage::HandleAfter {
            calls: 4,
            output: r#"{"actions":[{"type":"requeueAfter","key":"spin","afterMs":1}]}"#,
        },
        message: "requeue_spinner.wasm: recon_handle ran out of fuel for this virtual second (budget 25000000 per \
                  virtual second; the scenario's limits.plugins.fuelPerVirtualSecond raises it, up to 100000000000)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "deep_recursion",
        item: "deep recursion",
        module: wat!("deep_recursion"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "deep_recursion.wasm: recon_handle exceeded the call depth limit (2000; the scenario's limits.plugins.maxCallDepth raises it, up to 100000)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "stack_exhaustion",
        item: "stack exhaustion",
        module: wat!("stack_exhaustion"),
        limits: NO_DEPTH_LIMIT,
        stage: Stage::Handle,
        message: "stack_exhaustion.wasm: recon_handle exhausted its stack budget (262144 bytes)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "large_frames",
        item: "recursion through large frames (thousands of locals)",
        module: large_frames,
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "large_frames.wasm: recon_handle exhausted its stack budget (262144 bytes)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "float_to_int_trap",
        item: "a float-to-integer conversion out of range",
        module: wat!("float_to_int_trap"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "float_to_int_trap.wasm: recon_handle trapped: converted an unrepresentable float to an integer",
        whole: true,
        refused: &[],
    },
    Case {
        name: "memory_growth",
        item: "memory growth past the cap",
        module: wat!("memory_growth"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "memory_growth.wasm: recon_handle trapped: executed an unreachable instruction, with its memory at \
                  the cap (67108864 bytes; the scenario's limits.plugins.memoryBytes raises it, up to 1073741824)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "huge_output_buffer",
        item: "allocation of a huge output buffer",
        module: wat!("huge_output_buffer"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "huge_output_buffer.wasm: recon_handle returned an output of 20971520 bytes, above the limit of \
                  16777216 bytes; the scenario's limits.plugins.maxOutputBytes raises it, up to 268435456",
        whole: true,
        refused: &[],
    },
    Case {
        name: "out_of_bounds_result",
        item: "out-of-bounds pointer returned to the host",
        module: wat!("out_of_bounds_result"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "out_of_bounds_result.wasm: recon_handle returned an out-of-bounds result (100 bytes at \
                  0xffff0000, in a memory of 65536 bytes)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "out_of_bounds_length",
        item: "out-of-bounds length returned to the host",
        module: wat!("out_of_bounds_length"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "out_of_bounds_length.wasm: recon_handle returned an output of 4294967295 bytes, above the limit \
                  of 16777216 bytes; the scenario's limits.plugins.maxOutputBytes raises it, up to 268435456",
        whole: true,
        refused: &[],
    },
    Case {
        name: "out_of_bounds_alloc",
        item: "out-of-bounds pointer from recon_alloc",
        module: wat!("out_of_bounds_alloc"),
        limits: DEFAULT,
        stage: Stage::Init,
        // 41 bytes: the configuration of kubelet-node-2, as JSON.
        message: "out_of_bounds_alloc.wasm: recon_alloc returned 0xfff0, where 41 bytes do not fit in a memory of \
                  65536 bytes",
        whole: true,
        refused: &[],
    },
    Case {
        name: "log_out_of_bounds",
        item: "out-of-bounds pointers and lengths given to recon.log",
        module: wat!("log_out_of_bounds"),
        limits: DEFAULT,
        stage: Stage::Runs,
        message: r#"{"actions":[]}"#,
        whole: true,
        refused: &[],
    },
    Case {
        name: "not_utf8",
        item: "output that is not valid encoding (not UTF-8)",
        module: wat!("not_utf8"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "not_utf8.wasm: recon_handle returned an output that is not UTF-8 (invalid utf-8 sequence of 1 \
                  bytes from index 0)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "not_json",
        item: "output that is not valid encoding (not JSON)",
        module: wat!("not_json"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "not_json.wasm: recon_handle returned an output that does not decode: expected ident at line 1 \
                  column 2",
        whole: true,
        refused: &[],
    },
    Case {
        name: "unknown_action",
        item: "output that is not valid encoding (JSON, not the ABI)",
        module: wat!("unknown_action"),
        limits: DEFAULT,
        stage: Stage::Handle,
        // The rest is serde's list of the actions there are.
        message: "unknown_action.wasm: recon_handle returned an output that does not decode: unknown variant \
                  `launchMissiles`, expected one of ",
        whole: false,
        refused: &[],
    },
    Case {
        name: "million_actions",
        item: "a million actions",
        module: wat!("million_actions"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "million_actions.wasm: recon_handle returned an output of 45000013 bytes, above the limit of \
                  16777216 bytes; the scenario's limits.plugins.maxOutputBytes raises it, up to 268435456",
        whole: true,
        refused: &[],
    },
    Case {
        name: "too_many_actions",
        item: "more actions than a call may return",
        module: wat!("too_many_actions"),
        limits: DEFAULT,
        stage: Stage::Handle,
        message: "too_many_actions.wasm: recon_handle returned 10001 actions, above the limit of 10000 per call; the scenario's limits.plugins.maxActionsPerCall raises it, up to 1000000",
        whole: true,
        refused: &[],
    },
    Case {
        name: "hundred_mb_string",
        item: "a 100 MB string",
        module: wat!("hundred_mb_string"),
        limits: ROOMY,
        stage: Stage::Handle,
        message: "hundred_mb_string.wasm: recon_handle returned an output of 104857696 bytes, above the limit of \
                  16777216 bytes; the scenario's limits.plugins.maxOutputBytes raises it, up to 268435456",
        whole: true,
        refused: &[],
    },
    Case {
        name: "forbidden_write",
        item: "writes to kinds outside the manifest",
        module: wat!("forbidden_write"),
        limits: DEFAULT,
        stage: Stage::Runs,
        message: r#"{"actions":[{"type":"delete","key":{"kind":"StatefulSet","namespace":"default","name":"web"}},{"type":"delete","key":{"kind":"Pod","namespace":"default","name":"web-0"}}]}"#,
        whole: true,
        refused: &[
            "hostile may not delete StatefulSets: its manifest does not declare it",
            "hostile may not delete Pods: its manifest does not declare it",
        ],
    },
    Case {
        name: "forbidden_container",
        item: "writes outside the manifest (containers, not a node agent)",
        module: wat!("forbidden_container"),
        limits: DEFAULT,
        stage: Stage::Runs,
        message: r#"{"actions":[{"type":"startContainer","pod":{"namespace":"default","name":"web-0","uid":"00000000-0000-0000-0000-000000000000"}}]}"#,
        whole: true,
        refused: &["hostile is not a node agent: it may not start or stop containers"],
    },
    Case {
        name: "nan_payload",
        item: "float non-determinism (NaN payloads)",
        module: wat!("nan_payload"),
        limits: DEFAULT,
        stage: Stage::Runs,
        message: r#"{"actions":[]}"#,
        whole: true,
        refused: &[],
    },
    // --- refused at load: never reaches an engine or the simulator -----------
    Case {
        name: "start_function",
        item: "a module with a start function",
        module: wat!("start_function"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "start_function.wasm has a start function, but plugins may not run code when they are instantiated",
        whole: true,
        refused: &[],
    },
    Case {
        name: "import_wasi",
        item: "imports outside the ABI (WASI)",
        module: wat!("import_wasi"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "import_wasi.wasm imports wasi_snapshot_preview1.fd_write, but plugins may only import recon.log \
                  (a WASI import: build for wasm32-unknown-unknown, not wasm32-wasip1, and use no clock, file or randomness)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "import_env_memory",
        item: "imports outside the ABI (env)",
        module: wat!("import_env_memory"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "import_env_memory.wasm imports env.memory, but plugins may only import recon.log",
        whole: true,
        refused: &[],
    },
    Case {
        name: "import_recon_clock",
        item: "imports outside the ABI (the host's module)",
        module: wat!("import_recon_clock"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "import_recon_clock.wasm imports recon.clock_ms, but plugins may only import recon.log",
        whole: true,
        refused: &[],
    },
    Case {
        name: "import_log_wrong_type",
        item: "imports outside the ABI (recon.log of another type)",
        module: wat!("import_log_wrong_type"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "import_log_wrong_type.wasm imports recon.log with type (i64) -> (), but its type is (i32, i32) -> ()",
        whole: true,
        refused: &[],
    },
    Case {
        name: "export_handle_wrong_signature",
        item: "exports with wrong signatures",
        module: wat!("export_handle_wrong_signature"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "export_handle_wrong_signature.wasm exports recon_handle as a function (i32) -> i64, but it must be \
                  a function (i32, i32) -> i64",
        whole: true,
        refused: &[],
    },
    Case {
        name: "export_init_global",
        item: "exports of the wrong kind",
        module: wat!("export_init_global"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "export_init_global.wasm exports recon_init as a global, but it must be a function (i32, i32) -> i64",
        whole: true,
        refused: &[],
    },
    Case {
        name: "data_segment_past_memory",
        item: "a data segment that does not fit",
        module: wat!("data_segment_past_memory"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "data_segment_past_memory.wasm has a data segment of 16 bytes at 0xfff8, past the end of its \
                  initial memory (65536 bytes)",
        whole: true,
        refused: &[],
    },
    Case {
        name: "huge_table",
        item: "a huge table",
        module: wat!("huge_table"),
        limits: DEFAULT,
        stage: Stage::Load,
        message: "huge_table.wasm declares a table of 100000 elements, above the cap of 10000",
        whole: true,
        refused: &[],
    },
    Case {
        name: "enormous_file",
        item: "a valid but enormous module (huge data segments)",
        module: enormous_file,
        limits: DEFAULT,
        stage: Stage::Load,
        message: "enormous_file.wasm is 17825943 bytes, above the limit of 16777216 bytes for a plugin; the scenario's limits.plugins.maxModuleBytes raises it, up to 67108864",
        whole: true,
        refused: &[],
    },
    Case {
        name: "many_functions",
        item: "a valid but enormous module (many functions)",
        module: many_functions,
        limits: DEFAULT,
        stage: Stage::Load,
        message: "many_functions.wasm defines 20005 functions, above the limit of 20000; the scenario's limits.plugins.maxFunctions raises it, up to 100000",
        whole: true,
        refused: &[],
    },
    Case {
        name: "huge_function",
        item: "a valid but enormous module (a function too large once metered)",
        module: huge_function,
        limits: DEFAULT,
        stage: Stage::Load,
        // The sizes follow: the body's, and what metering makes of it.
        message: "huge_function.wasm has a function (index 4) of ",
        whole: false,
        refused: &[],
    },
    Case {
        name: "too_many_locals",
        item: "a valid but enormous module (too many locals once metered)",
        module: too_many_locals,
        limits: DEFAULT,
        stage: Stage::Load,
        message: "too_many_locals.wasm has a function (index 3) with 50001 locals and parameters once metered, above \
                  the engines' limit of 50000",
        whole: true,
        refused: &[],
    },
    Case {
        name: "nested_blocks",
        item: "a small module that is slow to compile (blocks nested past the limit)",
        module: nested_blocks,
        limits: DEFAULT,
        stage: Stage::Load,
        message: "nested_blocks.wasm has a function (index 4) nested 1001 blocks deep, above the limit of 1000",
        whole: true,
        refused: &[],
    },
    Case {
        name: "huge_frame",
        item: "a function whose frame is too large for the stack",
        module: huge_frame,
        limits: DEFAULT,
        stage: Stage::Load,
        // 64 + 8 per local (the metering's fuel count one of them) + 8 for
        // each of the metering's four operands.
        message: "huge_frame.wasm has a function (index 4) whose frame takes 160104 bytes of stack once metered, \
                  above the limit of 131072 bytes per frame",
        whole: true,
        refused: &[],
    },
];

/// A function whose blocks nest `depth` deep: 3 bytes a level, and the
/// native compiler's time grows faster than that.
pub fn nested(depth: usize) -> Vec<u8> {
    generated(&format!("(func {}{})", "(block ".repeat(depth), ")".repeat(depth)))
}

fn nested_blocks() -> Vec<u8> {
    nested(1_001)
}

/// A function of 20,000 `i64` locals.
fn huge_frame() -> Vec<u8> {
    generated(&format!("(func (local {}))", "i64 ".repeat(20_000)))
}

/// `recon_handle` recurses without end through a function that keeps
/// 4,000 `i64` locals live across its call: about 32 KiB a frame.
fn large_frames() -> Vec<u8> {
    let locals = 4_000;
    let set: String = (1..=locals).map(|l| format!("(local.set {l} (i64.extend_i32_u (local.get 0)))")).collect();
    let sum: String = (1..=locals).map(|l| format!("(local.get {l}) i64.add ")).collect();
    generated_plugin(
        "(drop (call $down (i32.const 0))) unreachable",
        &format!(
            "(func $down (param i32) (result i64) (local {})
               {set}
               (call $down (i32.add (local.get 0) (i32.const 1)))
               {sum})",
            "i64 ".repeat(locals)
        ),
    )
}

/// The well-behaved part of every generated module, with `extra` fields.
fn generated(extra: &str) -> Vec<u8> {
    generated_module("i64.const 0", "i64.const 0", extra)
}

/// A generated module that gets as far as `recon_handle`: its `recon_init`
/// returns [`MANIFEST`], its `recon_handle` runs `handle`.
fn generated_plugin(handle: &str, extra: &str) -> Vec<u8> {
    let manifest = format!(r#"(data (i32.const 0x100) "{}")"#, MANIFEST.replace('"', "\\\""));
    let init = format!("i64.const {}", (0x100_i64 << 32) | MANIFEST.len() as i64);
    generated_module(&init, handle, &format!("{manifest} {extra}"))
}

/// A module with the ABI's exports, whose `recon_init` and `recon_handle`
/// run `init` and `handle`, and `extra` fields.
fn generated_module(init: &str, handle: &str, extra: &str) -> Vec<u8> {
    let wat = format!(
        r#"(module
             (memory (export "memory") 272)
             (func (export "recon_abi_version") (result i32) i32.const 1)
             (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
             (func (export "recon_init") (param i32 i32) (result i64) {init})
             (func (export "recon_handle") (param i32 i32) (result i64) {handle})
             {extra})"#
    );
    wat::parse_str(wat).unwrap()
}

/// 17 MiB of data, in a memory that holds it.
fn enormous_file() -> Vec<u8> {
    generated(&format!(r#"(data (i32.const 0) "{}")"#, "x".repeat(17 << 20)))
}

/// 20,001 empty functions besides the ABI's four.
fn many_functions() -> Vec<u8> {
    generated(&"(func)".repeat(20_001))
}

/// One function of 800,000 conditional branches (3.2 MB): each ends a basic
/// block, which metering charges, so it grows about threefold.
fn huge_function() -> Vec<u8> {
    generated(&format!("(func (loop {}))", "(br_if 0 (i32.const 0))".repeat(800_000)))
}

/// `recon_handle` with 49,997 locals besides its 2 parameters, one more
/// for metering's fuel count: the engines' limit of 50,000; and a float
/// addition whose result metering must check for NaN in one more local.
fn too_many_locals() -> Vec<u8> {
    let wat = format!(
        r#"(module
             (memory (export "memory") 1)
             (func (export "recon_abi_version") (result i32) i32.const 1)
             (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
             (func (export "recon_init") (param i32 i32) (result i64) i64.const 0)
             (func (export "recon_handle") (param i32 i32) (result i64) (local {})
               (drop (f64.add (f64.const 1) (f64.const 2)))
               i64.const 0))"#,
        "i32 ".repeat(49_997)
    );
    wat::parse_str(wat).unwrap()
}
