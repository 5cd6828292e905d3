//! Fuzz target `plugin_module`: see `recon_tests::fuzz::plugin_module`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| recon_tests::fuzz::plugin_module(data));
