//! Writes a controller is waiting for.

use recon_abi::{ActionResult, KeyMap, Object, ObjectKey, Outcome, StatusReason, Verb};

/// How long a controller waits before retrying a write that failed for a
/// reason other than a stale view (e.g. the API server could not reach the
/// store): 1 s of virtual time.
pub const RETRY_AFTER_MS: u64 = 1_000;

/// The writes a controller has sent and not yet seen the end of, one per
/// object key.
///
/// A write is asynchronous twice over: its result comes in a later call, and
/// the watch event showing its effect may come later still (or earlier). A
/// controller that only looked at its cache would send the same write again
/// on every call in between. An entry blocks further writes to its key:
///
/// - while the request is outstanding (no result yet);
/// - after success, or after Conflict, NotFound or AlreadyExists (which mean
///   the view the write was based on is stale), until the cache shows a
///   version of the object other than the one the write was based on;
/// - after any other failure, until [`RETRY_AFTER_MS`] have passed (or the
///   cache moves): the controller should requeue and try again.
///
/// An update or patch that changed nothing (its result is the object at the
/// version the write was based on, as for a server-side apply of what is
/// already there) settles with its result: no watch event will follow it.
///
/// This is the per-object form of client-go's "expectations". The host must
/// deliver exactly one result per write for an entry to leave the first
/// state; a fresh instance after a restart starts with no entries. Call
/// [`InFlight::settle`] for every changed key, so that entries for objects
/// the controller stops looking at (a deleted pod) do not stay behind.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    entries: KeyMap<Entry>,
}

#[derive(Clone, Debug)]
struct Entry {
    verb: Verb,
    basis: Option<Version>,
    state: State,
    wake: ObjectKey,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Sent,
    AwaitChange,
    RetryAt(u64),
}

/// The incarnation and version of an object, or none for "absent".
#[derive(Clone, Debug, PartialEq, Eq)]
struct Version {
    uid: String,
    resource_version: String,
}

fn version(object: Option<&Object>) -> Option<Version> {
    object.map(|o| Version { uid: o.metadata.uid.clone(), resource_version: o.metadata.resource_version.clone() })
}

/// Whether `object` is at `version` (both absent, or the same incarnation
/// and resourceVersion), without copying either.
fn is_version(object: Option<&Object>, version: Option<&Version>) -> bool {
    match (object, version) {
        (None, None) => true,
        (Some(o), Some(v)) => o.metadata.uid == v.uid && o.metadata.resource_version == v.resource_version,
        _ => false,
    }
}

/// What a result means for the controller that sent the write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered {
    /// The key whose reconcile sent the write (given to [`InFlight::record`]):
    /// it should run again.
    pub wake: ObjectKey,
    /// Set when the write failed transiently: requeue `wake` after this many
    /// milliseconds.
    pub retry_after_ms: Option<u64>,
}

impl InFlight {
    /// No writes in flight.
    pub fn new() -> InFlight {
        InFlight::default()
    }

    /// Records a write of `verb` to `key`, sent while the cache showed
    /// `basis` (`None`: the object was absent, as for a create). `wake` is
    /// the key to reconcile when the write is answered.
    pub fn record(&mut self, verb: Verb, key: ObjectKey, basis: Option<&Object>, wake: ObjectKey) {
        self.entries.insert(&key, Entry { verb, basis: version(basis), state: State::Sent, wake });
    }

    /// Whether a write to `key` is still in flight, given the object's
    /// `current` state in the cache at virtual time `now_ms`. Drops the entry
    /// once it is settled, so the controller may write again.
    pub fn blocks(&mut self, key: &ObjectKey, current: Option<&Object>, now_ms: u64) -> bool {
        let Some(entry) = self.entries.get(key) else {
            return false;
        };
        let moved = || !is_version(current, entry.basis.as_ref());
        let settled = match entry.state {
            State::Sent => false,
            State::AwaitChange => moved(),
            State::RetryAt(at) => now_ms >= at || moved(),
        };
        if settled {
            self.entries.remove(key);
        }
        !settled
    }

    /// Drops the entry for `key` if the object's `current` state settles it;
    /// the same as [`InFlight::blocks`], for when the answer is not needed.
    pub fn settle(&mut self, key: &ObjectKey, current: Option<&Object>, now_ms: u64) {
        self.blocks(key, current, now_ms);
    }

    /// Takes note of the result of a write, given the object's `current`
    /// state in the cache (the watch event may have arrived first). Returns
    /// `None` if no write of that verb to that key was outstanding (e.g. an
    /// answer to a write sent by an earlier instance).
    pub fn on_result(&mut self, result: &ActionResult, current: Option<&Object>, now_ms: u64) -> Option<Answered> {
        if result.verb.is_read() {
            return None; // a direct read is not a write to wait for
        }
        let entry = self.entries.get_mut(&result.key)?;
        if entry.verb != result.verb || entry.state != State::Sent {
            return None;
        }
        let retry_after_ms = match &result.outcome {
            Outcome::Ok(_) | Outcome::Listed(_) => None,
            Outcome::Err(status) => match status.reason {
                StatusReason::Conflict | StatusReason::NotFound | StatusReason::AlreadyExists => None,
                _ => Some(RETRY_AFTER_MS),
            },
        };
        entry.state = match retry_after_ms {
            Some(after) => State::RetryAt(now_ms + after),
            None => State::AwaitChange,
        };
        let answered = Answered { wake: entry.wake.clone(), retry_after_ms };
        let rewrite = matches!(result.verb, Verb::Update | Verb::UpdateStatus | Verb::Patch | Verb::PatchStatus);
        if let Outcome::Ok(Some(object)) = &result.outcome
            && rewrite
            && is_version(Some(object), entry.basis.as_ref())
        {
            // Nothing changed, so nothing will show in the cache.
            self.entries.remove(&result.key);
            return Some(answered);
        }
        self.settle(&result.key, current, now_ms);
        Some(answered)
    }

