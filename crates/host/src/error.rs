//! Why a plugin was refused.

use recon_abi::Crash;

/// Why a plugin could not be loaded (or, for [`crate::check`], did not start).
///
/// Every message is one line that begins with the plugin's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The file is not WebAssembly at all. Pass the `.wasm` file the build
    /// produced (`target/wasm32-unknown-unknown/release/<crate>.wasm`), not a
    /// native binary, a script or the text format.
    #[error("{name} is not a WebAssembly module ({found})")]
    NotWasm {
        /// The plugin.
        name: String,
        /// What the file starts with instead.
        found: String,
    },
    /// The file is a WebAssembly component, not a core module. Build for
    /// `wasm32-unknown-unknown` and do not wrap the module into a component.
    #[error("{name} is a WebAssembly component, but plugins are core modules (build for wasm32-unknown-unknown)")]
    Component {
        /// The plugin.
        name: String,
    },
    /// The module is truncated or malformed, or fails validation. Rebuild it;
    /// if it was copied or downloaded, check that the copy is complete.
    #[error("{name} is not a valid WebAssembly module: {reason}")]
    Invalid {
        /// The plugin.
        name: String,
        /// The validator's message, with the byte offset.
        reason: String,
    },
    /// The module uses a WebAssembly proposal that plugins may not use
    /// because it is not deterministic or not available in every engine
    /// (threads, relaxed SIMD, tail calls, 64-bit memory, exceptions, GC, ...).
    /// Build without the target feature that enables it (check `-C
    /// target-feature` and `RUSTFLAGS`).
    #[error("{name} uses the WebAssembly {feature} proposal, which plugins may not use (at offset {offset:#x})")]
    Feature {
        /// The plugin.
        name: String,
        /// The proposal, e.g. `threads`.
        feature: String,
        /// Where in the file.
        offset: usize,
    },
    /// The module imports something other than `recon.log`, for example WASI.
    /// Build for `wasm32-unknown-unknown` (not `wasm32-wasip1`) and do not
    /// call APIs that need the outside world (clocks, randomness, files).
    #[error("{name} imports {import}, but plugins may only import recon.log{instead}")]
    Import {
        /// The plugin.
        name: String,
        /// The import, as `module.name`.
        import: String,
        /// What to do instead, when the import's module says which
        /// toolchain put it there (WASI, wasm-bindgen); else empty.
        instead: &'static str,
    },
    /// The module imports `recon.log` with the wrong type. Declare it as
    /// `(func (param i32 i32))`: a pointer and a length.
    #[error("{name} imports recon.log with type {found}, but its type is (i32, i32) -> ()")]
    LogImportType {
        /// The plugin.
        name: String,
        /// The type it was imported with.
        found: String,
    },
    /// An export the ABI requires is missing. Export it (the Rust SDK's
    /// `export_controller!` does), and make sure the linker did not drop it.
    #[error("{name} does not export {export}, which must be {expected}")]
    MissingExport {
        /// The plugin.
        name: String,
        /// The missing export.
        export: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// An export the ABI requires has the wrong kind or type. Match the
    /// signature in the ABI document.
    #[error("{name} exports {export} as {found}, but it must be {expected}")]
    ExportType {
        /// The plugin.
        name: String,
        /// The export.
        export: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What it is.
        found: String,
    },
    /// The module exports a name the host adds itself (its meters). Rename
    /// the export.
    #[error("{name} exports {export}, a name the host reserves for its meters")]
    ReservedExport {
        /// The plugin.
        name: String,
        /// The export.
        export: String,
    },
    /// The module has a start function, which would run before the host can
    /// meter it. Do the work in `recon_init` instead.
    #[error("{name} has a start function, but plugins may not run code when they are instantiated")]
    StartFunction {
        /// The plugin.
        name: String,
    },
    /// The module's memory is not one private 32-bit memory. Build for
    /// `wasm32-unknown-unknown` without the `atomics` target feature.
    #[error("{name} {problem}")]
    Memory {
        /// The plugin.
        name: String,
        /// What is wrong, as a predicate ("declares a shared memory ...").
        problem: String,
    },
    /// The module declares more initial memory than the cap. Shrink its
    /// initial memory (e.g. the linker's `--initial-memory`, or less static
    /// data) or raise [`crate::Limits::memory_bytes`].
    #[error(
        "{name} declares {initial_bytes} bytes of initial memory, above the cap of {cap_bytes} bytes; {}",
        crate::limits::raised_by(recon_scenario::PluginSetting::MemoryBytes, *cap_bytes)
    )]
    MemoryTooLarge {
        /// The plugin.
        name: String,
        /// The declared initial memory.
        initial_bytes: u64,
        /// The cap.
        cap_bytes: u64,
    },
    /// The module is larger than the host runs: the file, its number of
    /// functions, or its code once the host adds its meters (which must stay
    /// within [`crate::Limits::max_module_bytes`] and the engines' limits of
    /// 7,654,321 bytes of code and 50,000 locals per function). Build in
    /// release mode, split very large functions, or raise the limits.
    #[error("{name} {problem}")]
    TooLarge {
        /// The plugin.
        name: String,
        /// What is too large, as a predicate ("is ... bytes, above ...").
        problem: String,
    },
    /// A data or element segment does not fit in the memory or table it
    /// initialises, or a table starts larger than the cap, so instantiating
    /// it would fail (in words that differ between engines). Rust toolchains
    /// do not produce such modules; fix the module's segments.
    #[error("{name} {problem}")]
    Segment {
        /// The plugin.
        name: String,
        /// What is wrong, as a predicate ("has a data segment ...").
        problem: String,
    },
    /// The host failed to rewrite or compile a module it had accepted. This
    /// is a bug in the host: please report it with the module.
    #[error("{name} could not be prepared by the host (a host bug): {reason}")]
    Host {
        /// The plugin.
        name: String,
        /// What failed.
        reason: String,
    },
    /// The engine could not be started: natively, wasmtime on an unsupported
    /// platform (use the browser playground instead); in the browser, a
    /// JavaScript environment without `WebAssembly`.
    #[error("the WebAssembly engine could not be started: {reason}")]
    Engine {
        /// Why.
        reason: String,
    },
    /// The module loaded but crashed when it was started ([`crate::check`]):
    /// it trapped, ran out of a limit or returned something the host could
    /// not decode. The reason says which; fix the plugin or raise the limits.
    #[error("{0}")]
    Crash(#[from] Crash),
}
