//! A large run in the playground: the page answers while the worker is busy
//! with it, and the run it shows is the native one.

use std::time::{Duration, Instant};

use recon_e2e::Browser;
use recon_tests::soak::{SoakSize, yaml};

#[tokio::test(flavor = "current_thread")]
async fn a_soak_run_keeps_the_page_responding_and_gives_the_native_trace() {
    // A tenth of the soak in BENCHMARKS.md: big enough to keep the worker
    // busy for a while, small enough for a test.
    let text = yaml(SoakSize { nodes: 100, pods: 1_000, minutes: 3 });
    let page = Browser::open("").await;
    let before = page.hash_after(None).await;
    page.find("#editor-toggle").await.click().await.unwrap();
    let set = "const t = document.querySelector('#editor-text'); t.value = arguments[0]; \
               t.dispatchEvent(new Event('input', { bubbles: true }));";
    page.client().execute(set, vec![text.clone().into()]).await.unwrap();
    page.wait_text("#editor-status", |t| t.starts_with("valid")).await;
    page.find("#editor-apply").await.click().await.unwrap();
    // While the worker runs it, the page answers a click at once.
    page.find("#running").await;
    page.find("#progress").await;
    let clicked = Instant::now();
    page.find("#about-toggle").await.click().await.unwrap();
    page.find("#about").await;
    let answered = clicked.elapsed();
    assert!(page.exists("#running").await, "the run was still going when the page answered");
    assert!(answered < Duration::from_secs(1), "the page took {answered:?} to answer a click");
    let after = page.hash_after(Some(&before)).await;
    let scenario = recon_scenario::parse("soak.yaml", &text).unwrap();
    let native = recon_e2e::run_scenario(&scenario, &[]);
    assert!(native.entries.len() > 20_000, "a large run: {} entries", native.entries.len());
    assert_eq!(after, native.hash());
    page.close().await;
}
