//! Progress on standard error, for `recon run` (and, through
//! [`Progress`], for writing its trace file, `recon audit` and `recon
//! explore`): how far the run has got in virtual time, how many trace
//! entries it has written and how long it has taken, then one line for
//! the whole run. A cluster at Kubernetes' published limits runs for a
//! minute and writes gigabytes; without it the command would say nothing
//! until the end.
//!
//! On a terminal the line is rewritten in place about ten times a second.
//! Anywhere else (a CI log, a file) each update is a line of its own,
//! every five seconds, so that a log reads as a list rather than one line
//! of carriage returns.
//!
//! The wall clock is read here, between simulator steps, and never by the
//! simulator: the run and its trace are the same with or without it.

use std::convert::Infallible;
use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use recon_sim::Sim;
use recon_trace::text::fmt_time;

/// How often (in simulator steps) the clock is looked at.
const STEPS_PER_LOOK: u64 = 256;

/// How often the line is rewritten on a terminal.
const EVERY_ON_A_TERMINAL: Duration = Duration::from_millis(100);

/// How often a line is added elsewhere, where every update stays.
const EVERY_OFF_A_TERMINAL: Duration = Duration::from_secs(5);

/// When the progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Not at all (standard error is not a terminal, and no `--progress`).
    Never,
    /// On a terminal: once the work has taken a tenth of a second, so that
    /// a quick run prints nothing more than its summary.
    WhenSlow,
    /// From the start, the last line included (`--progress`).
    Always,
}

impl Show {
    /// As a command shows it: always with `--progress` (`asked`), when
    /// slow on a terminal, otherwise not.
    pub fn asked(asked: bool) -> Show {
        match (asked, std::io::stderr().is_terminal()) {
            (true, _) => Show::Always,
            (false, true) => Show::WhenSlow,
            (false, false) => Show::Never,
        }
    }
}

/// Runs `sim` to its end, showing its progress as `show` says.
pub fn run(sim: &mut Sim, end_ms: u64, show: Show) {
    if show == Show::Never {
        sim.run();
        return;
    }
    let mut progress = Progress::new(show);
    let mut steps = 0u64;
    let ran = sim.run_with(|sim| {
        steps += 1;
        if steps.is_multiple_of(STEPS_PER_LOOK) {
            progress.tick(|seconds| {
                let (at, entries) = (fmt_time(sim.now_ms()), sim.trace().entries.len());
                format!("running {at} of {}: {entries} trace entries, {seconds:.0} s", fmt_time(end_ms))
            });
        }
        ControlFlow::<Infallible>::Continue(())
    });
    let ControlFlow::Continue(()) = ran;
    let entries = sim.trace().entries.len();
    progress.finish(|seconds| {
        let rate = if seconds > 0.0 { format!(", {:.0} a second", entries as f64 / seconds) } else { String::new() };
        format!("ran {} of virtual time in {seconds:.1} s: {entries} trace entries{rate}", fmt_time(end_ms))
    });
}

/// One piece of work's progress: updates at most as often as the place
/// it is shown suits, then a last line if any was shown (or if asked).
pub struct Progress {
    show: Show,
    started: Instant,
    last: Instant,
    shown: bool,
    line: Line,
}

impl Progress {
    /// Progress shown as `show` says, timed from now.
    pub fn new(show: Show) -> Progress {
        let now = Instant::now();
        Progress { show, started: now, last: now, shown: show == Show::Always, line: Line::new() }
    }

    /// Shows `text(seconds so far)` if it is time to.
    pub fn tick(&mut self, text: impl FnOnce(f64) -> String) {
        if self.show == Show::Never {
            return;
        }
        // Nothing for a quick piece of work, on a terminal as anywhere.
        let every = if self.shown { self.line.every() } else { EVERY_ON_A_TERMINAL };
        if self.last.elapsed() < every {
            return;
        }
        self.last = Instant::now();
        self.shown = true;
        self.line.show(&text(self.started.elapsed().as_secs_f64()));
    }

    /// Shows the last line, if anything was shown or `--progress` asked.
    pub fn finish(&mut self, text: impl FnOnce(f64) -> String) {
        if self.show == Show::Never || !self.shown {
            return;
        }
        self.line.show(&text(self.started.elapsed().as_secs_f64()));
        self.line.end();
    }
}

/// Where the progress goes: one line rewritten in place on a terminal,
/// a line per update elsewhere.
struct Line {
    terminal: bool,
    /// How long the last text was, to blank what a shorter one leaves.
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line { terminal: std::io::stderr().is_terminal(), len: 0 }
    }

    /// How long to wait between updates.
    fn every(&self) -> Duration {
        if self.terminal { EVERY_ON_A_TERMINAL } else { EVERY_OFF_A_TERMINAL }
    }

    fn show(&mut self, text: &str) {
        if self.terminal {
            let blank = self.len.saturating_sub(text.len());
            eprint!("\r{text}{:blank$}", "");
            // Standard error is unbuffered; a failed write loses only progress.
            let _ = std::io::stderr().flush();
            self.len = text.len();
        } else {
            eprintln!("{text}");
        }
    }

    /// Ends the line being rewritten.
    fn end(&mut self) {
        if self.terminal {
            eprintln!();
        }
    }
}
