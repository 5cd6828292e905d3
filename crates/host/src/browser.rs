//! The browser engine: the page's own `WebAssembly`, driven through `js-sys`.
//!
//! It has the same API as the native wasmtime engine, so callers do not care
//! which one they get. It compiles and instantiates synchronously
//! (`new WebAssembly.Module`, `new WebAssembly.Instance`), which browsers
//! allow for modules of any size only off the main thread: run it in a Web
//! Worker, as the playground does.
//!
//! The instrumented module enforces fuel, memory, depth and stack by itself, and the
//! memory's declared maximum is the cap, so `memory.grow` fails at the same
//! size here as natively. Unlike wasmtime, the browser offers no fuel of its
//! own to back the instrumentation up: if a host bug let a call run forever,
//! nothing here would stop it. The page's watchdog, which terminates the
//! worker when a step takes far too long, is the last resort.
//!
//! Traps arrive as JavaScript exceptions (`WebAssembly.RuntimeError`, or a
//! `RangeError` when the engine's stack runs out); their messages, in the
//! words of V8, SpiderMonkey or JavaScriptCore, are mapped onto a [`Trap`]
//! and explained from the meters ([`Trap::explain`]), so crash reasons are
//! the same as natively. Two differences between the engines are taken care
//! of in the module: V8 has one message for a float-to-integer conversion
//! of NaN and of a value out of range, where wasmtime calls the second an
//! integer overflow, so the instrumentation turns an out-of-range operand
//! into NaN; and the worker's stack (about 500 KB in Chromium) holds fewer
//! large frames than wasmtime's, so the stack budget, charged by frame size,
//! stops recursion first in both. (Older V8 had one message for a call to an
//! empty table slot and one with the wrong signature, worded as
//! [`Trap::BadSignature`]: only such a V8 would differ.)

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use js_sys::{BigInt, Function, Object, Reflect, Uint8Array, WebAssembly};
use recon_abi::Crash;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::{JsCast, JsValue};

use crate::call::{Call, Logs, in_bounds, one_line};
use crate::instance::{Machine, lost_export, not_instantiated};
use crate::{DEPTH_EXPORT, FUEL_EXPORT, Limits, Meters, Module, PluginError, STACK_EXPORT, Trap, WasmInstance};

/// The browser's own WebAssembly engine, driven synchronously: use it in a
/// Web Worker. There is nothing to configure, since the limits are in the
/// modules. Cloning is cheap.
///
/// There is no fuel backstop: unlike wasmtime, the browser cannot stop a
/// call that the instrumented fuel meter failed to stop (a host bug). The
/// playground's page keeps a watchdog that terminates the worker as a last
/// resort. See the crate's README.
#[derive(Clone)]
pub struct Engine {
    _private: (),
}

/// A module compiled by the browser: compile once, instantiate for every
/// (re)start of every component that runs it. Cloning is cheap.
#[derive(Clone)]
pub struct CompiledPlugin {
    name: Arc<str>,
    limits: Limits,
    module: WebAssembly::Module,
}

/// The browser side of a [`WasmInstance`]: its exports, and the `recon.log`
/// import, which lives as long as the instance.
pub(crate) struct Browser {
    memory: WebAssembly::Memory,
    version: Function,
    alloc: Function,
    init: Function,
    handle: Function,
    fuel: WebAssembly::Global,
    depth: WebAssembly::Global,
    stack: WebAssembly::Global,
    logs: Rc<RefCell<Logs>>,
    _log: Closure<dyn FnMut(i32, i32)>,
}

impl Engine {
    /// The engine of the JavaScript environment this runs in. Fails only if
    /// that environment has no `WebAssembly`.
    pub fn new() -> Result<Engine, PluginError> {
        match Reflect::has(&js_sys::global(), &JsValue::from_str("WebAssembly")) {
            Ok(true) => Ok(Engine { _private: () }),
            _ => Err(PluginError::Engine { reason: "this JavaScript environment has no WebAssembly".into() }),
        }
    }

    /// [`Engine::new`]: the page's `WebAssembly` gives each instance its own
    /// memory and has no pool of slots; this is here so that code shared
    /// with the native engine compiles for both.
    pub fn pooled(_slots: u32) -> Result<Engine, PluginError> {
        Engine::new()
    }

    /// Never: see [`Engine::pooled`].
    pub fn is_pooled(&self) -> bool {
        false
    }

