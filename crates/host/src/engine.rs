//! The native engine: wasmtime with Cranelift.
//!
//! The instrumented module already enforces fuel, memory and depth; wasmtime
//! is configured so that its own mechanisms only back them up: its fuel is a
//! multiple of the budget, its resource limiter caps memory at the same size,
//! and its stack is deep enough that the depth limit trips first for any
//! ordinary code.

use std::fmt::Display;
use std::sync::Arc;

use recon_abi::{ABI_VERSION, ComponentConfig, Crash, Input, Instance, Manifest, Output};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasmtime::{
    Caller, Config, Extern, Global, InstancePre, Linker, Memory, Store, StoreLimits, StoreLimitsBuilder, TypedFunc, Val,
};

use crate::{DEPTH_EXPORT, FUEL_EXPORT, Limits, Module, PluginError, Trap};

/// The most native stack a call may use. Calls must run on a thread with
/// more than this (Rust's main thread has 8 MiB, spawned threads 2 MiB).
/// At the default depth limit it leaves 512 bytes per frame.
const MAX_WASM_STACK: usize = 1 << 20;

/// wasmtime's fuel, per unit of the instrumented budget. wasmtime counts the
/// instrumentation's instructions too, at most about 21 per unit charged
/// (a call to a function whose body is one `end`), so 32 guarantees the
/// instrumented counter trips first; wasmtime's only catches host bugs.
const BACKSTOP_FACTOR: u64 = 32;

/// How many `recon.log` lines an instance keeps until they are taken.
const MAX_LOG_LINES: usize = 1_000;

/// How much of one `recon.log` line is kept.
const MAX_LOG_LINE_BYTES: usize = 4_096;

/// The wasmtime engine, configured for deterministic plugins. Create one per
/// process and share it: compiled plugins belong to the engine that compiled
/// them. Cloning is cheap.
#[derive(Clone)]
pub struct Engine {
    engine: wasmtime::Engine,
    linker: Arc<Linker<HostState>>,
}

/// A module compiled by an [`Engine`]: compile once, instantiate for every
/// (re)start of every component that runs it. Cloning is cheap.
#[derive(Clone)]
pub struct CompiledPlugin {
    name: Arc<str>,
    limits: Limits,
    pre: InstancePre<HostState>,
}

/// One instance of a plugin: one component's life between (re)starts.
///
/// The first failed call crashes it for good (memory may be inconsistent
/// after a trap); the host starts a fresh one, as the ABI says.
pub struct WasmInstance {
    name: Arc<str>,
    limits: Limits,
    store: Store<HostState>,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    init: TypedFunc<(i32, i32), i64>,
    handle: TypedFunc<(i32, i32), i64>,
    fuel: Global,
    depth: Global,
    fuel_used: u64,
    crashed: bool,
}

/// What a store holds besides the instance.
struct HostState {
    limiter: StoreLimits,
    logs: Vec<String>,
    dropped_logs: usize,
}

impl Engine {
    /// An engine with NaN canonicalisation, deterministic relaxed SIMD (which
    /// validation refuses anyway), no threads (compiled out), no tail calls,
    /// no memory64 or multi-memory, fuel as a backstop and a 1 MiB wasm stack.
    pub fn new() -> Result<Engine, PluginError> {
        let mut config = Config::new();
        config
            .cranelift_nan_canonicalization(true)
            .wasm_relaxed_simd(false)
            .relaxed_simd_deterministic(true)
            .wasm_tail_call(false)
            .wasm_multi_memory(false)
            .wasm_memory64(false)
            .wasm_extended_const(false)
            .consume_fuel(true)
            .max_wasm_stack(MAX_WASM_STACK);
        let failed = |e: wasmtime::Error| PluginError::Engine { reason: one_line(&e) };
        let engine = wasmtime::Engine::new(&config).map_err(failed)?;
        let mut linker = Linker::new(&engine);
        linker.func_wrap("recon", "log", log).map_err(failed)?;
        Ok(Engine { engine, linker: Arc::new(linker) })
    }

