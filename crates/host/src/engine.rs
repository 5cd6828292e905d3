//! The native engine: wasmtime with Cranelift.
//!
//! The instrumented module already enforces fuel, memory, depth and stack;
//! wasmtime is configured so that its own mechanisms only back them up: its
//! resource limiter caps memory at the same size, and its stack is four
//! times the default stack budget.
//!
//! wasmtime's own fuel is off: the instrumented counter alone stops a
//! runaway call, as it does in the browser, which has no fuel of its own.
//! Metering twice cost every call about a fifth of its time (BENCHMARKS.md,
//! *The price of the sandbox*). [`Engine::with_fuel_backstop`] turns it back
//! on, as a check: the fuzz target `plugin_module` runs every module with it
//! and fails if wasmtime's fuel ever runs out before the instrumented
//! counter.
//!
//! [`Engine::pooled`] starts instances in slots of wasmtime's pooling
//! allocator, reserved once, rather than mapping and unmapping a memory
//! for each: about half the cost of starting one, which a short run pays
//! for every component and restart. The pool has a fixed number of slots,
//! but what a run does must not depend on what else the process runs: when
//! an instance does not get a slot (every slot taken, or a module beyond
//! the pool's bounds) it starts the way [`Engine::new`]'s do, in an engine
//! of that kind kept beside the pool, and behaves the same.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use recon_abi::Crash;
use wasmtime::{
    Caller, Config, Enabled, Extern, Global, Instance, InstanceAllocationStrategy, InstancePre, Linker, Memory,
    PoolingAllocationConfig, Store, StoreLimits, StoreLimitsBuilder, TypedFunc, Val,
};

use crate::call::{Call, Logs, in_bounds, one_line};
use crate::instance::{Machine, lost_export, not_instantiated};
use crate::{
    DEPTH_EXPORT, FUEL_EXPORT, Limits, MAX_POOL_SLOTS, Meters, Module, PluginError, STACK_EXPORT, Trap, WasmInstance,
};

/// The most native stack a call may use. Calls must run on a thread with
/// more than this (Rust's main thread has 8 MiB, spawned threads 2 MiB).
/// Four times the default stack budget ([`Limits::stack_bytes`]), whose
/// charge for a frame is already an upper bound of Cranelift's.
const MAX_WASM_STACK: usize = 1 << 20;

/// wasmtime's fuel, per unit of the instrumented budget, when the backstop
/// is on ([`Engine::with_fuel_backstop`]). wasmtime counts the
/// instrumentation's instructions too, at most about 35 per unit charged
/// (a call to a function whose body is one `end`: the depth and stack
/// meters and the fuel charge), so 64 guarantees the instrumented counter
/// trips first; wasmtime's only catches host bugs.
const BACKSTOP_FACTOR: u64 = 64;

/// What a slot keeps of its memory between instances, zeroing it in place
/// rather than giving it back to the kernel and faulting it in again:
/// about what a small plugin touches (the built-in controllers' memories
/// start at 1.1 to 1.3 MiB).
const KEEP_RESIDENT_BYTES: usize = 2 << 20;

/// The wasmtime engine, configured for deterministic plugins. Create one per
/// process and share it: compiled plugins belong to the engine that compiled
/// them. Cloning is cheap.
#[derive(Clone)]
pub struct Engine {
    engine: wasmtime::Engine,
    linker: Arc<Linker<HostState>>,
    fuel_backstop: bool,
    /// For a pooled engine: the engine without a pool that starts what
    /// does not get a slot.
    overflow: Option<Arc<Engine>>,
}

/// A module compiled by an [`Engine`]: compile once, instantiate for every
/// (re)start of every component that runs it. Cloning is cheap.
#[derive(Clone)]
pub struct CompiledPlugin {
    name: Arc<str>,
    limits: Limits,
    pre: InstancePre<HostState>,
    fuel_backstop: bool,
    /// For a plugin compiled by a pooled engine: the same module for its
    /// overflow engine, compiled the first time an instance needs it.
    overflow: Option<Arc<Overflow>>,
}

/// A pooled engine's way out for one plugin: its instrumented bytes and
/// the overflow engine, to compile from when first needed.
struct Overflow {
    engine: Arc<Engine>,
    module: Module,
    compiled: OnceLock<Result<InstancePre<HostState>, String>>,
}

/// The wasmtime side of a [`WasmInstance`]: its store and exports.
pub(crate) struct Wasmtime {
    store: Store<HostState>,
    memory: Memory,
    version: TypedFunc<(), i32>,
    alloc: TypedFunc<i32, i32>,
    init: TypedFunc<(i32, i32), i64>,
    handle: TypedFunc<(i32, i32), i64>,
    fuel: Global,
    depth: Global,
    stack: Global,
    /// wasmtime's own fuel is on and must be refilled before each call.
    fuel_backstop: bool,
}

/// What a store holds besides the instance.
struct HostState {
    limiter: StoreLimits,
    logs: Logs,
}

