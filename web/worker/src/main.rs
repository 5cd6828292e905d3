//! The simulation worker: see `recon_worker::worker`.

fn main() {
    #[cfg(target_arch = "wasm32")]
    {
        recon_worker::crash::install_worker_hook();
        recon_worker::worker::start();
    }
}
