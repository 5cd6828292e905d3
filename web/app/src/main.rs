//! The playground page: see `recon_web::app`.

fn main() {
    #[cfg(target_arch = "wasm32")]
    {
        recon_web::crash::install_page_hook();
        use recon_web::bench_page::{TimelineBench, TimelineBenchProps, requested};
        match requested() {
            Some(events) => {
                yew::Renderer::<TimelineBench>::with_props(TimelineBenchProps { events }).render();
            }
            None => {
                yew::Renderer::<recon_web::app::App>::new().render();
            }
        }
    }
}
