//! Reading audit logs: files (plain or gzip) of JSON lines, one API server
//! each, streamed line by line and merged into one sequence ordered by
//! `stageTimestamp`.
//!
//! Memory stays bounded whatever the size of the files: one line buffer
//! per file (a line longer than [`MAX_LINE_BYTES`] is skipped), a window of
//! at most [`REORDER_WINDOW`] events per file to put back in order events
//! that an API server wrote a little out of order, and at most
//! [`PROBLEMS_KEPT`] problems of each kind kept in full.
//!
//! Bad input never stops the reading of the other files, and is always
//! reported with its file and line ([`Problem`]):
//!
//! | input | what happens |
//! |---|---|
//! | a file that cannot be opened or decompressed | refused: the rest of it is not read |
//! | a file whose first event is not `audit.k8s.io/v1` | refused: its fields may mean something else |
//! | a later event of another API version | skipped |
//! | a line cut short (the log was being written, or copied in part) | skipped |
//! | a line that is not JSON, or JSON that is not an audit `Event` | skipped |
//! | an event without a readable `stageTimestamp` | skipped |
//! | an event older than one already passed on from its file, beyond the reorder window | skipped |
//! | a line longer than [`MAX_LINE_BYTES`] | skipped |
//! | a blank line | ignored |

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::event::{API_VERSION, Event};
use crate::time::{self, Micros};

/// A line longer than this is skipped (a list of every pod of a very large
/// cluster at the `RequestResponse` level can be this big; anything
/// larger would make memory depend on the input).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// How many events of one file are held back to restore their order: an
/// API server stamps an event before it takes the log's lock, so
/// concurrent requests can land a few lines out of order.
pub const REORDER_WINDOW: usize = 1024;

/// How many problems of each kind are kept in full; the rest are counted.
pub const PROBLEMS_KEPT: usize = 20;

/// How logs are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Events of one file held back to restore their order (default [`REORDER_WINDOW`]).
    pub reorder_window: usize,
    /// Also keep each event's request and response objects whole
    /// ([`Record::bodies`]), as a replay needs them; the analysis does
    /// not, and reads faster without (default false).
    pub keep_bodies: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { reorder_window: REORDER_WINDOW, keep_bodies: false }
    }
}

/// One audit log: the file, and the API server that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// The API server's name, as the report will use it.
    pub server: String,
    /// The file.
    pub path: PathBuf,
}

impl LogFile {
    /// A log named after its file: `logs/apiserver-1.jsonl.gz` is `apiserver-1`.
    pub fn named_by_stem(path: impl Into<PathBuf>) -> LogFile {
        let path = path.into();
        let mut name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for ext in [".gz", ".jsonl", ".json", ".log"] {
            if let Some(stem) = name.strip_suffix(ext).filter(|s| !s.is_empty()) {
                name = stem.to_string();
            }
        }
        LogFile { server: name, path }
    }
}

/// One event and where it came from.
#[derive(Clone, Debug)]
pub struct Record {
    /// Index of its file in the list the reader was given.
    pub source: usize,
    /// Its line in that file (1-based).
    pub line: u64,
    /// The event.
    pub event: Event,
    /// `requestReceivedTimestamp` (the stage's time when absent).
    pub received: Micros,
    /// `stageTimestamp`.
    pub at: Micros,
    /// The request and response objects whole, when the reader was asked
    /// to keep them ([`ReadOptions::keep_bodies`]).
    pub bodies: Option<Box<Bodies>>,
}

/// An event's request and response objects as the log has them, every
/// field kept (a [`Event`] keeps only what the analysis reads).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bodies {
    /// `requestObject`.
    #[serde(default)]
    pub request_object: Option<serde_json::Value>,
    /// `responseObject`.
    #[serde(default)]
    pub response_object: Option<serde_json::Value>,
}

/// What was wrong with a line or a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ProblemKind {
    /// The file could not be opened, read or decompressed.
    Unreadable,
    /// The file, or the event, is not `audit.k8s.io/v1`.
    UnknownApiVersion,
    /// The line ends before its JSON does.
    Truncated,
    /// The line is not JSON.
    NotJson,
    /// The line is JSON but not an audit event.
    NotAnEvent,
    /// The event's timestamps cannot be read.
    BadTimestamp,
    /// The event is older than one already passed on from the same file.
    OutOfOrder,
    /// The line is longer than [`MAX_LINE_BYTES`].
    LineTooLong,
}

