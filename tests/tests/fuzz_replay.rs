//! The fuzz targets (`fuzz/`), replayed without a fuzzer: every committed
//! corpus input and every regression (a crash a fuzzer once found) goes
//! through the same functions the fuzzer calls, in a plain `cargo test`.
//!
//! `write_fuzz_seeds` (ignored; run it by name) rewrites the generated part
//! of the corpus: what the built-in controllers really return, for
//! `plugin_output`, and small modules that use most of WebAssembly 2.0,
//! for `plugin_module`.

use std::path::{Path, PathBuf};

use recon_tests::fuzz::{TARGETS, plugin_module, plugin_output, recorded_output_seed};

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files directly in `dir`, sorted; none if it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("readable entry").path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// Runs `target` on every file in `dir`; returns how many, and fails naming
/// the file that panicked.
fn replay(name: &str, target: fn(&[u8]), dir: &Path) -> usize {
    // As under the fuzzer, a panic fails even if something caught it.
    recon_tests::fuzz::install_panic_hook();
    let files = files(dir);
    for file in &files {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let before = recon_tests::fuzz::panics_outside_controllers();
        if std::panic::catch_unwind(|| target(&data)).is_err()
            || recon_tests::fuzz::panics_outside_controllers() > before
        {
            panic!(
                "fuzz target {name} panicked on {} (reproduce: cargo fuzz run --sanitizer none {name} {})",
                file.display(),
                file.display()
            );
        }
    }
    files.len()
}

#[test]
fn every_corpus_input_and_regression_replays_cleanly() {
    // The shipped scenarios are part of the scenario parser's corpus.
    assert!(replay("scenario_file", recon_tests::fuzz::scenario_file, &recon_tests::scenarios_dir()) > 0);
    for (name, target) in TARGETS {
        let corpus = replay(name, *target, &fuzz_dir().join("corpus").join(name));
        replay(name, *target, &fuzz_dir().join("regressions").join(name));
        assert!(
            corpus > 0,
            "fuzz/corpus/{name} is empty: run `cargo test -p recon-tests --test fuzz_replay -- --ignored`"
        );
    }
}

#[test]
fn what_the_built_in_controllers_return_replays_through_plugin_output() {
    for builtin in recon_catalog::BUILTINS {
        let seed = recorded_output_seed(builtin.name);
        assert!(seed.contains(&0), "{} returned no output with actions", builtin.name);
        plugin_output(&seed);
    }
}

#[test]
fn the_module_seeds_load_so_that_fuzzing_reaches_instrumentation() {
    for (name, wat) in MODULE_SEEDS.iter().filter(|(name, _)| !name.starts_with("refused-")) {
        let bytes = wat::parse_str(wat).unwrap_or_else(|e| panic!("{name}: {e}"));
        recon_host::Module::load(name, &bytes, &recon_host::Limits::default()).unwrap_or_else(|e| panic!("{e}"));
        plugin_module(&bytes);
    }
}

/// Found by `plugin_module` (fuzz/regressions/plugin_module/import-name-with-newline.wasm).
#[test]
fn an_import_name_with_a_newline_still_gives_a_one_line_message() {
    let wasm = wat::parse_str(r#"(module (import "r\0a." "x" (func)) (memory (export "memory") 1))"#).unwrap();
    let error = recon_host::Module::load("p.wasm", &wasm, &recon_host::Limits::default()).unwrap_err();
    assert!(matches!(error, recon_host::PluginError::Import { .. }), "{error:?}");
    assert!(!error.to_string().contains('\n'), "not one line: {error}");
    let found = std::fs::read(fuzz_dir().join("regressions/plugin_module/import-name-with-newline.wasm")).unwrap();
    let error = recon_host::Module::load("p.wasm", &found, &recon_host::Limits::default()).unwrap_err();
    assert!(!error.to_string().contains('\n'), "not one line: {error}");
}

/// Rewrites the generated seeds in `fuzz/corpus/`.
#[test]
#[ignore = "writes files: run by hand after changing a controller or the seeds"]
fn write_fuzz_seeds() {
    let write = |target: &str, file: &str, bytes: &[u8]| {
        let dir = fuzz_dir().join("corpus").join(target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        std::fs::write(dir.join(file), bytes).expect("seed written");
    };
    for builtin in recon_catalog::BUILTINS {
        write("plugin_output", &format!("{}.bin", builtin.name), &recorded_output_seed(builtin.name));
    }
    for (name, wat) in MODULE_SEEDS {
        write("plugin_module", &format!("{name}.wasm"), &wat::parse_str(wat).expect("seed WAT parses"));
    }
}

/// Small modules for `plugin_module` to mutate: plugins that use most of
/// what validation lets through (loops, recursion, tables, bulk memory,
/// SIMD, multi-value, memory growth), and a few refused shapes.
const MODULE_SEEDS: &[(&str, &str)] = &[
    ("minimal", include_str!("../../crates/host/tests/wat/minimal.wat")),
    (
        "busy",
        r#"(module
  (import "recon" "log" (func $log (param i32 i32)))
  (memory (export "memory") 1 16)
  (table 4 funcref)
  (elem (i32.const 0) $fib $grow $spin $fib)
  (global $calls (mut i32) (i32.const 0))
  (data (i32.const 16) "{\"name\":\"busy\",\"abiVersion\":1,\"nodeAgent\":true,\"watches\":[{\"kind\":\"Pod\"}]}")
  (data (i32.const 512) "{\"actions\":[{\"type\":\"requeueAfter\",\"key\":\"k\",\"afterMs\":5}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32)
    (if (i32.gt_u (local.get 0) (i32.const 60000)) (then (return (i32.const 0))))
    i32.const 1024)
  (func $fib (param i32) (result i32)
    (if (result i32) (i32.lt_u (local.get 0) (i32.const 2))
      (then (local.get 0))
      (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))
  (func $grow (param i32) (result i32) (memory.grow (local.get 0)))
  (func $spin (param i32) (result i32)
    (loop $l (local.set 0 (i32.sub (local.get 0) (i32.const 1))) (br_if $l (i32.gt_s (local.get 0) (i32.const 0))))
    local.get 0)
  (func $pair (param i32) (result i32 i64) (local.get 0) (i64.extend_i32_u (local.get 0)))
  (func (export "recon_init") (param i32 i32) (result i64)
    (call $log (i32.const 16) (i32.const 10))
    (drop (call_indirect (param i32) (result i32) (i32.const 10) (i32.const 0)))
    (memory.fill (i32.const 2048) (i32.const 0) (i32.const 256))
    (memory.copy (i32.const 4096) (i32.const 16) (i32.const 74))
    (v128.store (i32.const 8192) (i8x16.splat (i32.const 7)))
    i64.const 0x100000004a)
  (func (export "recon_handle") (param i32 i32) (result i64)
    (local i32)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (block $b
      (br_table $b $b (i32.and (global.get $calls) (i32.const 1))))
    (local.set 2 (call_indirect (param i32) (result i32) (global.get $calls) (i32.and (global.get $calls) (i32.const 3))))
    (call $pair (local.get 2))
    drop
    drop
    i64.const 0x2000000003b))"#,
    ),
    (
        "refused-wasi",
        r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1))"#,
    ),
    (
        "refused-start",
        r#"(module (memory (export "memory") 1) (func $s) (start $s)
  (func (export "recon_abi_version") (result i32) i32.const 1))"#,
    ),
];
