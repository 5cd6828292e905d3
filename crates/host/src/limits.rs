//! What a plugin instance may consume.

use recon_scenario::{PluginLimits, PluginSetting};

/// Bytes in a WebAssembly page.
pub(crate) const PAGE_BYTES: u64 = 65_536;

/// Pages in 4 GiB, all a 32-bit memory can address.
const MAX_PAGES: u64 = 65_536;

/// The most stack one function's frame may be charged, in bytes; a module
/// with a larger frame is refused at load.
///
/// A frame is charged 64 bytes, plus 8 for each parameter and local (16 for
/// a `v128`), plus 8 for each value its operand stack holds at its highest
/// and four more for the metering's own (16 each in a function whose
/// operand stack ever holds a `v128`): an upper bound of what V8's baseline
/// compiler (4 to 16 bytes a slot, about 56 bytes of header, measured in
/// Chromium) and Cranelift reserve for it.
/// Every call adds its frame's charge to the stack meter on entry and takes
/// it back on exit, and traps when the meter passes [`Limits::stack_bytes`].
/// Since an engine reserves a frame before its first instruction runs, the
/// engine's stack must hold the whole budget plus one frame of this size:
/// in a Chromium worker (about 500 KB) the budget takes half and this a
/// quarter, leaving the rest to the host's own frames. Real compilers' frames
/// are far smaller (the built-in controllers' functions have at most 238
/// locals, about 2 KiB).
pub const MAX_FRAME_BYTES: u32 = 128 << 10;

/// The limits a plugin runs under.
///
/// They are written into the module when it is loaded ([`crate::Module::load`]),
/// before any engine sees it, so they hold identically under wasmtime and in
/// the browser: the same call runs out of fuel at the same instruction, fails
/// to grow memory at the same size and overflows at the same depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most linear memory an instance may have, in bytes, rounded down to
    /// whole 64 KiB pages. A module that declares more initial memory is
    /// rejected; `memory.grow` beyond it returns -1. At most 4 GiB, the most
    /// a 32-bit memory can address. Default: 64 MiB.
    pub memory_bytes: u64,
    /// The fuel for one call ([`recon_abi::Instance::init`] or
    /// [`recon_abi::Instance::handle`], including the `recon_alloc` call for its
    /// input): one unit per WebAssembly instruction executed, plus one unit per
    /// 8 bytes (or table elements) a bulk memory or table instruction touches.
    /// Values above `i64::MAX` count as `i64::MAX`. Default: 1,000,000,000.
    pub fuel_per_call: u64,
    /// The fuel for all the `handle` calls of one instance in one virtual
    /// second (from `time_ms` 1000·k to 1000·(k+1)). A call gets the smaller
    /// of [`Limits::fuel_per_call`] and what is left of its second, so a plugin
    /// that spends its whole budget on every call and asks to be called
    /// again every millisecond runs out at the same instruction in every
    /// engine, after at most this much work per simulated second, rather
    /// than costing a second of real time per simulated millisecond.
    /// `recon_init` is not counted (it is one call per instance, and
    /// restarts back off by a second or more). Default: 2,000,000,000, two
    /// calls' worth (the busiest built-in controller spends about 15,000,000
    /// in a virtual second of the library's scenarios); each object the
    /// second's inputs bring adds [`Limits::fuel_per_input_object`], so a
    /// scheduler handed a large cluster's pods at once is not cut short.
    pub fuel_per_virtual_second: u64,
    /// What each object a `recon_handle` call's input brings (a listed
    /// object, a watch event, a result; timers bring none) adds to the
    /// budget of its virtual second: work that grows with the cluster is
    /// paid for by the input that asks for it, while a plugin that only
    /// asks to be called again gets [`Limits::fuel_per_virtual_second`].
    /// Default: 20,000,000.
    pub fuel_per_input_object: u64,
    /// How deeply calls may nest inside the plugin: the exported function the
    /// host calls is depth 1. Default: 2,000.
    pub max_call_depth: u32,
    /// The stack budget: the most bytes the frames of the calls nested inside
    /// the plugin may take together, each charged by its size
    /// ([`crate::MAX_FRAME_BYTES`] says how). It stops recursion of large
    /// frames at the same call in every engine, before the engines' own
    /// stacks run out (the browser's is the smaller, about 500 KB in a
    /// Chromium worker: the budget, one more frame of the largest size a
    /// module may have and the host's own frames fit in it). Not a scenario
    /// setting; raise it only with the engines' stacks. Default: 262,144
    /// (256 KiB).
    pub stack_bytes: u32,
    /// The largest module accepted, in bytes: the file as uploaded, and the
    /// module once instrumented (which adds the meters' code). Default: 16 MiB
    /// (a release build of a built-in controller is about 0.5 MiB, a debug
    /// build about 1.5 MiB).
    pub max_module_bytes: u64,
    /// The most functions a module may define. Compiling natively takes time
    /// in proportion to them, every time a plugin is loaded. Default: 20,000
    /// (a debug build of a built-in controller defines about 4,000).
    pub max_functions: u32,
    /// The largest result of one call (`recon_init`'s manifest,
    /// `recon_handle`'s output) the host reads and decodes, in bytes.
    /// Default: 16 MiB.
    pub max_output_bytes: u64,
    /// The most actions one `recon_handle` call may return. Default: 10,000.
    pub max_actions_per_call: u32,
}

