//! Standard output that a closed pipe cannot crash (see `say!`).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the reader has gone: nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes one line; after a broken pipe, writes nothing. Any other write
/// error is reported once on standard error and printing stops.
pub fn line(text: std::fmt::Arguments<'_>) {
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
