//! Fuzz target `scenario_file`: see `recon_tests::fuzz::scenario_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| recon_tests::fuzz::scenario_file(data));
