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
//!    fuel, caps its memory and counts its call depth ([`Limits`]).
//! 2. **Compile** ([`Engine::compile`]), once per module, natively with
//!    wasmtime. The browser engine compiles the same [`Module::bytes`] with
//!    the page's `WebAssembly`.
//! 3. **Instantiate** ([`CompiledPlugin::instantiate`]) for every (re)start
//!    of a component, and call it through [`recon_abi::Instance`]. Every
//!    failure is a [`recon_abi::Crash`] of that instance only.
//!
//! Because the limits are in the module's own code, they do not depend on
//! the engine: a call runs out of fuel at the same instruction, `memory.grow`
//! fails at the same size and recursion stops at the same depth under
//! wasmtime and in any browser, and crash reasons are worded the same
//! ([`Trap::explain`]). The engines' own limits are only a backstop.
//!
//! The engine-independent half (loading) also builds for `wasm32`; the
//! wasmtime engine ([`Engine`], [`CompiledPlugin`], [`WasmInstance`],
//! [`check`]) exists only natively.
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

#[cfg(not(target_arch = "wasm32"))]
mod engine;
mod error;
mod instrument;
mod limits;
mod module;
mod trap;
mod validate;

#[cfg(not(target_arch = "wasm32"))]
pub use engine::{CompiledPlugin, Engine, WasmInstance, check};
pub use error::PluginError;
pub use limits::Limits;
pub use module::{DEPTH_EXPORT, FUEL_EXPORT, Module};
pub use trap::Trap;
