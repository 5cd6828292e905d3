//! Link settings of the Wasm plugin.
//!
//! This crate links the kubelet plugin as a library. Cargo builds the
//! kubelet once per build with the union of the features asked for, so when
//! both plugins are built by one `cargo build` (as `cargo xtask` does) the
//! kubelet keeps its `export` feature and its rlib defines the same four ABI
//! symbols as this crate. With `--allow-multiple-definition` the linker
//! keeps the first definition, which is ours: rustc puts this crate's object
//! files before every library on the command line. (Built alone, the kubelet
//! has no exports and nothing is duplicated.) The CLI's tests check that the
//! built module's manifest is this crate's.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo::rustc-link-arg-cdylib=--allow-multiple-definition");
    }
}
