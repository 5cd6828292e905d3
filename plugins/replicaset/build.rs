//! Keeps the Wasm plugin small whatever the profile says: the workspace's
//! release profile keeps line tables for native backtraces, which would be
//! nine tenths of the `.wasm`. The `name` section stays, so traps still name
//! functions.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo::rustc-link-arg-cdylib=--strip-debug");
    }
}