    /// Compiles a loaded module's instrumented bytes.
    pub fn compile(&self, module: &Module) -> Result<CompiledPlugin, PluginError> {
        let host = |e: wasmtime::Error| PluginError::Host { name: module.name().to_owned(), reason: one_line(&e) };
        let compiled = wasmtime::Module::from_binary(&self.engine, module.bytes()).map_err(host)?;
        let pre = self.linker.instantiate_pre(&compiled).map_err(host)?;
        Ok(CompiledPlugin { name: module.name().into(), limits: *module.limits(), pre })
    }
}

impl CompiledPlugin {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A fresh instance, after checking that `recon_abi_version` returns 1.
    /// Failing here is a crash of the component, like failing later.
    pub fn instantiate(&self) -> Result<WasmInstance, Crash> {
        let crash = |detail: String| Crash::new(format!("{}: {detail}", self.name));
        let cap = self.limits.memory_pages() * crate::limits::PAGE_BYTES;
        let limiter = StoreLimitsBuilder::new()
            .memory_size(usize::try_from(cap).unwrap_or(usize::MAX))
            .memories(1)
            .instances(1)
            .build();
        let state = HostState { limiter, logs: Vec::new(), dropped_logs: 0 };
        let mut store = Store::new(self.pre.module().engine(), state);
        store.limiter(|state| &mut state.limiter);
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| crash(format!("could not be instantiated: {}", one_line(&e))))?;
        // Validation checked every export, so these only fail on a host bug.
        let missing = |what: &str| crash(format!("lost its export {what} in instrumentation (a host bug)"));
        let memory = instance.get_memory(&mut store, "memory").ok_or_else(|| missing("memory"))?;
        let fuel = instance.get_global(&mut store, FUEL_EXPORT).ok_or_else(|| missing(FUEL_EXPORT))?;
        let depth = instance.get_global(&mut store, DEPTH_EXPORT).ok_or_else(|| missing(DEPTH_EXPORT))?;
        let version = instance.get_typed_func::<(), i32>(&mut store, "recon_abi_version");
        let alloc = instance.get_typed_func(&mut store, "recon_alloc");
        let init = instance.get_typed_func(&mut store, "recon_init");
        let handle = instance.get_typed_func(&mut store, "recon_handle");
        let (Ok(version), Ok(alloc), Ok(init), Ok(handle)) = (version, alloc, init, handle) else {
            return Err(missing("recon_*"));
        };
        let mut wasm = WasmInstance {
            name: self.name.clone(),
            limits: self.limits,
            store,
            memory,
            alloc,
            init,
            handle,
            fuel,
            depth,
            fuel_used: 0,
            crashed: false,
        };
        wasm.reset_meters()?;
        let found = version.call(&mut wasm.store, ()).map_err(|e| wasm.trapped("recon_abi_version", e))?;
        if found != ABI_VERSION as i32 {
            return Err(crash(format!(
                "recon_abi_version returned {found}, but this host speaks ABI version {ABI_VERSION}"
            )));
        }
        Ok(wasm)
    }
}

/// The two calls that carry JSON.
#[derive(Clone, Copy)]
enum Call {
    Init,
    Handle,
}

impl Call {
    fn export(self) -> &'static str {
        match self {
            Call::Init => "recon_init",
            Call::Handle => "recon_handle",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Call::Init => "a manifest",
            Call::Handle => "an output",
        }
    }
}

impl WasmInstance {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fuel the last call consumed (its `recon_alloc` included): the
    /// same number in every engine. The whole budget if it ran out.
    pub fn fuel_used(&self) -> u64 {
        self.fuel_used
    }

