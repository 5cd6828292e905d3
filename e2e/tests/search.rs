//! "Find a violation" in headless Chromium: the search across Web Workers
//! gives what `recon explore` gives natively. Run by `cargo xtask e2e --test search`.

use recon_e2e::{Browser, explore_natively, native_hash, plugin_path, run_scenario};
use recon_scenario::Scenario;

const WORKLOAD: &str = "pod-safety-59848-workload";

fn workload() -> Scenario {
    let library = recon_catalog::scenario(WORKLOAD).unwrap();
    recon_scenario::parse(WORKLOAD, library.yaml).unwrap()
}

/// The `max` and `value` of the search's progress bar.
async fn progress_bar(page: &Browser) -> (usize, usize) {
    let bar = page.find("#search-progress").await;
    let number = |v: Option<String>| v.and_then(|v| v.parse::<f64>().ok()).map(|v| v as usize);
    let max = number(bar.attr("max").await.unwrap()).expect("a max");
    let value = number(bar.attr("value").await.unwrap()).expect("a value");
    (max, value)
}

#[tokio::test(flavor = "current_thread")]
async fn find_a_violation_opens_the_run_recon_explore_finds_in_the_59848_workload() {
    let native = explore_natively(&workload(), 2);
    let (index, found) = native.found.expect("recon explore cracks the naive kubelet");
    // The page runs the scenario it received as YAML: compare with the same.
    let found = recon_scenario::parse("found.yaml", &recon_scenario::to_yaml(&found)).unwrap();
    let expected = run_scenario(&found, &[]).hash();

    let page = Browser::open("").await;
    let first = page.hash_after(None).await;
    page.find("#scenario-select").await.select_by_value(WORKLOAD).await.unwrap();
    let before = page.hash_after(Some(&first)).await;
    assert_eq!(before, native_hash(WORKLOAD, &[]));
    page.find("#find-violation").await.click().await.unwrap();
    page.find("#search-progress").await;
    let result = page.wait_text("#search-result", |t| t.starts_with("Found")).await;
    assert!(result.contains(&format!("plan #{index} ")) && result.contains("pod identity"), "{result}");
    // Every plan before the failing one ran; none beyond the budget.
    let (max, value) = progress_bar(&page).await;
    assert_eq!(max, native.plans);
    assert!(value > index && value <= max, "{value} of {max}");

    // The shrunk scenario is now the page's scenario, run, with its violation selected.
    assert_eq!(page.hash_after(Some(&before)).await, expected);
    let description = page.find("#scenario-description").await.text().await.unwrap();
    assert!(description.contains("Found by `recon explore`"), "{description}");
    let headline = page.wait_text("article.violation.selected .headline", |t| !t.is_empty()).await;
    assert!(headline.contains("runs on two nodes at once"), "{headline}");
    let script = page.find("#script").await.text().await.unwrap();
    assert!(script.contains("restart kubelet-node-1 on apiserver-2"), "{script}");
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn with_the_fixed_kubelet_uploaded_the_same_search_finds_nothing() {
    let mut fixed = workload();
    for c in &mut fixed.components {
        if c.controller == "kubelet" {
            c.controller = "kubelet-fixed".into();
        }
    }
    let native = explore_natively(&fixed, 2);
    assert!(native.found.is_none());

    let page = Browser::open(&format!("?scenario={WORKLOAD}")).await;
    page.hash_after(None).await;
    let path = plugin_path("recon_plugin_kubelet_fixed");
    for kubelet in ["kubelet-node-1", "kubelet-node-2"] {
        page.find(&format!("#upload-{kubelet}")).await.send_keys(&path.display().to_string()).await.unwrap();
        page.wait_text(&format!("#controller-{kubelet}"), |t| t.contains("kubelet-fixed")).await;
    }
    let shown = page.hash_after(None).await;
    page.find("#find-violation").await.click().await.unwrap();
    let result = page.wait_text("#search-result", |t| t.starts_with("Nothing broke")).await;
    assert!(result.contains(&format!("all {} plans", native.plans)), "{result}");
    assert_eq!(progress_bar(&page).await, (native.plans, native.plans));
    // Nothing was opened: the run shown is the one before the search.
    assert_eq!(page.hash_after(None).await, shown);
    assert!(!page.exists("#search-cancel").await);
    page.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_search_can_be_cancelled_and_leaves_the_run_alone() {
    // With the fixed kubelet as uploaded plugins every plan runs in the
    // browser's WebAssembly: long enough to cancel.
    let page = Browser::open(&format!("?scenario={WORKLOAD}")).await;
    page.hash_after(None).await;
    let path = plugin_path("recon_plugin_kubelet_fixed");
    page.find("#upload-kubelet-node-1").await.send_keys(&path.display().to_string()).await.unwrap();
    page.wait_text("#controller-kubelet-node-1", |t| t.contains("kubelet-fixed")).await;
    let shown = page.hash_after(None).await;
    // Click Cancel in the first frame it shows: the workers are still loading.
    let script = r#"
        const done = arguments[arguments.length - 1];
        document.querySelector('#find-violation').click();
        (function cancel() {
            const button = document.querySelector('#search-cancel');
            if (button) { button.click(); done(true); } else requestAnimationFrame(cancel);
        })();
    "#;
    page.client().execute_async(script, vec![]).await.unwrap();
    let result = page.wait_text("#search-result", |t| !t.is_empty()).await;
    assert!(result.starts_with("Cancelled after"), "{result}");
    assert!(!page.exists("#search-cancel").await);
    assert_eq!(page.hash_after(None).await, shown);
    page.close().await;
}
