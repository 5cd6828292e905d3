//! Requeues: timers that carry a key, without piling up duplicates.

use std::collections::BTreeMap;

use recon_abi::{Action, ObjectKey};

/// The timers a controller has asked for and not yet received.
///
/// A controller that requeues on every call would otherwise have one timer
/// per call in flight. [`Timers::schedule`] returns an action only when no
/// timer with that key is already due at or before the requested time.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    due: BTreeMap<String, u64>,
}

impl Timers {
    /// No timers.
    pub fn new() -> Timers {
        Timers::default()
    }

    /// Asks for a [`recon_abi::InputEvent::Timer`] with `key` at
    /// `now_ms + after_ms`; returns the action to emit, or `None` if an
    /// earlier or equal timer with that key is pending already.
    pub fn schedule(&mut self, key: impl Into<String>, now_ms: u64, after_ms: u64) -> Option<Action> {
        let key = key.into();
        let at = now_ms.saturating_add(after_ms);
        // A due time in the past belongs to a timer that was lost (or is
        // being delivered right now); do not let it suppress a new one.
        if self.due.get(&key).is_some_and(|&due| due >= now_ms && due <= at) {
            return None;
        }
        self.due.insert(key.clone(), at);
        Some(Action::RequeueAfter { key, after_ms })
    }

    /// Takes note that the timer with `key` fired.
    pub fn fired(&mut self, key: &str) {
        self.due.remove(key);
    }

    /// Whether a timer with `key` is pending.
    pub fn is_scheduled(&self, key: &str) -> bool {
        self.due.contains_key(key)
    }
}

/// Encodes an object key as a timer key: `Kind/namespace/name`.
pub fn timer_key(key: &ObjectKey) -> String {
    format!("{}/{}/{}", key.kind, key.namespace, key.name)
}

/// Decodes a timer key made by [`timer_key`]; `None` for any other string.
pub fn parse_timer_key(text: &str) -> Option<ObjectKey> {
    let mut parts = text.splitn(3, '/');
    let (kind, namespace, name) = (parts.next()?, parts.next()?, parts.next()?);
    if kind.is_empty() || name.is_empty() {
        return None;
    }
    Some(ObjectKey::new(kind, namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_keys_round_trip_for_namespaced_and_cluster_scoped_objects() {
        for key in [ObjectKey::new("Pod", "default", "web-0"), ObjectKey::new("Node", "", "node-1")] {
            assert_eq!(parse_timer_key(&timer_key(&key)), Some(key));
        }
        assert_eq!(parse_timer_key("unschedulable"), None);
    }

    #[test]
    fn a_pending_earlier_timer_suppresses_a_later_one_until_it_fires() {
        let mut timers = Timers::new();
        assert!(timers.schedule("k", 0, 1_000).is_some());
        assert!(timers.schedule("k", 500, 1_000).is_none());
        assert!(timers.schedule("k", 500, 100).is_some(), "an earlier time is worth a new timer");
        timers.fired("k");
        assert!(!timers.is_scheduled("k"));
        assert_eq!(timers.schedule("k", 700, 10), Some(Action::RequeueAfter { key: "k".into(), after_ms: 10 }));
    }
}
