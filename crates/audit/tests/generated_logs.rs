//! The generated logs the benchmark reads (`benches/analysis.rs`) are
//! clean, and the analysis finds exactly the stale relists put in them.

mod support;
mod synthetic;

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use recon_audit::{FindingKind, LogFile, ReadOptions, analyze};
use support::Scratch;

#[test]
fn the_generated_cluster_reads_cleanly_and_every_injected_stale_relist_is_found() {
    let scratch = Scratch::of_this_test();
    let paths: Vec<PathBuf> =
        (0..synthetic::SERVERS).map(|i| scratch.path().join(format!("apiserver-{i}.jsonl"))).collect();
    let mut outs: [Box<dyn Write>; synthetic::SERVERS] =
        std::array::from_fn(|i| Box::new(BufWriter::new(std::fs::File::create(&paths[i]).unwrap())) as Box<dyn Write>);
    // Smaller than the benchmark's million, with stale relists as often.
    let total = 20_000;
    let generated = synthetic::generate(total, 5_000, &mut outs).unwrap();
    drop(outs);
    let files: Vec<LogFile> = paths.into_iter().map(LogFile::named_by_stem).collect();
    let report = analyze(&files, &ReadOptions::default(), |_| {});
    assert!(!report.problems.any(), "{:?}", report.problems);
    assert_eq!(report.events, total);
    assert_eq!(generated.stale, 4);
    let shown = report.findings.iter().filter(|f| f.kind == FindingKind::NodeAgentShownGonePod).count();
    let stale = report.findings.iter().filter(|f| f.kind == FindingKind::StaleRead).count();
    assert_eq!((shown as u64, stale as u64), (generated.stale, generated.stale), "{}", report.text());
    assert_eq!(report.findings.len() as u64, 2 * generated.stale, "nothing else is found: {}", report.text());
}
