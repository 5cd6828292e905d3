//! The catalogue of hostile plugins (`tests/hostile/`) against the engine of
//! the target: every case gets exactly its answer, in the same words in
//! every engine, and the engine stays usable after it.

use recon_abi::{Instance, Output};
use recon_host::{Engine, Limits, Module};

use crate::hostile::{CASES, Case, Stage, case, config};

/// Runs one case and checks the host's answer; then checks that a
/// well-behaved plugin still runs in the same engine.
fn contained(case: &Case) {
    let file = case.file();
    let bytes = (case.module)();
    let answer = match Module::load(&file, &bytes, &case.limits) {
        Err(refused) => (Stage::Load, refused.to_string()),
        Ok(module) => {
            let compiled = Engine::new().unwrap().compile(&module).unwrap_or_else(|e| panic!("{e}"));
            // `start`, as the simulator does: a failed instantiation is a crash at init.
            let mut instance = compiled.start();
            match instance.init(&config()) {
                Err(crash) => (Stage::Init, crash.reason),
                Ok(_) => {
                    // A case that crashes after some calls makes them first, each with its output.
                    if let Stage::HandleAfter { calls, output } = case.stage {
                        for call in 0..calls {
                            let answer = instance.handle(&super::input(0)).map(|o| serde_json::to_string(&o).unwrap());
                            assert_eq!(answer, Ok(output.to_owned()), "{}: call {call}", case.name);
                        }
                    }
                    match instance.handle(&super::input(0)) {
                        Err(crash) if matches!(case.stage, Stage::HandleAfter { .. }) => (case.stage, crash.reason),
                        Err(crash) => (Stage::Handle, crash.reason),
                        Ok(output) => (Stage::Runs, serde_json::to_string(&output).unwrap()),
                    }
                }
            }
        }
    };
    assert_eq!(answer.0, case.stage, "{}: {}", case.name, answer.1);
    assert!(case.matches(&answer.1), "{}:\n  expected {}\n  got      {}", case.name, case.message, answer.1);
    assert!(!answer.1.contains('\n'), "one line: {}", answer.1);

    // The engine is unharmed: the smallest plugin still runs.
    let minimal = wat::parse_str(include_str!("../wat/minimal.wat")).unwrap();
    let module = Module::load("minimal.wasm", &minimal, &Limits::default()).unwrap();
    let mut instance = Engine::new().unwrap().compile(&module).unwrap().instantiate().unwrap();
    assert_eq!(instance.init(&config()).unwrap().name, "minimal");
    assert_eq!(instance.handle(&super::input(3)).unwrap(), Output::default());
}

/// One test per case, named after it.
macro_rules! catalogue {
    ($($name:ident),* $(,)?) => {
        $(
            #[cfg_attr(not(target_arch = "wasm32"), test)]
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            fn $name() {
                contained(case(stringify!($name)));
            }
        )*

        #[cfg_attr(not(target_arch = "wasm32"), test)]
        #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
        fn every_case_of_the_catalogue_has_its_test() {
            let tested = [$(stringify!($name)),*];
            for case in CASES {
                assert!(tested.contains(&case.name), "add {} to catalogue!", case.name);
            }
            assert_eq!(tested.len(), CASES.len());
        }
    };
}

catalogue!(
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

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn logging_out_of_bounds_is_logged_not_crashed() {
    let case = case("log_out_of_bounds");
    let module = Module::load(&case.file(), &(case.module)(), &case.limits).unwrap();
    let mut instance = Engine::new().unwrap().compile(&module).unwrap().instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(&super::input(0)).unwrap();
    assert_eq!(
        instance.take_logs(),
        [
            "(recon.log was given 64 bytes at 0xfffffff0, outside memory)",
            "(recon.log was given 4294967295 bytes at 0x400, outside memory)",
        ]
    );
}