/// A problem with the input, at a file and line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// The file, as given.
    pub file: String,
    /// The line (1-based); 0 for the file as a whole.
    pub line: u64,
    /// What kind of problem.
    pub kind: ProblemKind,
    /// What exactly, in words.
    pub detail: String,
    /// True when the rest of the file was not read (the file is refused
    /// from this line on); false when only this line was skipped.
    pub refused: bool,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.refused { "refused" } else { "skipped" };
        if self.line == 0 {
            write!(f, "{}: {} ({what})", self.file, self.detail)
        } else {
            write!(f, "{}:{}: {} ({what})", self.file, self.line, self.detail)
        }
    }
}

/// The problems met so far: a few of each kind in full, and counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problems {
    /// The first [`PROBLEMS_KEPT`] of each kind, in the order they were met.
    pub kept: Vec<Problem>,
    /// How many of each kind, kept or not.
    pub counts: Vec<(ProblemKind, u64)>,
    /// How many lines were skipped.
    pub skipped_lines: u64,
    /// Files refused (wholly or from some line on).
    pub refused_files: Vec<String>,
}

impl Problems {
    /// Records a problem.
    pub fn push(&mut self, p: Problem) {
        let n = match self.counts.iter_mut().find(|(k, _)| *k == p.kind) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                self.counts.push((p.kind, 1));
                self.counts.sort();
                1
            }
        };
        if p.refused {
            if !self.refused_files.contains(&p.file) {
                self.refused_files.push(p.file.clone());
            }
        } else {
            self.skipped_lines += 1;
        }
        if n as usize <= PROBLEMS_KEPT || p.refused {
            self.kept.push(p);
        }
    }

    /// Whether anything was skipped or refused.
    pub fn any(&self) -> bool {
        !self.counts.is_empty()
    }

    /// How many problems of this kind there were.
    pub fn count(&self, kind: ProblemKind) -> u64 {
        self.counts.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n)
    }

    /// The problems in words: how many lines were skipped and files
    /// refused, then each problem kept, at its file and line (empty when
    /// there were none).
    pub fn text(&self) -> String {
        if !self.any() {
            return String::new();
        }
        let mut out = format!(
            "Bad input: {} line(s) skipped, {} file(s) refused:\n",
            self.skipped_lines,
            self.refused_files.len()
        );
        for p in &self.kept {
            out.push_str(&format!("  {p}\n"));
        }
        let kept = self.kept.len() as u64;
        let total: u64 = self.counts.iter().map(|(_, n)| n).sum();
        if total > kept {
            out.push_str(&format!("  … and {} more\n", total - kept));
        }
        out
    }
}

/// Two logs that their file names give the same API server's name (the
/// first such pair): read together they would mix two servers up, so
/// whoever names the files must tell them apart.
pub fn same_server(files: &[LogFile]) -> Option<(&LogFile, &LogFile)> {
    files.iter().enumerate().find_map(|(i, a)| files[..i].iter().find(|b| b.server == a.server).map(|b| (b, a)))
}

/// An event waiting in a file's reorder window, ordered by time then line
/// (boxed: the heap moves it around, and an event is large).
struct Pending(Box<Record>);

impl Pending {
    fn key(&self) -> (Micros, u64) {
        (self.0.at, self.0.line)
    }
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// How a bounded line read ended.
enum LineRead {
    /// No more input.
    Eof,
    /// A line is in the buffer; `terminated` is false for a last line without a newline.
    Line { terminated: bool },
    /// The line was longer than the limit; it has been consumed and dropped.
    TooLong,
}

/// One file being read.
struct FileReader {
    source: usize,
    name: String,
    input: Option<Box<dyn BufRead>>,
    line: u64,
    buf: Vec<u8>,
    window: BinaryHeap<Reverse<Pending>>,
    /// The (time, line) of the last event passed on.
    released: Option<(Micros, u64)>,
    /// Whether an event has been read (the first decides the file's version).
    seen_event: bool,
    bytes: u64,
    window_size: usize,
    keep_bodies: bool,
}

impl FileReader {
    fn open(source: usize, file: &LogFile, options: &ReadOptions, problems: &mut Problems) -> FileReader {
        let mut reader = FileReader::reading(source, file, None, options);
        match open_maybe_gzip(&file.path) {
            Ok(input) => reader.input = Some(input),
            Err(e) => problems.push(Problem {
                file: reader.name.clone(),
                line: 0,
                kind: ProblemKind::Unreadable,
                detail: format!("cannot read it: {e}"),
                refused: true,
            }),
        }
        reader
    }

