//! Why a call stopped, in words that do not depend on the engine.
//!
//! A crash reason ends up in the trace, and a trace must be byte-identical
//! natively and in the browser. So engines do not report their own trap
//! messages: each maps its trap onto a [`Trap`] (wasmtime by its trap code,
//! the browser by the `WebAssembly.RuntimeError`'s message), and
//! [`Trap::explain`] reads the instrumentation's meters first, since running
//! out of fuel, depth or stack is an `unreachable` the instrumentation
//! planted. Where engines would name one trap differently, the
//! instrumentation makes them agree (a float-to-integer conversion out of
//! range traps as one of NaN, see `instrument.rs`).

use std::fmt;

use recon_scenario::PluginSetting;

use crate::Limits;
use crate::limits::raised_by;

/// A WebAssembly trap, as every engine can name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trap {
    /// An `unreachable` instruction ran (Rust's `panic = "abort"` and failed
    /// allocations end here).
    Unreachable,
    /// A load or store outside linear memory.
    MemoryOutOfBounds,
    /// A table access outside the table.
    TableOutOfBounds,
    /// An indirect call to an empty table slot.
    IndirectCallToNull,
    /// An indirect call with the wrong signature.
    BadSignature,
    /// Integer division or remainder by zero.
    IntegerDivisionByZero,
    /// Integer overflow (`i32.div_s` of `MIN` by -1).
    IntegerOverflow,
    /// A float-to-integer conversion of NaN or an out-of-range value.
    BadConversionToInteger,
    /// The engine's own stack ran out. The stack budget
    /// ([`Limits::stack_bytes`]) is meant to stop every call first; this
    /// names what happens if it did not.
    StackOverflow,
    /// Anything else, in the engine's words.
    Other(String),
}

impl fmt::Display for Trap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Trap::Unreachable => "executed an unreachable instruction",
            Trap::MemoryOutOfBounds => "accessed memory out of bounds",
            Trap::TableOutOfBounds => "accessed a table out of bounds",
            Trap::IndirectCallToNull => "called an empty table slot",
            Trap::BadSignature => "called a function indirectly with the wrong signature",
            Trap::IntegerDivisionByZero => "divided an integer by zero",
            Trap::IntegerOverflow => "overflowed an integer division",
            Trap::BadConversionToInteger => "converted an unrepresentable float to an integer",
            Trap::StackOverflow => "exhausted the engine's stack",
            Trap::Other(message) => message,
        })
    }
}

/// The meters the instrumented module exports, as a call left them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meters {
    /// The fuel left (`recon_fuel`): negative once the call ran out.
    pub fuel_left: i64,
    /// The call depth (`recon_depth`): above [`Limits::max_call_depth`] once
    /// the call nested too deeply.
    pub depth: u32,
    /// The bytes of stack the frames of the calls in progress are charged
    /// (`recon_stack`): above [`Limits::stack_bytes`] once the budget ran out.
    pub stack_bytes: u32,
}

impl Trap {
    /// Explains a trapped call in one line, from the meters exported by the
    /// instrumented module as they were after the trap and the size of its
    /// memory in bytes.
    ///
    /// ```
    /// use recon_host::{Limits, Meters, Trap};
    /// let limits = Limits::default();
    /// let ran_out = Meters { fuel_left: -3, depth: 1, stack_bytes: 100 };
    /// assert_eq!(
    ///     Trap::Unreachable.explain(&limits, ran_out, 65_536),
    ///     "ran out of fuel (budget 1000000000 per call; the scenario's limits.plugins.fuelPerCall raises it, \
    ///      up to 100000000000)"
    /// );
    /// let deep = Meters { fuel_left: 10, depth: 9, stack_bytes: 300_000 };
    /// assert_eq!(Trap::Unreachable.explain(&limits, deep, 65_536), "exhausted its stack budget (262144 bytes)");
    /// let plain = Meters { fuel_left: 10, depth: 1, stack_bytes: 100 };
    /// assert_eq!(Trap::Unreachable.explain(&limits, plain, 65_536), "trapped: executed an unreachable instruction");
    /// ```
    pub fn explain(&self, limits: &Limits, meters: Meters, memory_bytes: u64) -> String {
        // The meters go negative (fuel) or past their limits (depth, stack)
        // only on the way into the `unreachable` the instrumentation planted.
        if meters.fuel_left < 0 {
            let raise = raised_by(PluginSetting::FuelPerCall, limits.fuel_per_call);
            format!("ran out of fuel (budget {} per call; {raise})", limits.fuel_per_call)
        } else if meters.depth > limits.max_call_depth {
            let depth = u64::from(limits.max_call_depth);
            let raise = raised_by(PluginSetting::MaxCallDepth, depth);
            format!("exceeded the call depth limit ({depth}; {raise})")
        } else if meters.stack_bytes > limits.stack_bytes {
            format!("exhausted its stack budget ({} bytes)", limits.stack_bytes)
        } else if memory_bytes >= limits.memory_pages() * crate::limits::PAGE_BYTES {
            // Most allocators abort when `memory.grow` fails: say so.
            let raise = raised_by(PluginSetting::MemoryBytes, limits.memory_bytes);
            format!("trapped: {self}, with its memory at the cap ({memory_bytes} bytes; {raise})")
        } else {
            format!("trapped: {self}")
        }
    }
}
