//! How long each phase of a long command took, said as it ends and summed
//! up at the end (or where it stopped), so a slow `cargo xtask test` shows
//! where its minutes went.

use std::time::{Duration, Instant};

/// The phases run so far and how long each took.
#[derive(Default)]
pub struct Phases {
    done: Vec<(&'static str, Duration)>,
}

impl Phases {
    /// Runs one phase, says how long it took, and remembers it.
    pub fn time<T>(&mut self, name: &'static str, phase: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        eprintln!("xtask: {name}…");
        let start = Instant::now();
        let outcome = phase();
        let took = start.elapsed();
        self.done.push((name, took));
        match &outcome {
            Ok(_) => eprintln!("xtask: {name}: {}", fmt(took)),
            Err(_) => eprintln!("xtask: {name} failed after {}", fmt(took)),
        }
        outcome
    }

    /// One line per phase and the total.
    pub fn summary(&self) -> String {
        let width = self.done.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0);
        let mut out = String::from("xtask: where the time went\n");
        for (name, took) in &self.done {
            out += &format!("  {name:<width$}  {:>8}\n", fmt(*took));
        }
        let total: Duration = self.done.iter().map(|(_, took)| *took).sum();
        out += &format!("  {:<width$}  {:>8}\n", "total", fmt(total));
        out
    }
}

/// A duration as minutes and seconds: `12m 05s`, `41s`.
fn fmt(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 { format!("{}m {:02}s", s / 60, s % 60) } else { format!("{}.{}s", s, d.subsec_millis() / 100) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_is_listed_with_the_total_even_the_one_that_failed() {
        let mut phases = Phases::default();
        assert_eq!(phases.time("first", || Ok(3)), Ok(3));
        assert!(phases.time("second", || Err::<(), _>("broke".to_owned())).is_err());
        let summary = phases.summary();
        let lines: Vec<&str> = summary.lines().collect();
        assert_eq!(lines.len(), 4, "{summary}");
        assert!(lines[1].trim_start().starts_with("first "), "{summary}");
        assert!(lines[2].trim_start().starts_with("second"), "{summary}");
        assert!(lines[3].trim_start().starts_with("total"), "{summary}");
    }

    #[test]
    fn durations_read_as_minutes_and_seconds() {
        assert_eq!(fmt(Duration::from_millis(41_250)), "41.2s");
        assert_eq!(fmt(Duration::from_secs(725)), "12m 05s");
    }
}