impl Limits {
    /// The defaults, as a constant: `Limits { fuel_per_call: 1_000, ..Limits::DEFAULT }`
    /// works in `const` items too. What a scenario may set defaults to the
    /// scenario format's `PluginLimits::DEFAULT_*`.
    pub const DEFAULT: Limits = Limits {
        memory_bytes: PluginLimits::DEFAULT_MEMORY_BYTES,
        fuel_per_call: PluginLimits::DEFAULT_FUEL_PER_CALL,
        fuel_per_virtual_second: PluginLimits::DEFAULT_FUEL_PER_VIRTUAL_SECOND,
        fuel_per_input_object: crate::FUEL_PER_INPUT_OBJECT,
        max_call_depth: PluginLimits::DEFAULT_MAX_CALL_DEPTH,
        stack_bytes: 256 << 10,
        max_module_bytes: PluginLimits::DEFAULT_MAX_MODULE_BYTES,
        max_functions: PluginLimits::DEFAULT_MAX_FUNCTIONS,
        max_output_bytes: PluginLimits::DEFAULT_MAX_OUTPUT_BYTES,
        max_actions_per_call: PluginLimits::DEFAULT_MAX_ACTIONS_PER_CALL,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// How a message about a limit that a scenario sets ends: the setting that
/// raises it, and how far, or that it is already as high as a scenario may
/// set it. A controller run on a big cluster meets the defaults first
/// (`docs/LIMITS.md`); the message says what to change.
pub(crate) fn raised_by(setting: PluginSetting, now: u64) -> String {
    let (name, most) = (setting.name(), setting.most());
    if now < most {
        format!("the scenario's limits.plugins.{name} raises it, up to {most}")
    } else {
        format!("the most limits.plugins.{name} may be")
    }
}

impl From<&recon_scenario::PluginLimits> for Limits {
    /// The limits a scenario sets (`limits.plugins`), the defaults where it
    /// sets none.
    fn from(set: &recon_scenario::PluginLimits) -> Limits {
        let d = Limits::DEFAULT;
        Limits {
            memory_bytes: set.memory_bytes.unwrap_or(d.memory_bytes),
            fuel_per_call: set.fuel_per_call.unwrap_or(d.fuel_per_call),
            fuel_per_virtual_second: set.fuel_per_virtual_second.unwrap_or(d.fuel_per_virtual_second),
            fuel_per_input_object: d.fuel_per_input_object,
            max_call_depth: set.max_call_depth.unwrap_or(d.max_call_depth),
            stack_bytes: d.stack_bytes,
            max_module_bytes: set.max_module_bytes.unwrap_or(d.max_module_bytes),
            max_functions: set.max_functions.unwrap_or(d.max_functions),
            max_output_bytes: set.max_output_bytes.unwrap_or(d.max_output_bytes),
            max_actions_per_call: set.max_actions_per_call.unwrap_or(d.max_actions_per_call),
        }
    }
}

impl Limits {
    /// The memory cap in pages.
    pub(crate) fn memory_pages(&self) -> u64 {
        (self.memory_bytes / PAGE_BYTES).min(MAX_PAGES)
    }

    /// The fuel budget as the instrumented counter (an `i64` global) holds it.
    pub fn fuel_budget(&self) -> i64 {
        i64::try_from(self.fuel_per_call).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limit below what a scenario may set names the setting and how
    /// far it goes; one already there says so rather than send the user
    /// to a setting that cannot help.
    #[test]
    fn a_limit_says_which_setting_raises_it_and_how_far() {
        assert_eq!(
            raised_by(PluginSetting::MemoryBytes, 64 << 20),
            "the scenario's limits.plugins.memoryBytes raises it, up to 1073741824"
        );
        assert_eq!(raised_by(PluginSetting::MemoryBytes, 1 << 30), "the most limits.plugins.memoryBytes may be");
    }
}
