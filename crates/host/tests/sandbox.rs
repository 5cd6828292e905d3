//! Hostile and well-behaved plugins, hand-written in WAT, against the
//! wasmtime engine.

use recon_abi::{
    Action, ComponentConfig, Input, InputEvent, Instance, ListMode, Manifest, Output, Verb, WatchSpec, WritePermission,
};
use recon_host::{CompiledPlugin, DEPTH_EXPORT, Engine, FUEL_EXPORT, Limits, Module, PluginError, check};

/// Where the test plugins keep things in their memory.
const MANIFEST_AT: u32 = 0x100;
const OUTPUT_AT: u32 = 0x400;
const JUNK_AT: u32 = 0x800;
const INPUT_AT: u32 = 0x1000;

const MANIFEST: &str = r#"{"name":"test","abiVersion":1}"#;
const OUTPUT: &str = r#"{"actions":[]}"#;

/// A plugin with the ABI's exports; every part can be replaced.
struct Plugin {
    abi_version: i32,
    manifest: &'static str,
    output: &'static str,
    junk: &'static str,
    alloc: String,
    /// The body of `recon_handle (param $ptr i32) (param $len i32) (result i64) (local $i i32)`.
    handle: String,
    /// More module fields.
    extra: &'static str,
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
    fn handling(handle: impl Into<String>) -> Plugin {
        Plugin { handle: handle.into(), ..Plugin::default() }
    }