    /// The lines the plugin logged through `recon.log` since the last call of
    /// this method. At most 1,000 lines of at most 4 KiB are kept; a last
    /// line says how many more were dropped.
    pub fn take_logs(&mut self) -> Vec<String> {
        let state = self.store.data_mut();
        let mut logs = std::mem::take(&mut state.logs);
        if state.dropped_logs > 0 {
            logs.push(format!("({} more log lines dropped)", std::mem::take(&mut state.dropped_logs)));
        }
        logs
    }

    fn call<T: DeserializeOwned>(&mut self, call: Call, input: &impl Serialize) -> Result<T, Crash> {
        if self.crashed {
            return Err(self.crash(call.export(), "was called after the instance crashed"));
        }
        let result = self.try_call(call, input);
        self.crashed = result.is_err();
        result
    }

    fn try_call<T: DeserializeOwned>(&mut self, call: Call, input: &impl Serialize) -> Result<T, Crash> {
        let export = call.export();
        let input = serde_json::to_vec(input).map_err(|e| self.crash(export, format!("input did not encode: {e}")))?;
        let len = i32::try_from(input.len())
            .map_err(|_| self.crash(export, format!("input of {} bytes does not fit in 32 bits", input.len())))?;

        // The input's allocation and the call share one budget.
        self.reset_meters()?;
        let ptr = self.alloc.call(&mut self.store, len).map_err(|e| self.trapped("recon_alloc", e))?;
        if ptr == 0 {
            return Err(self.crash("recon_alloc", format!("returned 0 (could not allocate {len} bytes)")));
        }
        if self.memory.write(&mut self.store, ptr as u32 as usize, &input).is_err() {
            let size = self.memory.data_size(&self.store);
            let detail =
                format!("returned {:#x}, where {len} bytes do not fit in a memory of {size} bytes", ptr as u32);
            return Err(self.crash("recon_alloc", detail));
        }
        let func = match call {
            Call::Init => &self.init,
            Call::Handle => &self.handle,
        };
        let packed = func.call(&mut self.store, (ptr, len)).map_err(|e| self.trapped(export, e))? as u64;
        self.read_meters();

        let (ptr, len) = ((packed >> 32) as usize, (packed & 0xffff_ffff) as usize);
        let memory = self.memory.data(&self.store);
        let Some(bytes) = memory.get(ptr..).and_then(|rest| rest.get(..len)) else {
            let detail = format!(
                "returned an out-of-bounds result ({len} bytes at {ptr:#x}, in a memory of {} bytes)",
                memory.len()
            );
            return Err(crash(&self.name, export, detail));
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| crash(&self.name, export, format!("returned {} that is not UTF-8 ({e})", call.what())))?;
        serde_json::from_str(text)
            .map_err(|e| crash(&self.name, export, format!("returned {} that does not decode: {e}", call.what())))
    }

    /// Fills the budget and empties the stack before a call.
    fn reset_meters(&mut self) -> Result<(), Crash> {
        let backstop = self.limits.fuel_budget().unsigned_abs().saturating_mul(BACKSTOP_FACTOR).saturating_add(1 << 20);
        let reset = self
            .fuel
            .set(&mut self.store, Val::I64(self.limits.fuel_budget()))
            .and_then(|()| self.depth.set(&mut self.store, Val::I32(0)))
            .and_then(|()| self.store.set_fuel(backstop));
        reset.map_err(|e| self.crash("meters", format!("could not be reset (a host bug): {}", one_line(&e))))
    }

    /// Records the fuel used by the call that just ended; returns the meters.
    fn read_meters(&mut self) -> (i64, u32) {
        let fuel_left = self.fuel.get(&mut self.store).i64().unwrap_or(0);
        let depth = self.depth.get(&mut self.store).i32().unwrap_or(0) as u32;
        self.fuel_used = self.limits.fuel_budget().saturating_sub(fuel_left.max(0)).unsigned_abs();
        (fuel_left, depth)
    }

