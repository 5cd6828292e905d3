//! Text: how times, uids, entries and script steps read, one home each,
//! so that the CLI, the explanation and the playground say them alike.

use recon_abi::ObjectKey;
use recon_scenario::StepAction;

use recon_abi::HeldSync;

use crate::{Entry, Event, EventPublished, Line, ListServed, Reconcile, ServedFrom};

/// Virtual time as a reader wants it: `t=8.012s`.
pub fn fmt_time(ms: u64) -> String {
    format!("t={}.{:03}s", ms / 1000, ms % 1000)
}

/// A length of virtual time: `1.500s`.
pub fn fmt_duration(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// The first 8 characters of a uid: enough to tell incarnations apart in prose.
pub fn short_uid(uid: &str) -> &str {
    uid.get(..8).unwrap_or(uid)
}

/// Lines joined with `; `.
fn joined(lines: &[Line]) -> String {
    lines.iter().map(Line::to_string).collect::<Vec<_>>().join("; ")
}

/// One line describing an entry.
pub fn describe(e: &Entry) -> String {
    match &e.event {
        Event::Script { description } => description.clone(),
        Event::Partition { api_server, started: true } => format!("{api_server} loses its connection to the store"),
        Event::Partition { api_server, started: false } => format!("{api_server} reconnects to the store"),
        Event::StoreWrite { verb, key, uid, revision, removed, terminating, by, via, patch } => {
            let what = if let Some(note) = patch {
                // A patch that began a deletion (its last finalizer gone)
                // is still named as the patch it was.
                let done = if *removed { " (which deleted it)" } else { "" };
                return format!(
                    "{by} via {via}: {verb} ({note}) {key} (uid {}) at revision {revision}{done}",
                    short_uid(uid)
                );
            } else if *terminating {
                "began graceful deletion of".to_string()
            } else if *removed {
                "deleted".to_string()
            } else {
                format!("{verb}")
            };
            let via = if via.is_empty() { String::new() } else { format!(" via {via}") };
            format!("{by}{via}: {what} {key} (uid {}) at revision {revision}", short_uid(uid))
        }
        Event::WriteFailed { verb, key, status, by, patch: Some(note), .. } => {
            format!("{by}: {verb} ({note}) {key} failed: {}", status.message)
        }
        Event::WriteFailed { verb, key, status, by, .. } => format!("{by}: {verb} {key} failed: {}", status.message),
        Event::WriteUnchanged { verb, key, uid, revision, by, via, dry_run: true, .. } => format!(
            "{by} via {via}: dry run of {verb} {key} (uid {}) accepted; nothing stored{}",
            short_uid(uid),
            // A dry-run create has no revision: there is nothing to stay at.
            if *revision == 0 { String::new() } else { format!(", the object stays at revision {revision}") }
        ),
        Event::WriteUnchanged { verb, key, uid, revision, by, via, patch: Some(note), .. } if note.dry_run => format!(
            "{by} via {via}: {verb} ({note}) {key} (uid {}) accepted; nothing stored, the object stays at revision {revision}",
            short_uid(uid)
        ),
        Event::WriteUnchanged { verb, key, uid, revision, by, via, .. } => format!(
            "{by} via {via}: {verb} {key} (uid {}) changed nothing: it is already so at revision {revision}",
            short_uid(uid)
        ),
        Event::Compaction { revision } => format!("store compacted up to revision {revision}"),
        Event::Halted { reason } => reason.clone(),
        Event::CacheApply { api_server, revision, key, event_type } => {
            format!("{api_server} cache: {event_type} {key} (now at revision {revision})")
        }
        Event::CacheRelist { api_server, revision } => format!("{api_server} rebuilt its cache at revision {revision}"),
        Event::ListServed(list) => {
            let ListServed { component, api_server, request, served_from, revision, store_revision, objects, .. } =
                &**list;
            let from = match served_from {
                ServedFrom::Cache => "its watch cache",
                ServedFrom::Store => "the store",
            };
            let n = objects.len();
            let objects = if n == 1 { "1 object".to_string() } else { format!("{n} objects") };
            format!(
                "{api_server} answered {component}'s {request} from {from}: {objects} at revision {revision} (store at {store_revision})"
            )
        }
        Event::RequestFailed { component, api_server, request, status } => {
            format!("{api_server} failed {component}'s {request}: {}", status.message)
        }
        Event::WatchDelivered { component, event_type: recon_abi::EventType::Bookmark, key, revision, .. } => {
            format!(
                "{component} sees a BOOKMARK on its watch of {}s: nothing it watches changed up to revision {revision}",
                key.kind
            )
        }
        Event::WatchDelivered { component, event_type, key, uid, revision, .. } => {
            format!("{component} sees {event_type} {key} (uid {}) at revision {revision}", short_uid(uid))
        }
        Event::ComponentStarted { component, api_server, restarts, mitigations } => {
            let on = match mitigations.as_slice() {
                [] => String::new(),
                some => format!(", {} on", some.iter().map(|m| m.name()).collect::<Vec<_>>().join(" and ")),
            };
            match restarts {
                0 => format!("{component} starts, connected to {api_server}{on}"),
                _ => format!("{component} restarts with empty memory, connected to {api_server}{on}"),
            }
        }
        Event::ComponentCrashed { component, reason } => format!("{component} stops: {reason}"),
        Event::Logged { component, lines } => match lines.as_slice() {
            [line] => format!("{component} logs: {}", one_line(line)),
            lines => format!(
                "{component} logs {} lines: {}",
                lines.len(),
                lines.iter().map(|l| one_line(l)).collect::<Vec<_>>().join(" | ")
            ),
        },
        Event::EventPublished(published) => {
            let EventPublished { event_type, reason, note, regarding, by } = &**published;
            let kind = if event_type.is_empty() { String::new() } else { format!(" {event_type}") };
            let about = regarding.as_ref().map(|k| format!(" about {k}")).unwrap_or_default();
            format!("{by} reports{kind} Event {reason}{about}: {}", one_line(note))
        }
        Event::Failover { component, from, to } => format!("{component} gives up on {from} and fails over to {to}"),
        Event::Leadership { component, lease, leading: true } => {
            format!("{component} wins Lease {lease} and starts its controller")
        }
        Event::Leadership { component, lease, leading: false } => format!("{component} loses Lease {lease}"),
        Event::Reconcile(call) => {
            let Reconcile { component, view_revision, actions, held_back, .. } = &**call;
            // A stale view says what the call went without.
            let stale = match held_back.len() {
                0 => String::new(),
                n => format!(", {n} newer input(s) held back: {}", joined(held_back)),
            };
            if actions.is_empty() {
                format!("{component} reconciles (view at revision {view_revision}{stale}): nothing to do")
            } else {
                format!("{component} reconciles (view at revision {view_revision}{stale}): {}", joined(actions))
            }
        }
        Event::SyncHeld { component, held } => held_sync(component, held),
        Event::ActionRefused { component, action, status } => {
            format!("{component}: {action} refused: {}", status.message)
        }
        Event::ContainerStarted { node, pod } => format!("{node} starts a container for {pod}"),
        Event::ContainerStopped { node, pod } => format!("{node} stops the container of {pod}"),
        Event::Violation { message, .. } => message.clone(),
    }
}

/// A held reconcile in words: `replicaset-controller holds its sync of
/// ReplicaSet default/web (staleControllerConsistency): waiting for its own
/// Pod write at revision 12; its Pod informer is at 9`.
pub fn held_sync(component: &str, held: &HeldSync) -> String {
    let HeldSync { mitigation, object, kind, resource_version, seen, since_ms, skips, released } = held;
    if *released {
        format!(
            "{component} syncs {object} again ({mitigation}): its {kind} informer is at {seen}, past its own write \
             at revision {resource_version}; held since {} ({skips} syncs skipped)",
            fmt_time(*since_ms)
        )
    } else {
        format!(
            "{component} holds its sync of {object} ({mitigation}): waiting for its own {kind} write at revision \
             {resource_version}; its {kind} informer is at {seen}"
        )
    }
}

/// A logged line on one line: a plugin may write line breaks (a panic
/// message often has them), which a one-line description cannot show.
pub fn one_line(line: &str) -> String {
    line.lines().map(str::trim_end).collect::<Vec<_>>().join(" ⏎ ")
}

/// A step in the words a user would use.
pub fn describe_step(action: &StepAction) -> String {
    let via = |v: &Option<String>| v.as_ref().map(|s| format!(" (via {s})")).unwrap_or_default();
    let key = |r: &recon_scenario::ObjectRef| ObjectKey::new(&r.kind, &r.namespace, &r.name);
    match action {
        StepAction::Create { object, via: v } => format!("kubectl create {}{}", object.key(), via(v)),
        StepAction::Apply { object, via: v } => format!("kubectl apply {}{}", object.key(), via(v)),
        StepAction::Delete { target, via: v, cascade } => {
            let cascade = cascade.map_or("", |c| match c {
                recon_abi::PropagationPolicy::Background => " --cascade=background",
                recon_abi::PropagationPolicy::Foreground => " --cascade=foreground",
                recon_abi::PropagationPolicy::Orphan => " --cascade=orphan",
            });
            format!("kubectl delete {}{cascade}{}", key(target), via(v))
        }
        StepAction::Scale { target, replicas, via: v } => {
            format!("kubectl scale {} --replicas={replicas}{}", key(target), via(v))
        }
        StepAction::Cordon { node } => format!("kubectl cordon {node}"),
        StepAction::Uncordon { node } => format!("kubectl uncordon {node}"),
        StepAction::Crash { component } => format!("{component} crashes"),
        StepAction::Restart { component, api_server: Some(s) } => {
            format!("{component} restarts and connects to {s}")
        }
        StepAction::Restart { component, api_server: None } => format!("{component} restarts"),
        StepAction::Disconnect { component } => format!("{component}'s watch connections break"),
        StepAction::Compact { keep } => format!("etcd compacts its history (keeping {keep} revisions)"),
    }
}