    /// Compiles a loaded module's instrumented bytes, synchronously.
    pub fn compile(&self, module: &Module) -> Result<CompiledPlugin, PluginError> {
        let bytes = Uint8Array::from(module.bytes());
        let compiled = WebAssembly::Module::new(&bytes)
            .map_err(|e| PluginError::Host { name: module.name().to_owned(), reason: message(&e) })?;
        Ok(CompiledPlugin { name: module.name().into(), limits: *module.limits(), module: compiled })
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
        // `recon.log` needs the memory, which exists only once the instance
        // does: the import finds it here.
        let memory_cell: Rc<OnceCell<WebAssembly::Memory>> = Rc::default();
        let logs: Rc<RefCell<Logs>> = Rc::default();
        let log = {
            let (memory, logs) = (memory_cell.clone(), logs.clone());
            Closure::<dyn FnMut(i32, i32)>::own_aborting(move |ptr, len| {
                let Some(memory) = memory.get() else { return };
                let buffer = memory.buffer();
                let size = byte_length(&buffer);
                logs.borrow_mut().log(ptr, len, size, |at, len| Cow::Owned(copy_out(&buffer, at, len)));
            })
        };
        let recon = Object::new();
        let imports = Object::new();
        let set = |target: &Object, key: &str, value: &JsValue| Reflect::set(target, &JsValue::from_str(key), value);
        set(&recon, "log", log.as_ref())
            .and_then(|_| set(&imports, "recon", &recon))
            .map_err(|e| not_instantiated(&self.name, &message(&e)))?;
        let instance = WebAssembly::Instance::new(&self.module, &imports)
            .map_err(|e| not_instantiated(&self.name, &message(&e)))?;

        // Validation checked every export, so these only fail on a host bug.
        let exports = instance.exports();
        let missing = |what: &str| lost_export(&self.name, what);
        let memory: WebAssembly::Memory = export(&exports, "memory").ok_or_else(|| missing("memory"))?;
        let fuel = export(&exports, FUEL_EXPORT).ok_or_else(|| missing(FUEL_EXPORT))?;
        let depth = export(&exports, DEPTH_EXPORT).ok_or_else(|| missing(DEPTH_EXPORT))?;
        let stack = export(&exports, STACK_EXPORT).ok_or_else(|| missing(STACK_EXPORT))?;
        let version = export(&exports, "recon_abi_version");
        let alloc = export(&exports, "recon_alloc");
        let init = export(&exports, "recon_init");
        let handle = export(&exports, "recon_handle");
        let (Some(version), Some(alloc), Some(init), Some(handle)) = (version, alloc, init, handle) else {
            return Err(missing("recon_*"));
        };
        // Set once, here: the cell was empty.
        let _ = memory_cell.set(memory.clone());
        let machine = Browser { memory, version, alloc, init, handle, fuel, depth, stack, logs, _log: log };
        WasmInstance::start(self.name.clone(), self.limits, machine)
    }
}

impl Machine for Browser {
    type Error = JsValue;

    fn reset_meters(&mut self, fuel: i64) -> Result<(), String> {
        // Set through `Reflect`, which reports what the setter throws. An i64
        // global holds a BigInt.
        let value = JsValue::from_str("value");
        Reflect::set(&self.fuel, &value, &BigInt::from(fuel)).map(drop).map_err(|e| message(&e))
    }

    fn fuel_left(&mut self) -> i64 {
        i64::try_from_js_value(self.fuel.value()).unwrap_or(0)
    }

    fn meters(&mut self) -> Meters {
        // An i32 global reads as a (signed) number.
        let i32_meter = |global: &WebAssembly::Global| global.value().as_f64().map_or(0, |n| n as i32 as u32);
        Meters { fuel_left: self.fuel_left(), depth: i32_meter(&self.depth), stack_bytes: i32_meter(&self.stack) }
    }

    fn memory_bytes(&mut self) -> u64 {
        byte_length(&self.memory.buffer())
    }

    fn write(&mut self, at: u64, bytes: &[u8]) -> bool {
        let buffer = self.memory.buffer();
        if !in_bounds(at, bytes.len() as u64, byte_length(&buffer)) {
            return false;
        }
        if !bytes.is_empty() {
            Uint8Array::new_with_byte_offset_and_length(&buffer, at as u32, bytes.len() as u32).copy_from(bytes);
        }
        true
    }

    fn read(&mut self, at: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        let buffer = self.memory.buffer();
        in_bounds(at, len, byte_length(&buffer)).then(|| Cow::Owned(copy_out(&buffer, at, len)))
    }

    fn abi_version(&mut self) -> Result<i32, JsValue> {
        self.version.call0(&JsValue::UNDEFINED).and_then(i32_result)
    }

