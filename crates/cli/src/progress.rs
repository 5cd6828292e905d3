//! `recon run`'s progress on standard error: how far the run has got in
//! virtual time, how many trace entries it has written and how long it has
//! taken, about ten times a second, then one line for the whole run. A
//! cluster at Kubernetes' published limits runs for a minute; without it
//! the command would say nothing until the end.
//!
//! The wall clock is read here, between simulator steps, and never by the
//! simulator: the run and its trace are the same with or without it.

use std::convert::Infallible;
use std::io::Write;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use recon_sim::Sim;
use recon_trace::text::fmt_time;

/// How often (in simulator steps) the clock is looked at.
const STEPS_PER_LOOK: u64 = 256;

/// How often the line is rewritten.
const EVERY: Duration = Duration::from_millis(100);

/// When the progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Not at all (standard error is not a terminal, and no `--progress`).
    Never,
    /// On a terminal: once the run has taken a tenth of a second, so that
    /// a quick run prints nothing more than its summary.
    WhenSlow,
    /// From the start, the last line included (`--progress`).
    Always,
}

/// Runs `sim` to its end, showing its progress as `show` says.
pub fn run(sim: &mut Sim, end_ms: u64, show: Show) {
    if show == Show::Never {
        sim.run();
        return;
    }
    let started = Instant::now();
    let mut line = Line::default();
    let mut shown = show == Show::Always;
    let mut last = started;
    let mut steps = 0u64;
    let ran = sim.run_with(|sim| {
        steps += 1;
        if steps.is_multiple_of(STEPS_PER_LOOK) && last.elapsed() >= EVERY {
            last = Instant::now();
            shown = true;
            let entries = sim.trace().entries.len();
            let seconds = started.elapsed().as_secs_f64();
            let at = fmt_time(sim.now_ms());
            line.show(&format!("running {at} of {}: {entries} trace entries, {seconds:.0} s", fmt_time(end_ms)));
        }
        ControlFlow::<Infallible>::Continue(())
    });
    let ControlFlow::Continue(()) = ran;
    if !shown {
        return;
    }
    let entries = sim.trace().entries.len();
    let seconds = started.elapsed().as_secs_f64();
    let rate = if seconds > 0.0 { format!(", {:.0} a second", entries as f64 / seconds) } else { String::new() };
    line.show(&format!("ran {} of virtual time in {seconds:.1} s: {entries} trace entries{rate}", fmt_time(end_ms)));
    eprintln!();
}

/// The one line the progress rewrites in place.
#[derive(Default)]
struct Line {
    /// How long the last text was, to blank what a shorter one leaves.
    len: usize,
}

impl Line {
    fn show(&mut self, text: &str) {
        let blank = self.len.saturating_sub(text.len());
        eprint!("\r{text}{:blank$}", "");
        // Standard error is unbuffered; a failed write loses only progress.
        let _ = std::io::stderr().flush();
        self.len = text.len();
    }
}