    /// A reader of `input`, named after `file`.
    fn reading(source: usize, file: &LogFile, input: Option<Box<dyn BufRead>>, options: &ReadOptions) -> FileReader {
        let name = file.path.display().to_string();
        let mut reader = FileReader {
            source,
            name,
            input: None,
            line: 0,
            buf: Vec::new(),
            window: BinaryHeap::new(),
            released: None,
            seen_event: false,
            bytes: 0,
            window_size: options.reorder_window.max(1),
            keep_bodies: options.keep_bodies,
        };
        reader.input = input;
        reader
    }

    /// The next event of this file in time order, or `None` at its end.
    fn next(&mut self, problems: &mut Problems) -> Option<Record> {
        while self.window.len() < self.window_size {
            match self.read_event(problems) {
                Some(record) => {
                    if self.released.is_some_and(|r| (record.at, record.line) < r) {
                        let (_, line) = self.released.unwrap_or_default();
                        problems.push(Problem {
                            file: self.name.clone(),
                            line: record.line,
                            kind: ProblemKind::OutOfOrder,
                            detail: format!(
                                "stageTimestamp {} is earlier than that of line {line}, already passed on (more than {} events out of order)",
                                time::format(record.at),
                                self.window_size
                            ),
                            refused: false,
                        });
                        continue;
                    }
                    self.window.push(Reverse(Pending(Box::new(record))));
                }
                None => break,
            }
        }
        let Reverse(Pending(record)) = self.window.pop()?;
        self.released = Some((record.at, record.line));
        Some(*record)
    }

    /// Reads lines until one holds an event, reporting the others.
    fn read_event(&mut self, problems: &mut Problems) -> Option<Record> {
        loop {
            let input = self.input.as_mut()?;
            let read = match read_line_bounded(input.as_mut(), &mut self.buf, MAX_LINE_BYTES) {
                Ok(r) => r,
                Err(e) => {
                    self.line += 1;
                    problems.push(Problem {
                        file: self.name.clone(),
                        line: self.line,
                        kind: ProblemKind::Unreadable,
                        detail: format!("cannot read on: {e}"),
                        refused: true,
                    });
                    self.input = None;
                    return None;
                }
            };
            self.line += 1;
            let terminated = match read {
                LineRead::Eof => {
                    self.input = None;
                    return None;
                }
                LineRead::TooLong => {
                    self.skip(problems, ProblemKind::LineTooLong, format!("longer than {MAX_LINE_BYTES} bytes"));
                    continue;
                }
                LineRead::Line { terminated } => terminated,
            };
            self.bytes += self.buf.len() as u64 + u64::from(terminated);
            let text = trim_ascii(&self.buf);
            if text.is_empty() {
                continue;
            }
            match parse_line(text) {
                Ok((event, received, at)) => {
                    if event.api_version != API_VERSION {
                        let detail = format!(
                            "apiVersion {:?} is not {API_VERSION}, the only version this reads",
                            event.api_version
                        );
                        if !self.seen_event {
                            // The whole file is of another version: its
                            // fields may mean something else, so none is used.
                            problems.push(Problem {
                                file: self.name.clone(),
                                line: self.line,
                                kind: ProblemKind::UnknownApiVersion,
                                detail,
                                refused: true,
                            });
                            self.input = None;
                            return None;
                        }
                        self.skip(problems, ProblemKind::UnknownApiVersion, detail);
                        continue;
                    }
                    self.seen_event = true;
                    // A second reading of the same line, only when asked:
                    // the bodies are most of a line's bytes.
                    let bodies = self.keep_bodies.then(|| Box::new(serde_json::from_slice(text).unwrap_or_default()));
                    return Some(Record { source: self.source, line: self.line, event, received, at, bodies });
                }
                Err((kind, detail)) => {
                    let detail = if kind == ProblemKind::Truncated && !terminated {
                        format!("{detail} (the last line has no newline: was the log still being written?)")
                    } else {
                        detail
                    };
                    self.skip(problems, kind, detail);
                }
            }
        }
    }

