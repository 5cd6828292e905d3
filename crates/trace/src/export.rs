//! The trace in other tools' formats.
//!
//! [`write_chrome_trace`] writes the Chrome trace event format, which Perfetto
//! (ui.perfetto.dev) and `chrome://tracing` open: one track per trace lane,
//! one short slice per entry, a flow arrow from each cause to its effect,
//! and each reconcile a staleness mitigation held as an async slice that
//! spans the whole wait.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::text::describe;
use crate::waits::WaitEnd;
use crate::{Event, Trace};

/// The process id every track belongs to.
const PID: u64 = 1;

/// The trace as a Chrome trace event file (JSON object format):
/// [`write_chrome_trace`]'s bytes.
pub fn chrome_trace(trace: &Trace) -> String {
    let mut json = String::new();
    // Writing to a string cannot fail.
    let _ = write_chrome_trace(trace, &mut json);
    json
}

/// Writes the trace as a Chrome trace event file (JSON object format) to
/// `writer`, one event at a time: a big run's file (hundreds of megabytes
/// at a million entries, and several times that as values) is never held.
///
/// Virtual milliseconds become microseconds; entries that share a
/// millisecond are spread one microsecond apart, in trace order, so that
/// slices never overlap and the order stays visible. Each entry is a 1 µs
/// slice named by its kind, with its description, id and fields in `args`.
///
/// It fails only where `writer` does. (A `fmt::Write`, not an `io::Write`:
/// the playground's page carries this, and `fmt`'s errors cost it nothing.)
pub fn write_chrome_trace(trace: &Trace, writer: &mut dyn Write) -> std::fmt::Result {
    // One track per lane that has entries, in the trace's lane order; times
    // spread so that no two slices share a microsecond.
    let mut used = vec![false; trace.lanes.len()];
    let mut tids = Vec::with_capacity(trace.entries.len());
    let mut ts = Vec::with_capacity(trace.entries.len());
    let mut last_us: Option<u64> = None;
    for entry in &trace.entries {
        if let Some(u) = used.get_mut(entry.lane.index()) {
            *u = true;
        }
        tids.push(entry.lane.index() as u64 + 1);
        let us = last_us.map_or(entry.time_ms * 1000, |last| (entry.time_ms * 1000).max(last + 1));
        last_us = Some(us);
        ts.push(us);
    }
    // The object's keys in the order `serde_json` writes a map's: sorted.
    writer.write_str(r#"{"displayTimeUnit":"ms","traceEvents":["#)?;
    let mut events = Events { writer, first: true };
    let process = format!("recon: {} (seed {})", trace.scenario, trace.seed);
    events.write(&json!({ "name": "process_name", "ph": "M", "pid": PID, "args": { "name": process } }))?;
    for (i, lane) in trace.lanes.iter().enumerate().filter(|(i, _)| used[*i]) {
        let tid = i as u64 + 1;
        events.write(
            &json!({ "name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": { "name": lane.name } }),
        )?;
        events.write(
            &json!({ "name": "thread_sort_index", "ph": "M", "pid": PID, "tid": tid, "args": { "sort_index": tid } }),
        )?;
    }
    for entry in &trace.entries {
        let fields = serde_json::to_value(&entry.event).expect("events are plain data");
        // An event's kind, as its JSON tag names it (`storeWrite`, `listServed`, …).
        let kind = fields.get("kind").and_then(Value::as_str).unwrap_or("event").to_owned();
        events.write(&json!({
            "name": kind,
            "cat": if matches!(entry.event, Event::Violation { .. }) { "violation" } else { "recon" },
            "ph": "X",
            "ts": ts[entry.id as usize],
            "dur": 1,
            "pid": PID,
            "tid": tids[entry.id as usize],
            "args": { "entry": entry.id, "what": describe(entry), "event": fields },
        }))?;
    }
    // Flow arrows: from each cause's slice to the effect's.
    let mut flow = 0u64;
    for entry in &trace.entries {
        let (to, at) = (tids[entry.id as usize], ts[entry.id as usize]);
        for &cause in &entry.causes {
            let Some(from) = trace.get(cause) else { continue };
            let (from_tid, from_at) = (tids[from.id as usize], ts[from.id as usize]);
            flow += 1;
            events.write(&json!({
                "name": "cause", "cat": "cause", "ph": "s", "id": flow, "ts": from_at, "pid": PID, "tid": from_tid,
            }))?;
            events.write(&json!({
                "name": "cause", "cat": "cause", "ph": "f", "bp": "e", "id": flow, "ts": at, "pid": PID, "tid": to,
            }))?;
        }
    }
    for slice in wait_slices(trace, &ts) {
        events.write(&slice)?;
    }
    events.writer.write_str("]}")
}

/// The `traceEvents` array being written: each event after the first
/// follows a comma.
struct Events<'a> {
    writer: &'a mut dyn Write,
    first: bool,
}

impl Events<'_> {
    fn write(&mut self, event: &Value) -> std::fmt::Result {
        if !std::mem::take(&mut self.first) {
            self.writer.write_char(',')?;
        }
        // As `Value`'s `Display` writes it: compact JSON.
        write!(self.writer, "{event}")
    }
}