    fn wat(&self) -> String {
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

    fn bytes(&self) -> Vec<u8> {
        wat::parse_str(self.wat()).unwrap_or_else(|e| panic!("{e}\n{}", self.wat()))
    }

    fn compile(&self, limits: &Limits) -> CompiledPlugin {
        let module = Module::load("test.wasm", &self.bytes(), limits).unwrap();
        Engine::new().unwrap().compile(&module).unwrap()
    }
}

/// `(ptr << 32) | len`, as the plugin returns it.
fn packed(ptr: u32, len: usize) -> i64 {
    ((u64::from(ptr) << 32) | len as u64) as i64
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn config() -> ComponentConfig {
    ComponentConfig { name: "test".into(), node: Some("node-1".into()), ..Default::default() }
}

/// An input whose JSON grows by one byte per unit of `n`.
fn input(n: usize) -> Input {
    Input { time_ms: 7, events: vec![InputEvent::Timer { key: "k".repeat(n) }], containers: None }
}

/// Loads `wat` and returns the error message.
fn refusal(wat: &str) -> String {
    let bytes = wat::parse_str(wat).unwrap();
    Module::load("bad.wasm", &bytes, &Limits::default()).unwrap_err().to_string()
}

/// Runs `recon_handle` once on a fresh instance and returns the crash reason.
fn handle_crash(plugin: &Plugin, limits: &Limits) -> String {
    let mut instance = plugin.compile(limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(&input(0)).unwrap_err().reason
}

// --- refused at load -------------------------------------------------------

#[test]
fn a_file_that_is_not_wasm_is_refused_with_what_it_starts_with() {
    let err = Module::load("x.wasm", b"\x7fELF\x02\x01\x01\x00\x00\x00", &Limits::default()).unwrap_err();
    assert!(matches!(err, PluginError::NotWasm { .. }));
    assert_eq!(err.to_string(), r#"x.wasm is not a WebAssembly module (it starts with "\x7fELF\x02\x01\x01\x00")"#);
    let err = Module::load("empty.wasm", b"", &Limits::default()).unwrap_err();
    assert_eq!(err.to_string(), "empty.wasm is not a WebAssembly module (it is empty)");
    let err = Module::load("x.wat", b"(module)", &Limits::default()).unwrap_err();
    assert_eq!(err.to_string(), r#"x.wat is not a WebAssembly module (it starts with "(module)")"#);
}

#[test]
fn a_truncated_module_is_refused_with_the_offset() {
    let bytes = Plugin::default().bytes();
    let err = Module::load("cut.wasm", &bytes[..bytes.len() - 7], &Limits::default()).unwrap_err();
    assert!(matches!(err, PluginError::Invalid { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.starts_with("cut.wasm is not a valid WebAssembly module: "), "{message}");
    assert!(message.contains("(at offset 0x"), "{message}");
}

#[test]
fn a_component_is_refused_as_a_component() {
    let err = Module::load("c.wasm", b"\0asm\x0d\x00\x01\x00", &Limits::default()).unwrap_err();
    assert!(matches!(err, PluginError::Component { .. }), "{err:?}");
    assert!(err.to_string().starts_with("c.wasm is a WebAssembly component"));
}

#[test]
fn a_missing_export_is_named_with_its_type() {
    let wat = Plugin::default().wat().replace(r#"(export "recon_handle")"#, "");
    assert_eq!(refusal(&wat), "bad.wasm does not export recon_handle, which must be a function (i32, i32) -> i64");
    let wat = Plugin::default().wat().replace(r#"(memory (export "memory") 1)"#, "(memory 1)");
    assert_eq!(refusal(&wat), "bad.wasm does not export memory, which must be a memory");
}

#[test]
fn an_export_of_the_wrong_type_is_named_with_both_types() {
    let wat = Plugin::default().wat().replace(
        r#"(func (export "recon_alloc") (param i32) (result i32)"#,
        r#"(func (export "recon_alloc") (param i64) (result i32) i32.const 0 return"#,
    );
    assert_eq!(
        refusal(&wat),
        "bad.wasm exports recon_alloc as a function (i64) -> i32, but it must be a function (i32) -> i32"
    );
    let wat = Plugin { extra: r#"(global (export "recon_init") i32 (i32.const 0))"#, ..Plugin::default() }
        .wat()
        .replace(r#"(func (export "recon_init")"#, "(func");
    assert_eq!(refusal(&wat), "bad.wasm exports recon_init as a global, but it must be a function (i32, i32) -> i64");
}

#[test]
fn a_wasi_import_is_refused_by_name() {
    let wat = Plugin::default().wat().replace(
        r#"(import "recon" "log""#,
        r#"(import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
           (import "recon" "log""#,
    );
    assert_eq!(
        refusal(&wat),
        "bad.wasm imports wasi_snapshot_preview1.fd_write, but plugins may only import recon.log"
    );
}

#[test]
fn recon_log_with_the_wrong_type_is_refused() {
    let wat = Plugin::default().wat().replace("(func $log (param i32 i32))", "(func $log (param i64))");
    assert_eq!(refusal(&wat), "bad.wasm imports recon.log with type (i64) -> (), but its type is (i32, i32) -> ()");
}

#[test]
fn a_start_function_is_refused() {
    let wat = Plugin { extra: "(func $boot) (start $boot)", ..Plugin::default() }.wat();
    assert_eq!(refusal(&wat), "bad.wasm has a start function, but plugins may not run code when they are instantiated");
}

#[test]
fn memory_declared_above_the_cap_is_refused_and_at_the_cap_is_accepted() {
    let wat = Plugin::default().wat().replace(r#"(memory (export "memory") 1)"#, r#"(memory (export "memory") 1025)"#);
    assert_eq!(refusal(&wat), "bad.wasm declares 67174400 bytes of initial memory, above the cap of 67108864 bytes");
    let wat = wat.replace("1025)", "1024)");
    assert!(Module::load("ok.wasm", &wat::parse_str(wat).unwrap(), &Limits::default()).is_ok());
}

#[test]
fn shared_64_bit_and_second_memories_are_refused() {
    let memory = r#"(memory (export "memory") 1)"#;
    let wat = Plugin::default().wat();
    let shared = refusal(&wat.replace(memory, r#"(memory (export "memory") 1 1 shared)"#));
    assert_eq!(shared, "bad.wasm declares a shared memory, but plugin memory may not be shared (no threads)");
    let wide = refusal(&wat.replace(memory, r#"(memory (export "memory") i64 1)"#));
    assert_eq!(wide, "bad.wasm declares a 64-bit memory, but plugin memory is 32-bit");
    let two = refusal(&wat.replace(memory, &format!("{memory} (memory 1)")));
    assert_eq!(two, "bad.wasm declares 2 memories, but a plugin has exactly one");
}

#[test]
fn threads_relaxed_simd_and_tail_calls_are_refused_as_proposals() {
    let uses = |handle: &str| refusal(&Plugin::handling(handle).wat());
    let atomics = uses("(drop (i32.atomic.load (i32.const 0))) i64.const 0");
    assert!(
        atomics.starts_with("bad.wasm uses the WebAssembly threads proposal, which plugins may not use"),
        "{atomics}"
    );
    let relaxed = uses("(drop (i32x4.relaxed_trunc_f32x4_s (v128.const i32x4 0 0 0 0))) i64.const 0");
    assert!(relaxed.starts_with("bad.wasm uses the WebAssembly relaxed simd proposal"), "{relaxed}");
    let tail = uses("(return_call 0)");
    assert!(tail.starts_with("bad.wasm uses the WebAssembly tail call proposal"), "{tail}");
    // SIMD itself is fine.
    let simd = Plugin::handling("(drop (i32x4.add (v128.const i32x4 1 2 3 4) (v128.const i32x4 0 0 0 0))) i64.const 0");
    assert!(Module::load("simd.wasm", &simd.bytes(), &Limits::default()).is_ok());
}

#[test]
fn the_names_of_the_meters_are_reserved() {
    let wat = Plugin { extra: r#"(global (export "recon_fuel") i64 (i64.const 0))"#, ..Plugin::default() }.wat();
    assert_eq!(refusal(&wat), "bad.wasm exports recon_fuel, a name the host reserves for its meters");
}

#[test]
fn instrumentation_lowers_the_memory_maximum_to_the_cap_and_exports_the_meters() {
    let instrumented = |memory_bytes| {
        let limits = Limits { memory_bytes, ..Limits::default() };
        let module = Module::load("test.wasm", &Plugin::default().bytes(), &limits).unwrap();
        let mut maximum = None;
        let mut exports = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(module.bytes()) {
            match payload.unwrap() {
                wasmparser::Payload::MemorySection(reader) => {
                    maximum = reader.into_iter().next().unwrap().unwrap().maximum;
                }
                wasmparser::Payload::ExportSection(reader) => {
                    exports.extend(reader.into_iter().map(|e| e.unwrap()).map(|e| (e.name.to_owned(), e.kind)));
                }
                _ => {}
            }
        }
        (maximum, exports)
    };
    let (maximum, exports) = instrumented(3 << 20);
    assert_eq!(maximum, Some(48), "3 MiB is 48 pages");
    for meter in [FUEL_EXPORT, DEPTH_EXPORT] {
        assert!(exports.contains(&(meter.to_owned(), wasmparser::ExternalKind::Global)), "{exports:?}");
    }
    assert_eq!(instrumented(u64::MAX).0, Some(65_536), "a 32-bit memory addresses at most 4 GiB");
}

// --- run time ----------------------------------------------------------------

#[test]
fn a_well_behaved_plugin_round_trips_manifest_input_output_and_logs() {
    let manifest = r#"{"name":"echo","abiVersion":1,"watches":[{"kind":"Pod","fieldSelector":"spec.nodeName=node-1"}],"writes":[{"kind":"Pod","verbs":["create","delete"]}],"nodeAgent":true,"listMode":"quorum"}"#;
    let output = r#"{"actions":[{"type":"requeueAfter","key":"again","afterMs":250}]}"#;
    let plugin = Plugin {
        manifest,
        output,
        // Logs its input, then returns the output.
        handle: format!("(call $log (local.get $ptr) (local.get $len)) i64.const {}", packed(OUTPUT_AT, output.len())),
        ..Plugin::default()
    };
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    let expected = Manifest {
        name: "echo".into(),
        abi_version: 1,
        watches: vec![WatchSpec {
            kind: "Pod".into(),
            field_selector: "spec.nodeName=node-1".into(),
            ..WatchSpec::default()
        }],
        writes: vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] }],
        node_agent: true,
        list_mode: ListMode::Quorum,
    };
    assert_eq!(instance.init(&config()).unwrap(), expected);
    assert!(instance.fuel_used() > 0);
    for n in [0, 5] {
        let out = instance.handle(&input(n)).unwrap();
        assert_eq!(out, Output { actions: vec![Action::RequeueAfter { key: "again".into(), after_ms: 250 }] });
        assert_eq!(instance.take_logs(), [serde_json::to_string(&input(n)).unwrap()]);
    }
    assert!(instance.take_logs().is_empty());
}

#[test]
fn check_starts_the_plugin_and_returns_its_manifest() {
    let manifest = check("test.wasm", &Plugin::default().bytes(), &Limits::default()).unwrap();
    assert_eq!(manifest, Manifest { name: "test".into(), abi_version: 1, ..Manifest::default() });
    let err = check("test.wasm", &Plugin::handling("unreachable").bytes()[..40], &Limits::default()).unwrap_err();
    assert!(matches!(err, PluginError::Invalid { .. }), "{err:?}");
}

#[test]
fn a_wrong_abi_version_is_a_crash_at_instantiation() {
    let plugin = Plugin { abi_version: 2, ..Plugin::default() };
    let err = check("v2.wasm", &plugin.bytes(), &Limits::default()).unwrap_err();
    assert!(matches!(err, PluginError::Crash(_)), "{err:?}");
    assert_eq!(err.to_string(), "v2.wasm: recon_abi_version returned 2, but this host speaks ABI version 1");
}

#[test]
fn a_manifest_for_another_abi_version_crashes_init() {
    let plugin = Plugin { manifest: r#"{"name":"test","abiVersion":7}"#, ..Plugin::default() };
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    let crash = instance.init(&config()).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_init returned a manifest for ABI version 7, but this host speaks ABI version 1"
    );
}

#[test]
fn an_infinite_loop_runs_out_of_fuel_and_the_host_stays_usable() {
    let limits = Limits { fuel_per_call: 1_000_000, ..Limits::default() };
    let compiled = Plugin::handling("(loop (br 0)) unreachable").compile(&limits);
    let mut instance = compiled.instantiate().unwrap();
    instance.init(&config()).unwrap();
    let crash = instance.handle(&input(0)).unwrap_err();
    assert_eq!(crash.reason, "test.wasm: recon_handle ran out of fuel (budget 1000000 per call)");
    assert_eq!(instance.fuel_used(), 1_000_000);
    // The instance is dead, but a fresh one from the same compiled plugin works.
    let again = instance.handle(&input(0)).unwrap_err();
    assert_eq!(again.reason, "test.wasm: recon_handle was called after the instance crashed");
    let mut fresh = compiled.instantiate().unwrap();
    assert_eq!(fresh.init(&config()).unwrap().name, "test");
}

#[test]
fn unbounded_memory_growth_stops_at_the_cap() {
    let limits = Limits { memory_bytes: 1 << 20, ..Limits::default() };
    // Grows until memory.grow says -1, then aborts as Rust's allocator would.
    let plugin = Plugin::handling("(loop (br_if 0 (i32.ne (memory.grow (i32.const 1)) (i32.const -1)))) unreachable");
    assert_eq!(
        handle_crash(&plugin, &limits),
        "test.wasm: recon_handle trapped: executed an unreachable instruction, with its memory at the cap (1048576 bytes)"
    );
    // One big request fails too, and the module can report it.
    let plugin = Plugin::handling(format!(
        "(if (i32.ne (memory.grow (i32.const 100)) (i32.const -1)) (then unreachable)) i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    ));
    let mut instance = plugin.compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap(), Output::default());
}

#[test]
fn a_trap_crashes_the_instance_with_an_engine_independent_reason() {
    let trap = |handle: &str| handle_crash(&Plugin::handling(handle), &Limits::default());
    assert_eq!(trap("unreachable"), "test.wasm: recon_handle trapped: executed an unreachable instruction");
    assert_eq!(
        trap("(drop (i32.load (i32.const -4))) i64.const 0"),
        "test.wasm: recon_handle trapped: accessed memory out of bounds"
    );
    assert_eq!(
        trap("(drop (i32.div_u (i32.const 1) (local.get $i))) i64.const 0"),
        "test.wasm: recon_handle trapped: divided an integer by zero"
    );
}

#[test]
fn deep_recursion_crashes_at_exactly_the_depth_limit() {
    let recursive = |n: u32| Plugin {
        // recon_handle is depth 1, rec(n) depth 2, ..., rec(0) depth n + 2.
        handle: format!("(drop (call $rec (i32.const {n}))) i64.const {}", packed(OUTPUT_AT, OUTPUT.len())),
        extra: "(func $rec (param i32) (result i32)
                  (if (result i32) (local.get 0)
                    (then (call $rec (i32.sub (local.get 0) (i32.const 1))))
                    (else (i32.const 0))))",
        ..Plugin::default()
    };
    let limits = Limits { max_call_depth: 10, ..Limits::default() };
    let mut instance = recursive(8).compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap(), Output::default());
    assert_eq!(handle_crash(&recursive(9), &limits), "test.wasm: recon_handle exceeded the call depth limit (10)");
    // Unbounded recursion hits the default limit before the engine's stack.
    assert_eq!(
        handle_crash(&recursive(1_000_000), &Limits::default()),
        "test.wasm: recon_handle exceeded the call depth limit (2000)"
    );
}

#[test]
fn return_and_branches_to_the_function_label_unwind_the_depth() {
    // 50 calls in sequence, each leaving early, under a depth limit of 10:
    // a missed decrement would trip the limit.
    let plugin = Plugin {
        handle: format!(
            "(local.set $i (i32.const 50))
             (loop $again
               (drop (call $returns (i32.const 1)))
               (drop (call $branches))
               (br_if $again (local.tee $i (i32.sub (local.get $i) (i32.const 1)))))
             i64.const {}",
            packed(OUTPUT_AT, OUTPUT.len())
        ),
        extra: "(func $returns (param i32) (result i32)
                  (block (block (if (local.get 0) (then (return (i32.const 7))))))
                  i32.const 8)
                (func $branches (result i32)
                  (block (result i32) (block (result i32) (br 2 (i32.const 7)))))",
        ..Plugin::default()
    };
    let limits = Limits { max_call_depth: 10, ..Limits::default() };
    let mut instance = plugin.compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap(), Output::default());
}

#[test]
fn output_that_is_not_json_or_not_utf8_crashes() {
    let not_json = Plugin::handling(format!("i64.const {}", packed(JUNK_AT, 8)));
    assert_eq!(
        handle_crash(&not_json, &Limits::default()),
        "test.wasm: recon_handle returned an output that does not decode: expected ident at line 1 column 2"
    );
    let not_utf8 =
        Plugin::handling(format!("i64.const {}", packed(JUNK_AT, 1))).wat().replace(r#""not json""#, r#""\ff""#);
    let module = Module::load("test.wasm", &wat::parse_str(not_utf8).unwrap(), &Limits::default()).unwrap();
    let mut instance = Engine::new().unwrap().compile(&module).unwrap().instantiate().unwrap();
    instance.init(&config()).unwrap();
    let crash = instance.handle(&input(0)).unwrap_err();
    assert!(crash.reason.starts_with("test.wasm: recon_handle returned an output that is not UTF-8"), "{crash}");
}

#[test]
fn an_out_of_bounds_output_crashes() {
    let plugin = Plugin::handling(format!("i64.const {}", packed(0xffff_0000, 100)));
    assert_eq!(
        handle_crash(&plugin, &Limits::default()),
        "test.wasm: recon_handle returned an out-of-bounds result (100 bytes at 0xffff0000, in a memory of 65536 bytes)"
    );
    // Straddling the end of memory is out of bounds too.
    let plugin = Plugin::handling(format!("i64.const {}", packed(65_530, 7)));
    assert!(handle_crash(&plugin, &Limits::default()).contains("out-of-bounds result (7 bytes at 0xfffa"));
}

#[test]
fn an_allocator_that_fails_or_points_outside_memory_crashes() {
    let zero = Plugin { alloc: "i32.const 0".into(), ..Plugin::default() };
    let mut instance = zero.compile(&Limits::default()).instantiate().unwrap();
    let crash = instance.init(&config()).unwrap_err();
    assert_eq!(crash.reason, "test.wasm: recon_alloc returned 0 (could not allocate 31 bytes)");
    let outside = Plugin { alloc: "i32.const 65530".into(), ..Plugin::default() };
    let mut instance = outside.compile(&Limits::default()).instantiate().unwrap();
    let crash = instance.init(&config()).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_alloc returned 0xfffa, where 31 bytes do not fit in a memory of 65536 bytes"
    );
}

// --- fuel --------------------------------------------------------------------

/// `recon_handle` loops once per input byte: 9 instructions per iteration.
fn counting_loop() -> Plugin {
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

fn fuel_of(compiled: &CompiledPlugin, input: &Input) -> u64 {
    let mut instance = compiled.instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(input).unwrap();
    instance.fuel_used()
}

#[test]
fn the_same_call_on_a_fresh_instance_consumes_exactly_the_same_fuel() {
    let compiled = counting_loop().compile(&Limits::default());
    let first = fuel_of(&compiled, &input(100));
    assert!(first > 900, "{first}");
    for _ in 0..3 {
        assert_eq!(fuel_of(&compiled, &input(100)), first);
    }
    // Compiled again, by another engine: still the same count.
    assert_eq!(fuel_of(&counting_loop().compile(&Limits::default()), &input(100)), first);
}

#[test]
fn a_loop_costs_exactly_its_body_per_iteration() {
    let compiled = counting_loop().compile(&Limits::default());
    let short = fuel_of(&compiled, &input(10));
    let long = fuel_of(&compiled, &input(1_010));
    assert_eq!(long - short, 1_000 * 9, "short {short}, long {long}");
    // alloc (i32.const, end) + the entry (block, loop) + the exit test
    // (4) + the tail (i64.const, end), plus 9 per input byte.
    let len = serde_json::to_vec(&input(10)).unwrap().len() as u64;
    assert_eq!(short, 2 + 2 + 4 + 2 + 9 * len);
}

#[test]
fn bulk_memory_costs_one_unit_per_8_bytes() {
    let fill = Plugin::handling(format!(
        "(memory.fill (i32.const 0x2000) (i32.const 0) (i32.mul (local.get $len) (i32.const 8)))
         i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    ))
    .compile(&Limits::default());
    let short = fuel_of(&fill, &input(10));
    let long = fuel_of(&fill, &input(1_010));
    assert_eq!(long - short, 1_000);
}

#[test]
fn logs_are_bounded_and_say_how_many_were_dropped() {
    let plugin = Plugin::handling(format!(
        "(local.set $i (i32.const 1500))
         (loop $again
           (call $log (i32.const {MANIFEST_AT}) (i32.const 4))
           (br_if $again (local.tee $i (i32.sub (local.get $i) (i32.const 1)))))
         (call $log (i32.const -8) (i32.const 16))
         i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    ));
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(&input(0)).unwrap();
    let logs = instance.take_logs();
    assert_eq!(logs.len(), 1_001);
    assert_eq!(logs[0], r#"{"na"#);
    assert_eq!(logs[1_000], "(501 more log lines dropped)");
    assert!(instance.take_logs().is_empty());
}
