//! What happens if the worker's own code ever panics: its hook throws the
//! panic's text as a JavaScript error, so the worker's `error` event, which
//! the page already handles by replacing the worker, says what broke.

#[cfg(target_arch = "wasm32")]
use recon_web_protocol::describe_panic as describe;

/// Installs the worker's hook: the panic's text becomes the uncaught
/// JavaScript error that ends the worker (instead of a bare "unreachable"),
/// which the page reports as it replaces the worker.
#[cfg(target_arch = "wasm32")]
pub fn install_worker_hook() {
    std::panic::set_hook(Box::new(|info| {
        let text = describe(info);
        web_sys::console::error_1(&format!("Recon worker: {text}").into());
        // Unwinds out of the module as a JS exception; the worker is dead
        // either way, and this way its error event carries the reason.
        wasm_bindgen::throw_str(&format!("internal error in the simulation worker: {text}"));
    }));
}
