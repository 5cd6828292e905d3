//! The Recon plugin sandbox: it turns an untrusted `.wasm` file into a
//! [`recon_abi::Instance`] the simulator can drive, or refuses it with a
//! one-line reason.
//!
//! A plugin goes through three steps; the sandbox is in the first.
//!
//! 1. **Load** ([`Module::load`]): **validate** (a core module, WebAssembly
//!    2.0 features only, the ABI's exports and types, no import but
//!    `recon.log`, no start function, one private 32-bit memory within the
//!    cap) and **instrument**: rewrite the module so that it meters its own
//!    fuel, caps its memory, counts its call depth and charges its frames
//!    against a stack budget ([`Limits`]).
//! 2. **Compile** ([`Engine::compile`]), once per module: natively with
//!    wasmtime, in the browser (`wasm32`) with the page's own `WebAssembly`.
//! 3. **Instantiate** ([`CompiledPlugin::instantiate`], or
//!    [`CompiledPlugin::start`], which turns a failure into an instance that
//!    crashes) for every (re)start of a component, and call it through
//!    [`recon_abi::Instance`]. Every failure is a [`recon_abi::Crash`] of
//!    that instance only.
//!
//! Because the limits are in the module's own code, they do not depend on
//! the engine: a call runs out of fuel at the same instruction, `memory.grow`
//! fails at the same size and recursion stops at the same call under
//! wasmtime and in any browser, and crash reasons are worded the same
//! ([`Trap::explain`]). The engines' own limits are only a backstop.
//!
//! There are two engines with one API ([`Engine`], [`CompiledPlugin`],
//! [`WasmInstance`], [`check`]), so callers do not care which one they get:
//! natively, wasmtime with Cranelift; on `wasm32`, the browser's own
//! `WebAssembly` through `js-sys`, which compiles and instantiates
//! synchronously and so must run in a Web Worker. What happens around a call
//! (writing the input, reading and decoding the result, wording every crash,
//! bounding the log) is shared; only the raw calls and the meters' access
//! differ. The browser engine has no fuel backstop of its own (the crate's
//! README says what else to know).
//!
//! ```
//! use recon_abi::{ComponentConfig, Instance};
//! use recon_host::{Engine, Limits, Module};
//!
//! let wasm = wat::parse_str(include_str!("../tests/wat/minimal.wat"))?;
//! let module = Module::load("minimal.wasm", &wasm, &Limits::default())?;
//! let engine = Engine::new()?; // one per process
//! let plugin = engine.compile(&module)?; // once per module
//! let mut instance = plugin.instantiate()?; // once per component (re)start
//! let manifest = instance.init(&ComponentConfig { name: "demo".into(), ..Default::default() })?;
//! assert_eq!(manifest.name, "minimal");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(target_arch = "wasm32")]
mod browser;
mod call;
#[cfg(not(target_arch = "wasm32"))]
mod engine;
mod error;
mod instance;
mod instrument;
mod limits;
mod module;
mod trap;
mod validate;

#[cfg(target_arch = "wasm32")]
pub use browser::{CompiledPlugin, Engine};
#[cfg(not(target_arch = "wasm32"))]
pub use engine::{CompiledPlugin, Engine};
pub use error::PluginError;

/// The most slots [`Engine::pooled`] reserves natively: each is a 4 GiB
/// range of address space (a 32-bit memory and its guard, so that
/// Cranelift needs no bounds checks), reserved, not committed, so a process
/// of a few such engines stays far inside a 47-bit address space.
pub const MAX_POOL_SLOTS: u32 = 1024;
pub use instance::{FUEL_PER_INPUT_OBJECT, WasmInstance, check};
pub use limits::{Limits, MAX_FRAME_BYTES};
pub use module::{DEPTH_EXPORT, FUEL_EXPORT, Module, STACK_EXPORT};
pub use trap::{Meters, Trap};