    fn alloc(&mut self, len: i32) -> Result<i32, JsValue> {
        self.alloc.call1(&JsValue::UNDEFINED, &JsValue::from(len)).and_then(i32_result)
    }

    fn call(&mut self, call: Call, ptr: i32, len: i32) -> Result<i64, JsValue> {
        let func = match call {
            Call::Init => &self.init,
            Call::Handle => &self.handle,
        };
        let result = func.call2(&JsValue::UNDEFINED, &JsValue::from(ptr), &JsValue::from(len))?;
        // An i64 result arrives as a BigInt.
        i64::try_from_js_value_ref(&result).ok_or_else(|| not_a_result(&result, "i64"))
    }

    fn trap(error: &JsValue) -> Trap {
        let Some(error) = error.dyn_ref::<js_sys::Error>() else {
            return Trap::Other(message(error));
        };
        match String::from(error.message()).trim() {
            // V8 (Chrome, Edge, Node; its `MessageTemplate`s, stable across
            // versions but for the few older ones listed too), SpiderMonkey
            // (Firefox), JavaScriptCore (Safari).
            "unreachable" | "unreachable executed" | "Unreachable code should not be executed" => Trap::Unreachable,
            "memory access out of bounds"
            | "data segment out of bounds"
            | "index out of bounds"
            | "Out of bounds memory access" => Trap::MemoryOutOfBounds,
            "table index is out of bounds"
            | "invalid index into function table"
            | "element segment out of bounds"
            | "table index out of bounds"
            | "Out of bounds call_indirect"
            | "Out of bounds table access" => Trap::TableOutOfBounds,
            "null function" | "indirect call to null" | "call_indirect to a null table entry" => {
                Trap::IndirectCallToNull
            }
            // Older versions of V8 had one message for both.
            "null function or function signature mismatch"
            | "function signature mismatch"
            | "indirect call signature mismatch"
            | "call_indirect to a signature that does not match" => Trap::BadSignature,
            "divide by zero" | "remainder by zero" | "integer divide by zero" | "Division by zero" => {
                Trap::IntegerDivisionByZero
            }
            "divide result unrepresentable" | "integer overflow" | "Integer overflow" => Trap::IntegerOverflow,
            "float unrepresentable in integer range"
            | "integer result unrepresentable"
            | "invalid conversion to integer"
            | "Out of bounds Trunc operation" => Trap::BadConversionToInteger,
            "Maximum call stack size exceeded" | "Maximum call stack size exceeded." | "too much recursion" => {
                Trap::StackOverflow
            }
            _ => Trap::Other(message(error)),
        }
    }

    fn logs(&mut self) -> impl std::ops::DerefMut<Target = Logs> + '_ {
        self.logs.borrow_mut()
    }
}

/// The export `name` of an instance, if it is a `T`.
fn export<T: JsCast>(exports: &Object, name: &str) -> Option<T> {
    Reflect::get(exports, &JsValue::from_str(name)).ok()?.dyn_into().ok()
}

/// The size of an `ArrayBuffer`. Read as a number: a 4 GiB memory's size
/// does not fit in the `u32` js-sys would return.
fn byte_length(buffer: &JsValue) -> u64 {
    Reflect::get(buffer, &JsValue::from_str("byteLength")).ok().and_then(|n| n.as_f64()).map_or(0, |n| n as u64)
}

/// A copy of `len` bytes at `at` of a memory's buffer, which holds them.
fn copy_out(buffer: &JsValue, at: u64, len: u64) -> Vec<u8> {
    if len == 0 {
        return Vec::new();
    }
    // In bounds, so neither exceeds 4 GiB - 1: the last byte is addressable.
    let buffer: &js_sys::ArrayBuffer = buffer.unchecked_ref();
    Uint8Array::new_with_byte_offset_and_length(buffer, at as u32, len as u32).to_vec()
}

/// An `i32` result, which arrives as a number.
fn i32_result(result: JsValue) -> Result<i32, JsValue> {
    result.as_f64().map(|n| n as i32).ok_or_else(|| not_a_result(&result, "i32"))
}

/// A result of the wrong type: a host bug, reported as what the call threw.
fn not_a_result(value: &JsValue, expected: &str) -> JsValue {
    JsValue::from_str(&format!("returned {} where an {expected} was expected (a host bug)", message(value)))
}

/// A thrown JavaScript value in one line: `Name: message` for errors.
fn message(value: &JsValue) -> String {
    let text = match value.dyn_ref::<js_sys::Error>() {
        Some(error) => String::from(error.to_string()),
        None => value.as_string().unwrap_or_else(|| format!("{value:?}")),
    };
    one_line(&text)
}
