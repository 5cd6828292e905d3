//! Why a call stopped, in words that do not depend on the engine.
//!
//! A crash reason ends up in the trace, and a trace must be byte-identical
//! natively and in the browser. So engines do not report their own trap
//! messages: each maps its trap onto a [`Trap`], and [`Trap::explain`] reads
//! the instrumentation's meters first, since running out of fuel or depth is
//! an `unreachable` the instrumentation planted.

use std::fmt;

use crate::Limits;

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
    /// The engine's own stack ran out before the call depth limit (frames
    /// larger than the host allows for; see the engine's docs).
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

impl Trap {
    /// Explains a trapped call in one line, from the meters exported by the
    /// instrumented module as they were after the trap (`recon_fuel`,
    /// `recon_depth`) and the size of its memory in bytes.
    ///
    /// ```
    /// use recon_host::{Limits, Trap};
    /// let limits = Limits::default();
    /// assert_eq!(Trap::Unreachable.explain(&limits, -3, 1, 65_536), "ran out of fuel (budget 1000000000 per call)");
    /// assert_eq!(Trap::Unreachable.explain(&limits, 10, 1, 65_536), "trapped: executed an unreachable instruction");
    /// ```
    pub fn explain(&self, limits: &Limits, fuel_left: i64, depth: u32, memory_bytes: u64) -> String {
        // The meters go negative (fuel) or past the limit (depth) only on the
        // way into the `unreachable` the instrumentation planted.
        if fuel_left < 0 {
            format!("ran out of fuel (budget {} per call)", limits.fuel_per_call)
        } else if depth > limits.max_call_depth {
            format!("exceeded the call depth limit ({})", limits.max_call_depth)
        } else if memory_bytes >= limits.memory_pages() * crate::limits::PAGE_BYTES {
            // Most allocators abort when `memory.grow` fails: say so.
            format!("trapped: {self}, with its memory at the cap ({memory_bytes} bytes)")
        } else {
            format!("trapped: {self}")
        }
    }
}
