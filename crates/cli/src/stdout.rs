//! Standard output that a closed pipe cannot crash (see `say!`).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the reader has gone: nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Set when standard output carries something else (`recon run --trace
/// -`): the lines go to standard error instead.
static TO_STDERR: AtomicBool = AtomicBool::new(false);

/// From now on, lines go to standard error: standard output carries the
/// trace, which a reader (`| jq`) wants alone.
pub fn summary_to_stderr() {
    TO_STDERR.store(true, Ordering::Relaxed);
}

/// The reader of standard output has gone (found by another writer):
/// nothing more is written there.
pub fn closed() {
    CLOSED.store(true, Ordering::Relaxed);
}

/// Writes one line; after a broken pipe, writes nothing. Any other write
/// error is reported once on standard error and printing stops.
pub fn line(text: std::fmt::Arguments<'_>) {
    if TO_STDERR.load(Ordering::Relaxed) {
        eprintln!("{text}");
        return;
    }
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("recon: cannot write to standard output: {e}");
        }
    }
}
