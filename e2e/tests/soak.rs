//! A large run in the playground: the page answers while the worker is busy
//! with it, and the run it shows is the native one.

use recon_e2e::Browser;
use recon_tests::soak::{SoakSize, yaml};

#[tokio::test(flavor = "current_thread")]
async fn a_soak_run_keeps_the_page_responding_and_gives_the_native_trace() {
    // A tenth of the soak in BENCHMARKS.md: big enough to keep the worker
    // busy for a while, small enough for a test.
    let text = yaml(SoakSize { nodes: 100, pods: 1_000, minutes: 3 });
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    page.open_editor().await;
    page.apply_scenario(&text).await;
    // While the worker runs it, the page answers a click at once.
    page.find("#progress").await;
    page.assert_answers_while_running().await;
    let after = page.hash_after(Some(&before)).await;
    let scenario = recon_scenario::parse("soak.yaml", &text).unwrap();
    let native = recon_e2e::run_scenario(&scenario, &[]);
    assert!(native.entries.len() > 20_000, "a large run: {} entries", native.entries.len());
    assert_eq!(after, native.hash());
    page.close().await;
}
