//! Fuzz target `plugin_output`: see `recon_tests::fuzz::plugin_output`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| recon_tests::fuzz::plugin_output(data));
