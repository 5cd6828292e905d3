//! A plugin, validated and instrumented, ready for any engine.

use wasmparser::Validator;

use crate::{Limits, PluginError, instrument, validate};

/// The exported `i64` global that holds the fuel left in the current call.
/// The host sets it to [`Limits::fuel_budget`] before each call (or to what
/// is left of [`Limits::fuel_per_virtual_second`], when less); a negative
/// value after a trap means the call ran out of fuel.
pub const FUEL_EXPORT: &str = "recon_fuel";

/// The exported `i32` global that holds the current call depth. The host sets
/// it to 0 before each call; a value above [`Limits::max_call_depth`] after
/// a trap means the call nested too deeply.
pub const DEPTH_EXPORT: &str = "recon_depth";

/// The exported `i32` global that holds the bytes of stack charged to the
/// frames of the calls in progress (see [`crate::MAX_FRAME_BYTES`]). The host
/// sets it to 0 before each call; a value above [`Limits::stack_bytes`] after
/// a trap means the call exhausted its stack budget.
pub const STACK_EXPORT: &str = "recon_stack";

/// A plugin that passed validation and carries its limits in its code.
///
/// Its [`bytes`](Module::bytes) are what every engine instantiates: wasmtime
/// natively, the page's `WebAssembly` in the browser.
#[derive(Clone, Debug)]
pub struct Module {
    name: String,
    bytes: Vec<u8>,
    limits: Limits,
}

impl Module {
    /// Validates `bytes` as a plugin named `name` (usually its file name; it
    /// starts every error message) and instruments it for `limits`.
    pub fn load(name: &str, bytes: &[u8], limits: &Limits) -> Result<Module, PluginError> {
        let operand_stacks = validate::validate(name, bytes, limits)?;
        let host = |reason| PluginError::Host { name: name.to_owned(), reason };
        let bytes = instrument::instrument(bytes, limits, &operand_stacks).map_err(|failure| match failure {
            instrument::Failure::TooLarge(problem) => PluginError::TooLarge { name: name.to_owned(), problem },
            instrument::Failure::Bug(e) => host(format!("instrumentation failed: {e}")),
        })?;
        // The rewrite must keep the module valid. Checking costs little next
        // to compiling, and names a host bug before an engine trips on it.
        Validator::new_with_features(validate::FEATURES)
            .validate_all(&bytes)
            .map_err(|e| host(format!("the instrumented module is invalid: {e}")))?;
        Ok(Module { name: name.to_owned(), bytes, limits: *limits })
    }

    /// The plugin's name, as given to [`Module::load`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instrumented module.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The limits the module was instrumented for.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}
