//! The simulation worker: see `recon_web::worker`.

fn main() {
    #[cfg(target_arch = "wasm32")]
    {
        recon_web::crash::install_worker_hook();
        recon_web::worker::start();
    }
}