    fn skip(&self, problems: &mut Problems, kind: ProblemKind, detail: String) {
        problems.push(Problem { file: self.name.clone(), line: self.line, kind, detail, refused: false });
    }
}

/// Parses one line into an event and its two times.
fn parse_line(text: &[u8]) -> Result<(Event, Micros, Micros), (ProblemKind, String)> {
    let event: Event = match serde_json::from_slice(text) {
        Ok(e) => e,
        Err(e) if e.is_eof() => return Err((ProblemKind::Truncated, "the line ends before its event does".into())),
        Err(e) if e.is_syntax() => return Err((ProblemKind::NotJson, format!("not JSON: {e}"))),
        Err(e) => return Err((ProblemKind::NotAnEvent, format!("not an audit event: {e}"))),
    };
    if event.kind != "Event" {
        let kind = if event.kind.is_empty() { "no kind".to_string() } else { format!("kind {:?}", event.kind) };
        return Err((ProblemKind::NotAnEvent, format!("not an audit event: {kind}, not \"Event\"")));
    }
    if event.stage_timestamp.is_empty() {
        return Err((ProblemKind::BadTimestamp, "the event has no stageTimestamp".into()));
    }
    let at =
        time::parse(&event.stage_timestamp).map_err(|e| (ProblemKind::BadTimestamp, format!("stageTimestamp: {e}")))?;
    let received = if event.request_received_timestamp.is_empty() {
        at
    } else {
        time::parse(&event.request_received_timestamp)
            .map_err(|e| (ProblemKind::BadTimestamp, format!("requestReceivedTimestamp: {e}")))?
    };
    Ok((event, received, at))
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &b[start..end]
}

/// Opens a file, decompressing it if it starts with the gzip magic bytes
/// (whatever its name), so rotated and compressed logs read alike.
fn open_maybe_gzip(path: &Path) -> io::Result<Box<dyn BufRead>> {
    maybe_gunzip(Box::new(BufReader::with_capacity(1 << 16, File::open(path)?)))
}

/// An input decompressed if it starts with the gzip magic bytes.
fn maybe_gunzip(mut input: Box<dyn BufRead>) -> io::Result<Box<dyn BufRead>> {
    if input.fill_buf()?.starts_with(&[0x1f, 0x8b]) {
        // Several gzip members in one input (concatenated rotations) read as one stream.
        Ok(Box::new(BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(input))))
    } else {
        Ok(input)
    }
}

/// Reads one line into `buf` (without its newline), never holding more
/// than `max` bytes: a longer line is consumed and dropped.
fn read_line_bounded(input: &mut dyn BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(match (read_any, too_long) {
                (false, _) => LineRead::Eof,
                (true, true) => LineRead::TooLong,
                (true, false) => LineRead::Line { terminated: false },
            });
        }
        read_any = true;
        let (part, found) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i)),
            None => (chunk, None),
        };
        if !too_long {
            if buf.len() + part.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = found.map_or(chunk.len(), |i| i + 1);
        input.consume(used);
        if found.is_some() {
            return Ok(if too_long { LineRead::TooLong } else { LineRead::Line { terminated: true } });
        }
    }
}

/// Every file's events, merged in `stageTimestamp` order (ties: the file
/// given first, then the earlier line), with the problems met on the way.
pub struct MergedLogs {
    files: Vec<FileReader>,
    heads: BinaryHeap<Reverse<(Micros, usize, u64)>>,
    pending: Vec<Option<Record>>,
    /// Problems met so far.
    pub problems: Problems,
    /// Events passed on so far.
    pub events: u64,
}

impl MergedLogs {
    /// Opens every file; a file that cannot be opened is a refused file in
    /// [`MergedLogs::problems`], and the others are read.
    pub fn open(files: &[LogFile], options: &ReadOptions) -> MergedLogs {
        let mut problems = Problems::default();
        let readers: Vec<FileReader> =
            files.iter().enumerate().map(|(i, f)| FileReader::open(i, f, options, &mut problems)).collect();
        MergedLogs::start(readers, problems)
    }

    /// Reads the first event of every file, to start the merge.
    fn start(mut readers: Vec<FileReader>, mut problems: Problems) -> MergedLogs {
        let mut heads = BinaryHeap::new();
        let mut pending = Vec::with_capacity(readers.len());
        for r in &mut readers {
            let next = r.next(&mut problems);
            if let Some(rec) = &next {
                heads.push(Reverse((rec.at, rec.source, rec.line)));
            }
            pending.push(next);
        }
        MergedLogs { files: readers, heads, pending, problems, events: 0 }
    }

