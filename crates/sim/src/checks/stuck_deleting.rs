//! Stuck deleting (liveness), at the end of the run: an object marked for
//! deletion is gone once its grace period is over. A finalizer that nobody
//! removes — its controller crashed, or acted on a view where the object
//! was not being deleted — holds the object forever.

use recon_scenario::Check;
use recon_trace::Event;

use super::{Finding, Observer, Truth};

/// Judged once, when the run ends.
pub(super) struct StuckDeleting;

impl Observer for StuckDeleting {
    fn ended(&mut self, truth: &Truth<'_>) -> Vec<Finding> {
        let now = truth.trace.entries.last().map_or(0, |e| e.time_ms);
        let everything = truth.store.range("/", None).unwrap_or_default();
        let mut findings = Vec::new();
        for kv in everything.iter().filter(|kv| kv.value.is_terminating()) {
            let object = &kv.value;
            // The write that marked it: the first that began its deletion.
            let Some(marked) = truth.trace.entries.iter().find(
                |e| matches!(&e.event, Event::StoreWrite { uid, terminating: true, .. } if *uid == object.metadata.uid),
            ) else {
                continue; // marked before the run (an initial object): no write to blame
            };
            let grace = object.metadata.deletion_grace_period_seconds.unwrap_or(0).max(0) as u64;
            if now < marked.time_ms + grace * 1000 {
                continue; // still within its grace period
            }
            let why = if object.metadata.finalizers.is_empty() {
                "its grace period is over but nothing finished the deletion".to_owned()
            } else {
                format!("its finalizers were never removed: {}", object.metadata.finalizers.join(", "))
            };
            findings.push(Finding {
                check: Check::StuckDeleting,
                message: format!(
                    "stuck deleting: {} was marked for deletion at {} and is still there at the end of the run; {why}",
                    object.key(),
                    recon_trace::text::fmt_time(marked.time_ms)
                ),
                causes: vec![marked.id],
                component: None,
            });
        }
        findings
    }
}
