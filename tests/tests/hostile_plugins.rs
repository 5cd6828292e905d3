//! The catalogue of hostile plugins (`crates/host/tests/hostile/`) swapped
//! into the #59848 scenario under wasmtime: each is contained as a crash (or
//! a refusal) of its own component, with a one-line reason, and the rest of
//! the run is unchanged, and its trace is the one pinned by hash in
//! `hostile/trace-hashes.txt`, which the browser engine must give too
//! (recon-host's `tests/browser.rs` runs the same checks); `hostile/sim.rs`
//! says what is compared with what. `RECON_BLESS=1` re-pins the hashes.

#[path = "../../crates/host/tests/hostile/mod.rs"]
mod hostile;
#[path = "../../crates/host/tests/hostile/sim.rs"]
mod sim;

use hostile::{CASES, case};

/// Whether this run re-pins the hashes rather than checking them.
fn blessing() -> bool {
    std::env::var_os("RECON_BLESS").is_some()
}

/// One test per case, named after it.
macro_rules! in_59848 {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let case = case(stringify!($name));
                let hash = sim::assert_contained(case);
                if !blessing() {
                    sim::assert_pinned(case, hash.as_deref());
                }
            }
        )*

        #[test]
        fn every_case_of_the_catalogue_runs_in_the_simulation() {
            let tested = [$(stringify!($name)),*];
            for case in CASES {
                assert!(tested.contains(&case.name), "add {} to in_59848!", case.name);
            }
            assert_eq!(tested.len(), CASES.len());
        }
    };
}

in_59848!(
    infinite_loop,
    requeue_spinner,
    deep_recursion,
    stack_exhaustion,
    large_frames,
    float_to_int_trap,
    memory_growth,
    huge_output_buffer,
    out_of_bounds_result,
    out_of_bounds_length,
    out_of_bounds_alloc,
    log_out_of_bounds,
    not_utf8,
    not_json,
    unknown_action,
    million_actions,
    too_many_actions,
    hundred_mb_string,
    forbidden_write,
    forbidden_container,
    nan_payload,
    start_function,
    import_wasi,
    import_env_memory,
    import_recon_clock,
    import_log_wrong_type,
    export_handle_wrong_signature,
    export_init_global,
    data_segment_past_memory,
    huge_table,
    enormous_file,
    many_functions,
    huge_function,
    too_many_locals,
    nested_blocks,
    huge_frame,
);

/// With `RECON_BLESS=1`, writes every case's trace hash to
/// `hostile/trace-hashes.txt`; without, checks that the file pins no case
/// that does not reach the simulator (the tests above check the others).
#[test]
fn the_pinned_trace_hashes_are_exactly_the_cases_that_run() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/host/tests/hostile/trace-hashes.txt");
    if blessing() {
        let mut text = String::from(
            "# The trace of each hostile plugin in #59848 (`case hash`), the same in every engine: written by\n\
             # recon-tests' hostile_plugins with RECON_BLESS=1, checked natively and in the browser.\n",
        );
        for case in CASES {
            if let Some(hash) = sim::assert_contained(case) {
                text += &format!("{} {hash}\n", case.name);
            }
        }
        std::fs::write(&file, text).unwrap();
        return;
    }
    for line in sim::TRACE_HASHES.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(' ').next().unwrap_or_default();
        let case = CASES.iter().find(|c| c.name == name);
        assert!(case.is_some_and(|c| c.stage != hostile::Stage::Load), "{name} is pinned but does not run");
    }
}