    /// Reads logs already open (or in memory), one input per file, in
    /// the files' order; `files` name them. An input that starts with the
    /// gzip magic bytes is decompressed, as a file is.
    pub fn from_inputs(files: &[LogFile], inputs: Vec<Box<dyn BufRead>>, options: &ReadOptions) -> MergedLogs {
        let mut problems = Problems::default();
        let readers = files
            .iter()
            .zip(inputs)
            .enumerate()
            .map(|(i, (f, input))| {
                let input = maybe_gunzip(input).map_err(|e| {
                    problems.push(Problem {
                        file: f.path.display().to_string(),
                        line: 0,
                        kind: ProblemKind::Unreadable,
                        detail: format!("cannot read it: {e}"),
                        refused: true,
                    })
                });
                FileReader::reading(i, f, input.ok(), options)
            })
            .collect();
        MergedLogs::start(readers, problems)
    }

    /// Bytes of log text read so far (after decompression).
    pub fn bytes_read(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

impl Iterator for MergedLogs {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        let Reverse((_, source, _)) = self.heads.pop()?;
        let record = self.pending[source].take()?;
        let next = self.files[source].next(&mut self.problems);
        if let Some(rec) = &next {
            self.heads.push(Reverse((rec.at, rec.source, rec.line)));
        }
        self.pending[source] = next;
        self.events += 1;
        Some(record)
    }
}

/// Reads from any `Read` (for tests and benchmarks): the same line reading
/// and parsing as for files, one source, no reordering.
pub fn read_events(name: &str, input: impl Read + 'static) -> (Vec<Record>, Problems) {
    let mut problems = Problems::default();
    let mut reader = FileReader {
        source: 0,
        name: name.to_string(),
        input: Some(Box::new(BufReader::new(input))),
        line: 0,
        buf: Vec::new(),
        window: BinaryHeap::new(),
        released: None,
        seen_event: false,
        bytes: 0,
        window_size: REORDER_WINDOW,
        keep_bodies: false,
    };
    let mut records = Vec::new();
    while let Some(r) = reader.next(&mut problems) {
        records.push(r);
    }
    (records, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(at: &str, verb: &str) -> String {
        format!(
            r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"{verb}","user":{{"username":"u"}},"stageTimestamp":"{at}"}}"#
        )
    }

    #[test]
    fn files_are_named_by_their_stem() {
        assert_eq!(LogFile::named_by_stem("logs/apiserver-1.jsonl.gz").server, "apiserver-1");
        assert_eq!(LogFile::named_by_stem("audit.log").server, "audit");
        assert_eq!(LogFile::named_by_stem("kube-apiserver-a").server, "kube-apiserver-a");
    }

    #[test]
    fn a_bounded_read_drops_an_overlong_line_and_goes_on() {
        let mut input = BufReader::with_capacity(4, &b"0123456789\nabc\nlast"[..]);
        let mut buf = Vec::new();
        assert!(matches!(read_line_bounded(&mut input, &mut buf, 5).unwrap(), LineRead::TooLong));
        assert!(matches!(read_line_bounded(&mut input, &mut buf, 5).unwrap(), LineRead::Line { terminated: true }));
        assert_eq!(buf, b"abc");
        assert!(matches!(read_line_bounded(&mut input, &mut buf, 5).unwrap(), LineRead::Line { terminated: false }));
        assert_eq!(buf, b"last");
        assert!(matches!(read_line_bounded(&mut input, &mut buf, 5).unwrap(), LineRead::Eof));
    }

    #[test]
    fn events_a_little_out_of_order_are_put_back_in_order() {
        let text = [line("2024-05-01T12:00:00.000002Z", "get"), line("2024-05-01T12:00:00.000001Z", "list")].join("\n");
        let (records, problems) = read_events("a.log", std::io::Cursor::new(text.into_bytes()));
        assert!(!problems.any(), "{problems:?}");
        let verbs: Vec<&str> = records.iter().map(|r| r.event.verb.as_str()).collect();
        assert_eq!(verbs, ["list", "get"]);
        assert_eq!(records[0].line, 2);
    }
}