    /// Whether any write to `key` is remembered (without settling it).
    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.entries.contains_key(key)
    }

    /// Forgets the write to `key`, if any.
    pub fn forget(&mut self, key: &ObjectKey) {
        self.entries.remove(key);
    }

    /// How many writes are remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no write is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failed, pod, succeeded};

    #[test]
    fn a_sent_write_blocks_until_answered_and_then_until_the_cache_moves() {
        let mut in_flight = InFlight::new();
        let old = pod("default", "a", "u", "5");
        let key = old.key();
        in_flight.record(Verb::UpdateStatus, key.clone(), Some(&old), key.clone());

        // Even if the cache already moved, the request is still outstanding.
        let newer = pod("default", "a", "u", "6");
        assert!(in_flight.blocks(&key, Some(&newer), 0));

        let answered = in_flight.on_result(&succeeded(Verb::UpdateStatus, &newer), Some(&old), 10);
        assert_eq!(answered, Some(Answered { wake: key.clone(), retry_after_ms: None }));
        assert!(in_flight.blocks(&key, Some(&old), 20), "the cache still shows the version we wrote against");
        assert!(!in_flight.blocks(&key, Some(&newer), 20));
        assert!(in_flight.is_empty());
    }

    #[test]
    fn a_conflict_waits_for_the_cache_and_a_transient_failure_retries_after_a_delay() {
        let mut in_flight = InFlight::new();
        let old = pod("default", "a", "u", "5");
        let key = old.key();

        in_flight.record(Verb::Delete, key.clone(), Some(&old), key.clone());
        let answered =
            in_flight.on_result(&failed(Verb::Delete, &key, StatusReason::Conflict), Some(&old), 100).unwrap();
        assert_eq!(answered.retry_after_ms, None);
        assert!(in_flight.blocks(&key, Some(&old), 100_000), "a conflict never settles on time alone");

        in_flight.record(Verb::Delete, key.clone(), Some(&old), key.clone());
        let answered = in_flight
            .on_result(&failed(Verb::Delete, &key, StatusReason::ServiceUnavailable), Some(&old), 100)
            .unwrap();
        assert_eq!(answered.retry_after_ms, Some(RETRY_AFTER_MS));
        assert!(in_flight.blocks(&key, Some(&old), 100 + RETRY_AFTER_MS - 1));
        assert!(!in_flight.blocks(&key, Some(&old), 100 + RETRY_AFTER_MS));
    }

    #[test]
    fn results_for_writes_not_in_flight_are_ignored() {
        let mut in_flight = InFlight::new();
        let p = pod("default", "a", "u", "5");
        assert_eq!(in_flight.on_result(&succeeded(Verb::Update, &p), Some(&p), 0), None);
        in_flight.record(Verb::Delete, p.key(), Some(&p), p.key());
        assert_eq!(in_flight.on_result(&succeeded(Verb::Update, &p), Some(&p), 0), None);
        assert!(in_flight.blocks(&p.key(), Some(&p), 0));
    }

    #[test]
    fn a_create_settles_when_the_object_appears() {
        let mut in_flight = InFlight::new();
        let p = pod("default", "a", "u", "5");
        in_flight.record(Verb::Create, p.key(), None, p.key());
        in_flight.on_result(&failed(Verb::Create, &p.key(), StatusReason::AlreadyExists), None, 0);
        assert!(in_flight.blocks(&p.key(), None, 0));
        in_flight.settle(&p.key(), Some(&p), 0);
        assert!(in_flight.is_empty());
    }

    #[test]
    fn a_patch_that_changed_nothing_settles_with_its_result() {
        let mut in_flight = InFlight::new();
        let p = pod("default", "a", "u", "5");
        in_flight.record(Verb::Patch, p.key(), Some(&p), p.key());
        assert!(in_flight.on_result(&succeeded(Verb::Patch, &p), Some(&p), 0).is_some());
        assert!(!in_flight.blocks(&p.key(), Some(&p), 0), "no watch event will come for it");
        // One that changed the object still waits for the cache to show it.
        in_flight.record(Verb::Patch, p.key(), Some(&p), p.key());
        let patched = pod("default", "a", "u", "6");
        in_flight.on_result(&succeeded(Verb::Patch, &patched), Some(&p), 0);
        assert!(in_flight.blocks(&p.key(), Some(&p), 0));
    }

    #[test]
    fn a_result_arriving_after_the_watch_event_settles_at_once() {
        let mut in_flight = InFlight::new();
        let old = pod("default", "a", "u", "5");
        in_flight.record(Verb::Delete, old.key(), Some(&old), old.key());
        // The DELETED event came first: the cache no longer has the pod.
        assert!(in_flight.on_result(&succeeded(Verb::Delete, &old), None, 0).is_some());
        assert!(in_flight.is_empty());
    }
}