impl Engine {
    /// An engine with NaN canonicalisation, deterministic relaxed SIMD (which
    /// validation refuses anyway), no threads (compiled out), no tail calls,
    /// no memory64 or multi-memory, and a 1 MiB wasm stack as a backstop.
    /// The instrumented fuel counter is the only fuel.
    pub fn new() -> Result<Engine, PluginError> {
        Engine::build(false, None)
    }

    /// [`Engine::new`] with wasmtime's own fuel on as well, at 64 times the
    /// instrumented budget: slower, for checking that the instrumented
    /// counter always runs out first (a call that exhausts wasmtime's fuel
    /// crashes with `ran past the engine's fuel backstop (a host bug)`).
    pub fn with_fuel_backstop() -> Result<Engine, PluginError> {
        Engine::build(true, None)
    }

    /// [`Engine::new`] with `slots` instances (at most [`MAX_POOL_SLOTS`])
    /// started in a pool rather than each mapping its own memory; an
    /// instance that finds no free slot starts as [`Engine::new`]'s do. The
    /// same trace either way: only where an instance's memory lives
    /// differs. If the pool's address space cannot be reserved, this is
    /// [`Engine::new`].
    pub fn pooled(slots: u32) -> Result<Engine, PluginError> {
        let overflow = Arc::new(Engine::new()?);
        let slots = slots.clamp(1, MAX_POOL_SLOTS);
        match Engine::build(false, Some(slots)) {
            Ok(pooled) => Ok(Engine { overflow: Some(overflow), ..pooled }),
            Err(_) => Ok(Arc::unwrap_or_clone(overflow)),
        }
    }

    /// Whether instances start in a pool of slots ([`Engine::pooled`]).
    pub fn is_pooled(&self) -> bool {
        self.overflow.is_some()
    }

    fn build(fuel_backstop: bool, pool_slots: Option<u32>) -> Result<Engine, PluginError> {
        let mut config = Config::new();
        if let Some(slots) = pool_slots {
            let mut pool = PoolingAllocationConfig::new();
            pool.total_core_instances(slots)
                .total_memories(slots)
                .total_tables(slots)
                // A 32-bit memory can grow to 4 GiB; the store's limiter
                // stops it at the plugin's cap first, as without a pool.
                .max_memory_size(1 << 32)
                .table_elements(crate::instrument::TABLE_ELEMENTS as usize)
                .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
                // Where the kernel can say which pages an instance touched
                // (Linux 6.7 and later), only those are reset for the next
                // rather than all it kept: a plugin touches few of the pages
                // it starts with (its 1 MiB stack among them).
                .pagemap_scan(Enabled::Auto);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        config
            .cranelift_nan_canonicalization(true)
            .wasm_relaxed_simd(false)
            .relaxed_simd_deterministic(true)
            .wasm_tail_call(false)
            .wasm_multi_memory(false)
            .wasm_memory64(false)
            .wasm_extended_const(false)
            .consume_fuel(fuel_backstop)
            .max_wasm_stack(MAX_WASM_STACK);
        let failed = |e: wasmtime::Error| PluginError::Engine { reason: one_line(&e) };
        let engine = wasmtime::Engine::new(&config).map_err(failed)?;
        let mut linker = Linker::new(&engine);
        linker.func_wrap("recon", "log", log).map_err(failed)?;
        Ok(Engine { engine, linker: Arc::new(linker), fuel_backstop, overflow: None })
    }

    /// Compiles a loaded module's instrumented bytes.
    pub fn compile(&self, module: &Module) -> Result<CompiledPlugin, PluginError> {
        let host = |e: wasmtime::Error| PluginError::Host { name: module.name().to_owned(), reason: one_line(&e) };
        let compiled = wasmtime::Module::from_binary(&self.engine, module.bytes()).map_err(host)?;
        let pre = self.linker.instantiate_pre(&compiled).map_err(host)?;
        let overflow = self.overflow.as_ref().map(|engine| {
            Arc::new(Overflow { engine: Arc::clone(engine), module: module.clone(), compiled: OnceLock::new() })
        });
        Ok(CompiledPlugin {
            name: module.name().into(),
            limits: *module.limits(),
            pre,
            fuel_backstop: self.fuel_backstop,
            overflow,
        })
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
        let (mut store, instance) = match (self.instantiate_in(&self.pre), &self.overflow) {
            (Ok(started), _) => started,
            (Err(e), None) => return Err(not_instantiated(&self.name, &e)),
            // No slot for it: it starts without the pool, as it would in
            // an engine that has none (and fails there if it fails there).
            (Err(_), Some(overflow)) => {
                let pre = overflow.compiled().map_err(|reason| not_instantiated(&self.name, &reason))?;
                self.instantiate_in(pre).map_err(|e| not_instantiated(&self.name, &e))?
            }
        };
        // Validation checked every export, so these only fail on a host bug.
        let missing = |what: &str| lost_export(&self.name, what);
        let memory = instance.get_memory(&mut store, "memory").ok_or_else(|| missing("memory"))?;
        let fuel = instance.get_global(&mut store, FUEL_EXPORT).ok_or_else(|| missing(FUEL_EXPORT))?;
        let depth = instance.get_global(&mut store, DEPTH_EXPORT).ok_or_else(|| missing(DEPTH_EXPORT))?;
        let stack = instance.get_global(&mut store, STACK_EXPORT).ok_or_else(|| missing(STACK_EXPORT))?;
        let version = instance.get_typed_func(&mut store, "recon_abi_version");
        let alloc = instance.get_typed_func(&mut store, "recon_alloc");
        let init = instance.get_typed_func(&mut store, "recon_init");
        let handle = instance.get_typed_func(&mut store, "recon_handle");
        let (Ok(version), Ok(alloc), Ok(init), Ok(handle)) = (version, alloc, init, handle) else {
            return Err(missing("recon_*"));
        };
        let fuel_backstop = self.fuel_backstop;
        let machine = Wasmtime { store, memory, version, alloc, init, handle, fuel, depth, stack, fuel_backstop };
        WasmInstance::start(self.name.clone(), self.limits, machine)
    }

    /// A store capped at the plugin's limits, and the module instantiated
    /// in it by `pre`.
    fn instantiate_in(&self, pre: &InstancePre<HostState>) -> Result<(Store<HostState>, Instance), wasmtime::Error> {
        let cap = self.limits.memory_pages() * crate::limits::PAGE_BYTES;
        let limiter = StoreLimitsBuilder::new()
            .memory_size(usize::try_from(cap).unwrap_or(usize::MAX))
            .memories(1)
            .instances(1)
            .build();
        let state = HostState { limiter, logs: Logs::default() };
        let mut store = Store::new(pre.module().engine(), state);
        store.limiter(|state| &mut state.limiter);
        let instance = pre.instantiate(&mut store)?;
        Ok((store, instance))
    }
}

impl Overflow {
    /// The module compiled for the overflow engine (once).
    fn compiled(&self) -> Result<&InstancePre<HostState>, String> {
        let compile = || {
            let compiled =
                wasmtime::Module::from_binary(&self.engine.engine, self.module.bytes()).map_err(|e| one_line(&e))?;
            self.engine.linker.instantiate_pre(&compiled).map_err(|e| one_line(&e))
        };
        self.compiled.get_or_init(compile).as_ref().map_err(Clone::clone)
    }
}

impl Machine for Wasmtime {
    type Error = wasmtime::Error;

