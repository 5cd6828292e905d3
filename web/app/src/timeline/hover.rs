//! What the tooltip says about the thing under the pointer: an entry, a
//! cache's staleness band, or a partition window.

use recon_trace::text::{describe, fmt_time};
use recon_trace::{EntryId, Event, Trace};

use super::model::WaitSpan;
use super::model::{MarkKind, PartitionWindow, TimelineModel};
use super::staleness::{InformerBand, StalenessBand, StoreRevisions};

/// A tooltip's text: a heading line, then plain lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tooltip {
    /// First line, in bold: when and where.
    pub heading: String,
    /// The rest.
    pub lines: Vec<String>,
}

/// An entry's tooltip: its time and lane, then what happened.
pub fn entry_tooltip(trace: &Trace, model: &TimelineModel, id: EntryId) -> Option<Tooltip> {
    let entry = trace.get(id)?;
    let lane = model.lane_of(id).and_then(|l| model.lanes.get(l)).map_or(trace.lane_name(entry), |l| l.name.as_str());
    let mut lines = vec![describe(entry)];
    match (&entry.event, model.kind_of(id)) {
        (Event::ListServed(list), Some(MarkKind::StaleRead)) => {
            let behind = list.store_revision.saturating_sub(list.revision);
            lines.push(format!("Stale read: {behind} revisions and {} ms behind the store", list.stale_ms));
        }
        (_, Some(MarkKind::TimeTravel)) => lines.push("Time travel: this component's view went backwards".into()),
        (_, Some(MarkKind::Violation)) => lines.push("Safety violation".into()),
        // The lines as the plugin wrote them, one tooltip line each, in
        // place of the description that has them all on one line.
        (Event::Logged { component, lines: logged }, _) => lines = logged_lines(component, logged),
        // Reason and note on lines of their own: the note is for people.
        (Event::EventPublished(published), _) => {
            let recon_trace::EventPublished { event_type, reason, note, regarding, by } = &**published;
            let about = regarding.as_ref().map(|k| format!(" about {k}")).unwrap_or_default();
            let kind = if event_type.is_empty() { "Event" } else { event_type.as_str() };
            lines = vec![format!("{kind} {reason}{about}")];
            lines.extend(note.lines().take(MAX_TOOLTIP_LOG_LINES).map(str::to_owned));
            lines.push(format!("reported by {by}"));
        }
        _ => {}
    }
    if !entry.causes.is_empty() {
        let causes: Vec<String> = entry.causes.iter().map(|c| format!("#{c}")).collect();
        lines.push(format!("Caused by {}", causes.join(", ")));
    }
    Some(Tooltip { heading: format!("{} · {} · #{id}", fmt_time(entry.time_ms), lane), lines })
}

/// The most log lines a tooltip shows; the rest are counted.
const MAX_TOOLTIP_LOG_LINES: usize = 20;

/// A log entry's tooltip lines: who logged, then the lines as written
/// (line breaks in a line start new tooltip lines), at most
/// [`MAX_TOOLTIP_LOG_LINES`].
fn logged_lines(component: &str, logged: &[String]) -> Vec<String> {
    let all: Vec<&str> = logged.iter().flat_map(|l| l.lines()).collect();
    let mut lines = vec![format!("{component} logged:")];
    lines.extend(all.iter().take(MAX_TOOLTIP_LOG_LINES).map(|l| (*l).to_owned()));
    if all.len() > MAX_TOOLTIP_LOG_LINES {
        lines.push(format!("… and {} more lines", all.len() - MAX_TOOLTIP_LOG_LINES));
    }
    lines
}

/// A staleness band's tooltip at a moment: how far behind the cache is then,
/// and the most it ever was.
pub fn band_tooltip(band: &StalenessBand, time_ms: f64) -> Tooltip {
    let at = time_ms.max(0.0).round() as u64;
    let now = match band.at(time_ms) {
        Some(sample) if sample.behind() > 0 => format!(
            "{} revisions behind the store for {} ms (cache at revision {}, store at {})",
            sample.behind(),
            sample.lag_ms_at(at),
            sample.cache_revision,
            sample.store_revision
        ),
        Some(sample) => format!("Up to date with the store (revision {})", sample.store_revision),
        None => "Before the run".to_string(),
    };
    let most = if band.max_behind == 0 {
        "Never behind the store in this run".to_string()
    } else {
        format!("Most behind in this run: {} revisions; longest lag {} ms", band.max_behind, band.max_lag_ms)
    };
    Tooltip { heading: format!("{} · {} watch cache", fmt_time(at), band.api_server), lines: vec![now, most] }
}

/// A component's informer band at a moment: how far its view trails etcd
/// (client-go's `store_resource_version` set against etcd's revision).
pub fn informer_tooltip(band: &InformerBand, store: &StoreRevisions, time_ms: f64) -> Tooltip {
    let at = time_ms.max(0.0).round() as u64;
    let now = match band.view_at(time_ms) {
        Some(view) => {
            let head = store.at(time_ms);
            match head.saturating_sub(view) {
                0 => format!("Its informers have seen everything up to etcd's revision {head}"),
                behind => format!("Its informers' view is {behind} revisions behind etcd (at {view}, etcd at {head})"),
            }
        }
        None => "No view: it has not listed yet".to_string(),
    };
    let most = format!("Most behind in this run: {} revisions", band.max_behind);
    Tooltip { heading: format!("{} · {} informers", fmt_time(at), band.component), lines: vec![now, most] }
}

/// A held reconcile's tooltip: what it waited for, and how long.
pub fn wait_tooltip(model: &TimelineModel, wait: &WaitSpan) -> Tooltip {
    let component = model.lanes.get(wait.lane).map_or("", |l| l.name.as_str());
    let how_long = match wait.until_ms {
        Some(until) if !wait.released => format!(
            "Held from {} until {} ({} ms), when the component crashed or restarted and the wait ended with it",
            fmt_time(wait.from_ms),
            fmt_time(until),
            until - wait.from_ms
        ),
        Some(until) => format!(
            "Held from {} until {} ({} ms), when its {} informer reached revision {}",
            fmt_time(wait.from_ms),
            fmt_time(until),
            until - wait.from_ms,
            wait.kind,
            wait.resource_version
        ),
        None => format!("Held from {} to the end of the run", fmt_time(wait.from_ms)),
    };
    Tooltip {
        heading: format!("{component} · {} ({})", wait.label(), wait.mitigation),
        lines: vec![format!("Its sync of {} waits to see its own write", wait.object), how_long],
    }
}

/// A partition window's tooltip.
pub fn partition_tooltip(model: &TimelineModel, window: &PartitionWindow) -> Tooltip {
    let server = model.lanes.get(window.lane).map_or("", |l| l.name.as_str());
    let line = match window.until_ms {
        Some(until) => format!(
            "Cut off from the store from {} until {} ({} ms): its watch cache receives nothing",
            fmt_time(window.from_ms),
            fmt_time(until),
            until - window.from_ms
        ),
        None => format!("Cut off from the store from {} to the end of the run", fmt_time(window.from_ms)),
    };
    Tooltip { heading: format!("{server} partitioned"), lines: vec![line] }
}

/// The partition window on `lane` (the server's or its cache's) covering `time_ms`.
pub fn partition_at(model: &TimelineModel, lane: usize, time_ms: f64) -> Option<usize> {
    model.partitions.iter().position(|w| {
        (w.lane == lane || w.cache_lane == Some(lane))
            && time_ms >= w.from_ms as f64
            && w.until_ms.is_none_or(|until| time_ms <= until as f64)
    })
}
