//! The catalogue of hostile plugins (`crates/host/tests/hostile/`) swapped
//! into the #59848 scenario under wasmtime: each is contained as a crash (or
//! a refusal) of its own component, with a one-line reason, and the rest of
//! the run is unchanged. The browser engine runs the same checks in
//! recon-host's `tests/browser.rs`; `hostile/sim.rs` says what is compared
//! with what.

#[path = "../../crates/host/tests/hostile/mod.rs"]
mod hostile;
#[path = "../../crates/host/tests/hostile/sim.rs"]
mod sim;

use hostile::{CASES, case};

/// One test per case, named after it.
macro_rules! in_59848 {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                sim::assert_contained(case(stringify!($name)));
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
);