/// One async slice per wait a mitigation reported (`syncHeld`): from when
/// it began to the entry that ended it, or to the end of the trace for a
/// wait never ended (a crash or restart ends the instance's waits).
/// Async slices may overlap, as waits for several objects do; Perfetto
/// stacks them on a track of their own under the process.
fn wait_slices(trace: &Trace, ts: &[u64]) -> Vec<Value> {
    let end_of_trace = ts.last().map_or(0, |t| t + 1);
    let mut spans: Vec<(&crate::Entry, u64, u64)> = crate::waits::waits(trace)
        .into_iter()
        .map(|wait| {
            let until = match wait.end {
                // The release is drawn inside the slice.
                WaitEnd::Released(id) => ts[id as usize] + 1,
                WaitEnd::Ended(id) => ts[id as usize],
                WaitEnd::Open => end_of_trace,
            };
            (wait.last, wait.from_ms() * 1000, until)
        })
        .collect();
    spans.sort_by_key(|(entry, from, _)| (*from, entry.id));
    let mut slices = Vec::with_capacity(spans.len() * 2);
    for (id, (entry, from, until)) in spans.into_iter().enumerate() {
        let Event::SyncHeld { component, held } = &entry.event else { continue };
        let tid = entry.lane.index() as u64 + 1;
        let name = format!("{component} holds {}", held.object);
        let args = json!({ "entry": entry.id, "what": describe(entry), "mitigation": held.mitigation.name() });
        slices.push(json!({
            "name": name, "cat": "wait", "ph": "b", "id": id + 1, "ts": from, "pid": PID, "tid": tid, "args": args,
        }));
        slices.push(json!({ "name": name, "cat": "wait", "ph": "e", "id": id + 1, "ts": until.max(from + 1), "pid": PID, "tid": tid }));
    }
    slices
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Entry, Lane, LaneId, LaneRole};

    fn trace() -> Trace {
        let entry = |id: u64, time_ms: u64, lane: u32, causes: Vec<u64>| Entry {
            id,
            time_ms,
            lane: LaneId(lane),
            event: Event::Script { description: format!("step {id}") },
            causes: causes.into(),
        };
        Trace {
            scenario: "t".into(),
            seed: 3,
            lanes: vec![
                Lane { name: "script".into(), role: LaneRole::Script },
                Lane { name: "etcd".into(), role: LaneRole::Store },
                Lane { name: "checks".into(), role: LaneRole::Checks },
            ],
            entries: vec![entry(0, 0, 0, vec![]), entry(1, 0, 1, vec![0]), entry(2, 5, 0, vec![1, 0])].into(),
        }
    }

    /// Written an event at a time, the file is the compact JSON of one
    /// value, as encoding the whole document at once would give: keys in
    /// order, no whitespace, commas only between events.
    #[test]
    fn the_file_written_event_by_event_is_the_whole_documents_json() {
        let text = chrome_trace(&trace());
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value.to_string(), text);
        // The process, two used lanes (two each), three slices, three causes (two each).
        assert_eq!(value["traceEvents"].as_array().map(Vec::len), Some(14), "{text}");
        let empty = chrome_trace(&Trace::default());
        assert_eq!(serde_json::from_str::<Value>(&empty).unwrap().to_string(), empty);
    }

    #[test]
    fn one_track_per_lane_one_slice_per_entry_one_flow_per_cause() {
        let value: Value = serde_json::from_str(&chrome_trace(&trace())).unwrap();
        let events = value["traceEvents"].as_array().unwrap();
        let named = |ph: &str, name: &str| events.iter().filter(|e| e["ph"] == ph && e["name"] == name).count();
        assert_eq!(named("M", "thread_name"), 2);
        assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), 3);
        assert_eq!(events.iter().filter(|e| e["ph"] == "s").count(), 3);
        assert_eq!(events.iter().filter(|e| e["ph"] == "f").count(), 3);
        let thread = |tid: u64| {
            events.iter().find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == tid).unwrap()["args"]["name"]
                .clone()
        };
        assert_eq!((thread(1), thread(2)), (json!("script"), json!("etcd")));
    }

    #[test]
    fn each_wait_is_one_async_slice_from_its_start_to_its_release_or_the_end() {
        use recon_abi::{HeldSync, Mitigation, ObjectKey};
        let held = |object: &str, since_ms: u64, released: bool| Event::SyncHeld {
            component: "rs".into(),
            held: Box::new(HeldSync {
                mitigation: Mitigation::StaleControllerConsistency,
                object: ObjectKey::new("ReplicaSet", "default", object),
                kind: "Pod".into(),
                resource_version: 7,
                seen: if released { 7 } else { 5 },
                since_ms,
                skips: 2,
                released,
            }),
        };
        let mut t = trace();
        let at =
            |id: u64, time_ms: u64, event: Event| Entry { id, time_ms, lane: LaneId(1), event, causes: vec![].into() };
        t.entries.push(at(3, 6, held("a", 6, false)));
        t.entries.push(at(4, 7, held("b", 7, false)));
        t.entries.push(at(5, 9, held("a", 6, true)));
        t.entries.push(at(6, 12, Event::Script { description: "the end".into() }));
        let value: Value = serde_json::from_str(&chrome_trace(&t)).unwrap();
        let waits: Vec<(String, String, u64)> = value["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "wait")
            .map(|e| {
                (
                    e["ph"].as_str().unwrap().to_owned(),
                    e["name"].as_str().unwrap().to_owned(),
                    e["ts"].as_u64().unwrap(),
                )
            })
            .collect();
        let (a, b) = ("rs holds ReplicaSet default/a".to_owned(), "rs holds ReplicaSet default/b".to_owned());
        // a: from 6 ms to its release at 9 ms; b, never released, to the trace's end.
        assert_eq!(
            waits,
            vec![
                ("b".into(), a.clone(), 6000),
                ("e".into(), a, 9001),
                ("b".into(), b.clone(), 7000),
                ("e".into(), b, 12_001)
            ]
        );
    }

    #[test]
    fn entries_in_the_same_millisecond_do_not_overlap() {
        let value: Value = serde_json::from_str(&chrome_trace(&trace())).unwrap();
        let slices: Vec<u64> = value["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| e["ts"].as_u64().unwrap())
            .collect();
        assert_eq!(slices, vec![0, 1, 5000]);
    }
}
