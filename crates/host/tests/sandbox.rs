//! Hostile and well-behaved plugins, hand-written in WAT, against the
//! wasmtime engine: what is refused at load here, and the tests shared with
//! the browser engine's: the catalogue of hostile plugins (`hostile/`, run by
//! `common/catalogue.rs`) and the run-time tests (`common/run_time.rs`).

#![cfg(not(target_arch = "wasm32"))]

mod common;
#[path = "hostile/mod.rs"]
mod hostile;

use common::*;
use recon_abi::Instance;
use recon_host::{DEPTH_EXPORT, FUEL_EXPORT, Limits, Module, PluginError};

/// Loads `wat` and returns the error message.
fn refusal(wat: &str) -> String {
    let bytes = wat::parse_str(wat).unwrap();
    Module::load("bad.wasm", &bytes, &Limits::default()).unwrap_err().to_string()
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
fn memory_declared_above_the_cap_is_refused_and_at_the_cap_is_accepted() {
    let wat = Plugin::default().wat().replace(r#"(memory (export "memory") 1)"#, r#"(memory (export "memory") 1025)"#);
    assert_eq!(
        refusal(&wat),
        "bad.wasm declares 67174400 bytes of initial memory, above the cap of 67108864 bytes; the scenario's limits.plugins.memoryBytes raises it, up to 1073741824"
    );
    let wat = wat.replace("1025)", "1024)");
    assert!(Module::load("ok.wasm", &wat::parse_str(wat).unwrap(), &Limits::default()).is_ok());
}

/// The catalogue's `nested_blocks` (1,001 levels) is refused; the deepest
/// nesting allowed loads and compiles. How long that takes is measured by
/// `cargo bench -p recon-tests --bench sandbox` (BENCHMARKS.md), not here.
#[test]
fn blocks_nested_to_the_limit_compile_and_one_more_level_is_refused() {
    let deepest = hostile::nested(1_000);
    let module = Module::load("deepest.wasm", &deepest, &Limits::default()).expect("the limit itself is allowed");
    recon_host::Engine::new().unwrap().compile(&module).expect("and compiles");
    let refused = Module::load("deeper.wasm", &hostile::nested(1_001), &Limits::default()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "deeper.wasm has a function (index 4) nested 1001 blocks deep, above the limit of 1000"
    );
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

// --- wasmtime's own fuel -----------------------------------------------------

/// Issue 17 turned wasmtime's own fuel off: the instrumented counter alone
/// stops a call. With the backstop on again (as the fuzz target
/// `plugin_module` runs every module), the instrumented counter still runs
/// out first, at the same instruction: the crash and the fuel used are
/// those of an engine without it.
#[test]
fn with_wasmtimes_fuel_on_as_well_the_instrumented_counter_still_stops_a_loop_first() {
    let limits = Limits { fuel_per_call: 50_000, ..Limits::default() };
    let module = Module::load("test.wasm", &Plugin::handling("(loop (br 0)) unreachable").bytes(), &limits).unwrap();
    let mut crashes = Vec::new();
    for engine in [recon_host::Engine::new().unwrap(), recon_host::Engine::with_fuel_backstop().unwrap()] {
        let mut instance = engine.compile(&module).unwrap().instantiate().unwrap();
        instance.init(&config()).unwrap();
        crashes.push((instance.handle(&input(0)).unwrap_err().reason, instance.fuel_used()));
    }
    assert_eq!(crashes[0], ("test.wasm: recon_handle ran out of fuel (budget 50000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)".to_owned(), 50_000));
    assert_eq!(crashes[1], crashes[0]);
}

// --- the pool of instance slots ----------------------------------------------

/// `Engine::pooled` starts instances in a fixed number of slots; one that
/// finds them all taken starts without the pool, and a run must not be able
/// to tell: each instance here grows its memory a page at a time until the
/// plugin's cap refuses a page, checks that it reached exactly the cap, and
/// answers, with the same output and the same fuel in every engine.
#[test]
fn an_instance_that_finds_every_slot_taken_starts_without_the_pool_and_behaves_the_same() {
    let limits = Limits { memory_bytes: 40 << 16, ..Limits::default() };
    let handle = format!(
        "(loop $more (br_if $more (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
         (if (i32.ne (memory.size) (i32.const 40)) (then unreachable))
         i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    );
    let module = Module::load("test.wasm", &Plugin::handling(handle).bytes(), &limits).unwrap();
    let answer = |instance: &mut recon_host::WasmInstance| {
        instance.init(&config()).unwrap();
        let output = instance.handle(&input(0)).map_err(|c| c.reason);
        (output.map(|o| o.actions.len()), instance.fuel_used())
    };
    let plain = recon_host::Engine::new().unwrap();
    assert!(!plain.is_pooled());
    let expected = answer(&mut plain.compile(&module).unwrap().instantiate().unwrap());
    assert_eq!(expected.0, Ok(0), "the plugin reached its cap and answered");

    let pooled = recon_host::Engine::pooled(2).unwrap();
    assert!(pooled.is_pooled(), "this machine can reserve a pool of two slots");
    let plugin = pooled.compile(&module).unwrap();
    // Two in the pool's slots, two more outside it, all alive at once.
    let mut instances: Vec<_> = (0..4).map(|i| plugin.instantiate().unwrap_or_else(|e| panic!("{i}: {e:?}"))).collect();
    for (i, instance) in instances.iter_mut().enumerate() {
        assert_eq!(answer(instance), expected, "instance {i}");
    }
    // Slots freed are taken again.
    instances.clear();
    assert_eq!(answer(&mut plugin.instantiate().unwrap()), expected, "an instance in a freed slot");
}

/// A slot's next instance starts as a fresh one would, however its last
/// instance left the memory: the pool resets only the pages that were
/// touched where the kernel can tell which (`pagemap_scan`), and a plugin
/// that could read what another left would make a trace depend on what ran
/// before. Each instance here grows its memory to 4 MiB, checks that a data
/// segment's byte and words in the first page, in the part of the memory a
/// slot keeps resident (2 MiB) and beyond it read as a fresh instance's do,
/// then overwrites them all.
#[test]
fn a_slot_reused_shows_its_next_instance_nothing_of_the_last() {
    const ADDRESSES: [u32; 3] = [0x8000, 0x15_0000, 0x30_0000];
    let [a, b, c] = ADDRESSES.map(|at| format!("(i32.load (i32.const {at}))"));
    let fresh = format!("(i32.or (i32.or {a} {b}) {c})");
    let dirty = ADDRESSES.map(|at| format!("(i32.store (i32.const {at}) (i32.const -1))")).join(" ");
    let handle = format!(
        "(drop (memory.grow (i32.const 63)))
         (if (i32.ne (i32.load8_u (i32.const {JUNK_AT})) (i32.const 110)) (then unreachable)) ;; 'n' of \"not json\"
         (if {fresh} (then unreachable))
         (i32.store8 (i32.const {JUNK_AT}) (i32.const 0))
         {dirty}
         i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    );
    let module = Module::load("test.wasm", &Plugin::handling(handle).bytes(), &Limits::default()).unwrap();
    let pooled = recon_host::Engine::pooled(1).unwrap();
    let plugin = pooled.compile(&module).unwrap();
    for i in 0..3 {
        let mut instance = plugin.instantiate().unwrap();
        instance.init(&config()).unwrap();
        let output = instance.handle(&input(0)).map_err(|c| c.reason);
        assert_eq!(output.map(|o| o.actions.len()), Ok(0), "instance {i} found its memory as a fresh one's");
    }
}