    fn reset_meters(&mut self, fuel: i64) -> Result<(), String> {
        let backstop = fuel.unsigned_abs().saturating_mul(BACKSTOP_FACTOR).saturating_add(1 << 20);
        self.fuel
            .set(&mut self.store, Val::I64(fuel))
            .and_then(|()| if self.fuel_backstop { self.store.set_fuel(backstop) } else { Ok(()) })
            .map_err(|e| one_line(&e))
    }

    fn fuel_left(&mut self) -> i64 {
        self.fuel.get(&mut self.store).i64().unwrap_or(0)
    }

    fn meters(&mut self) -> Meters {
        let mut i32_meter = |global: Global| global.get(&mut self.store).i32().unwrap_or(0) as u32;
        let (depth, stack_bytes) = (i32_meter(self.depth), i32_meter(self.stack));
        Meters { fuel_left: self.fuel_left(), depth, stack_bytes }
    }

    fn memory_bytes(&mut self) -> u64 {
        self.memory.data_size(&self.store) as u64
    }

    fn write(&mut self, at: u64, bytes: &[u8]) -> bool {
        self.memory.write(&mut self.store, at as usize, bytes).is_ok()
    }

    fn read(&mut self, at: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        let memory = self.memory.data(&self.store);
        in_bounds(at, len, memory.len() as u64).then(|| Cow::Borrowed(&memory[at as usize..][..len as usize]))
    }

    fn abi_version(&mut self) -> Result<i32, wasmtime::Error> {
        self.version.call(&mut self.store, ())
    }

    fn alloc(&mut self, len: i32) -> Result<i32, wasmtime::Error> {
        self.alloc.call(&mut self.store, len)
    }

    fn call(&mut self, call: Call, ptr: i32, len: i32) -> Result<i64, wasmtime::Error> {
        let func = match call {
            Call::Init => &self.init,
            Call::Handle => &self.handle,
        };
        func.call(&mut self.store, (ptr, len))
    }

    fn trap(error: &wasmtime::Error) -> Trap {
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

    fn logs(&mut self) -> impl std::ops::DerefMut<Target = Logs> + '_ {
        &mut self.store.data_mut().logs
    }
}

/// `recon.log(ptr, len)`: keeps the line, bounded ([`Logs::log`]).
fn log(mut caller: Caller<'_, HostState>, ptr: i32, len: i32) {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else { return };
    let (memory, state) = memory.data_and_store_mut(&mut caller);
    let memory = &*memory;
    state.logs.log(ptr, len, memory.len() as u64, |at, len| Cow::Borrowed(&memory[at as usize..][..len as usize]));
}
