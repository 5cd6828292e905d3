//! The simulation worker: see `recon_web::worker`.

fn main() {
    #[cfg(target_arch = "wasm32")]
    recon_web::worker::start();
}
