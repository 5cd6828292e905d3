//! Events per second through `recon audit`'s analysis: a generated
//! cluster's audit logs (`tests/synthetic`: three API servers, a hundred
//! kubelets, controllers and users; a million events, about 0.6 GB of JSON
//! lines) read from files, parsed, merged and judged, as `recon audit`
//! does. Run with `cargo bench -p recon-audit`; the result and the machine
//! are recorded in BENCHMARKS.md. Under `cargo test` (no `--bench`
//! argument) it runs once on a tenth of the events: the same checks,
//! without writing a gigabyte of logs into every test build's scratch
//! directory.

#[path = "../tests/synthetic/mod.rs"]
mod synthetic;

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::OnceLock;

use divan::counter::{BytesCount, ItemsCount};
use recon_audit::{LogFile, ReadOptions, analyze};

/// Events in the generated logs: a million when benchmarking.
fn events() -> u64 {
    static EVENTS: OnceLock<u64> = OnceLock::new();
    *EVENTS.get_or_init(|| if std::env::args().any(|a| a == "--bench") { 1_000_000 } else { 100_000 })
}

fn main() {
    divan::main();
}

/// The generated logs, under the build's scratch directory: written by
/// the first run, and again whenever the generator changes (the
/// directory is named after its source).
fn logs() -> &'static (Vec<LogFile>, u64) {
    static LOGS: OnceLock<(Vec<LogFile>, u64)> = OnceLock::new();
    LOGS.get_or_init(|| {
        let version = recon_trace::fnv1a(include_str!("../tests/synthetic/mod.rs").as_bytes());
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("audit-bench-{}-{version:016x}", events()));
        let paths: Vec<PathBuf> = (0..synthetic::SERVERS).map(|i| dir.join(format!("apiserver-{i}.jsonl"))).collect();
        let done = dir.join("complete");
        if !done.exists() {
            std::fs::create_dir_all(&dir).expect("a scratch directory");
            let mut outs: [Box<dyn Write>; synthetic::SERVERS] = std::array::from_fn(|i| {
                Box::new(BufWriter::new(std::fs::File::create(&paths[i]).expect("a scratch file"))) as Box<dyn Write>
            });
            synthetic::generate(events(), synthetic::STALE_EVERY, &mut outs).expect("the logs are written");
            drop(outs);
            std::fs::write(&done, "").expect("a marker file");
        }
        let bytes = paths.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum();
        (paths.into_iter().map(LogFile::named_by_stem).collect(), bytes)
    })
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn a_million_events(bencher: divan::Bencher) {
    let (files, bytes) = logs();
    bencher.counter(ItemsCount::new(events())).counter(BytesCount::new(*bytes)).bench(|| {
        let report = analyze(files, &ReadOptions::default(), |_| {});
        assert_eq!(report.events, events());
        assert!(!report.problems.any());
        // Each injected stale relist is a stale read and a #59848 finding, and nothing else is found.
        assert_eq!(report.findings.len() as u64, 2 * (events() / synthetic::STALE_EVERY));
        report.findings.len()
    });
}