    /// The crash for a call that trapped, explained from the meters.
    fn trapped(&mut self, export: &str, error: wasmtime::Error) -> Crash {
        let (fuel_left, depth) = self.read_meters();
        let memory_bytes = self.memory.data_size(&self.store) as u64;
        let reason = trap_of(&error).explain(&self.limits, fuel_left, depth, memory_bytes);
        self.crash(export, reason)
    }

    fn crash(&self, export: &str, detail: impl Display) -> Crash {
        crash(&self.name, export, detail)
    }
}

impl Instance for WasmInstance {
    fn init(&mut self, config: &ComponentConfig) -> Result<Manifest, Crash> {
        let manifest: Manifest = self.call(Call::Init, config)?;
        if manifest.abi_version != ABI_VERSION {
            self.crashed = true;
            let detail = format!(
                "returned a manifest for ABI version {}, but this host speaks ABI version {ABI_VERSION}",
                manifest.abi_version
            );
            return Err(self.crash("recon_init", detail));
        }
        Ok(manifest)
    }

    fn handle(&mut self, input: &Input) -> Result<Output, Crash> {
        self.call(Call::Handle, input)
    }
}

/// Loads, compiles and starts a plugin, and returns its manifest: what
/// `recon check-plugin` prints. The instance is configured as component
/// `check` on node `node-1`.
pub fn check(name: &str, bytes: &[u8], limits: &Limits) -> Result<Manifest, PluginError> {
    let module = Module::load(name, bytes, limits)?;
    let mut instance = Engine::new()?.compile(&module)?.instantiate()?;
    let config = ComponentConfig { name: "check".into(), node: Some("node-1".into()), ..Default::default() };
    Ok(instance.init(&config)?)
}

/// `recon.log(ptr, len)`: keeps the line, bounded. Never traps, so a bad
/// pointer cannot turn logging into a crash; it is logged instead.
fn log(mut caller: Caller<'_, HostState>, ptr: i32, len: i32) {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else { return };
    let (memory, state) = memory.data_and_store_mut(&mut caller);
    if state.logs.len() >= MAX_LOG_LINES {
        state.dropped_logs += 1;
        return;
    }
    let (start, len) = (ptr as u32 as usize, len as u32 as usize);
    let line = match memory.get(start..).and_then(|rest| rest.get(..len)) {
        Some(bytes) if len > MAX_LOG_LINE_BYTES => {
            format!(
                "{} [{} more bytes]",
                String::from_utf8_lossy(&bytes[..MAX_LOG_LINE_BYTES]),
                len - MAX_LOG_LINE_BYTES
            )
        }
        Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        None => format!("(recon.log was given {len} bytes at {start:#x}, outside memory)"),
    };
    state.logs.push(line);
}

/// wasmtime's trap, as every engine names it.
fn trap_of(error: &wasmtime::Error) -> Trap {
    use wasmtime::Trap as T;
    match error.downcast_ref::<T>() {
        Some(T::UnreachableCodeReached) => Trap::Unreachable,
        Some(T::MemoryOutOfBounds) => Trap::MemoryOutOfBounds,
        Some(T::TableOutOfBounds) => Trap::TableOutOfBounds,
        Some(T::IndirectCallToNull) => Trap::IndirectCallToNull,
        Some(T::BadSignature) => Trap::BadSignature,
        Some(T::IntegerDivisionByZero) => Trap::IntegerDivisionByZero,
        Some(T::IntegerOverflow) => Trap::IntegerOverflow,
        Some(T::BadConversionToInteger) => Trap::BadConversionToInteger,
        Some(T::StackOverflow) => Trap::StackOverflow,
        Some(T::OutOfFuel) => Trap::Other("ran past the engine's fuel backstop (a host bug)".into()),
        _ => Trap::Other(one_line(error)),
    }
}

fn crash(name: &str, export: &str, detail: impl Display) -> Crash {
    Crash::new(format!("{name}: {export} {detail}"))
}

/// Error messages may span lines; reasons may not.
fn one_line(error: &impl Display) -> String {
    error.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
}
