//! Where things are in a scenario file: a map from paths such as
//! `components[2].apiServer` to the line and column of that YAML node.
//!
//! The typed model cannot carry positions (it stays plain data that compares
//! and serializes), so the text is read a second time, as the YAML parser's
//! event stream, and every node's path is recorded with its position. The
//! walk keeps its own stack rather than recursing: a deeply nested file must
//! not overflow the thread's stack (`Spanned` deserialization takes tens of
//! kilobytes of stack per level in debug builds).

use std::collections::BTreeMap;

use serde_saphyr::granit_parser::{Event, Parser, Span};

/// Line and column (1-based) of every node of a scenario file, by path.
///
/// Paths join mapping keys with `.` and sequence indices with `[i]`:
/// `script[3].restart.component`. The empty path is the whole document.
/// Nodes reached through an alias (`*name`) are located at the alias.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    /// Where each node starts.
    values: BTreeMap<String, (usize, usize)>,
    /// Where each mapping key starts, so that errors the deserializer reports
    /// at a key (unknown fields) can be given a path too.
    keys: BTreeMap<(usize, usize), String>,
}

/// An open collection during the walk. `path` is `None` inside a mapping
/// key that is itself a collection: no path can name what is in there.
enum Open {
    Seq {
        path: Option<String>,
        next: usize,
    },
    /// `key` is `None` while the next node is a key, else the key whose
    /// value comes next.
    Map {
        path: Option<String>,
        key: Option<String>,
    },
}

impl SourceMap {
    /// Reads the first YAML document of `text`. Stops at a syntax error and
    /// keeps what it has read so far (the typed parse reports the error).
    pub(crate) fn build(text: &str) -> SourceMap {
        let mut map = SourceMap::default();
        let mut open: Vec<Open> = Vec::new();
        let mut started = false;
        for event in Parser::new_from_str(text) {
            let Ok((event, span)) = event else { break };
            match event {
                Event::Scalar(value, ..) => {
                    map.node(&mut open, &mut started, span, Some(&value));
                    finish(&mut open, value.into_owned());
                }
                Event::Alias(_) => {
                    map.node(&mut open, &mut started, span, None);
                    finish(&mut open, "*".to_owned());
                }
                Event::SequenceStart(..) => {
                    let path = map.node(&mut open, &mut started, span, None);
                    open.push(Open::Seq { path, next: 0 });
                }
                Event::MappingStart(..) => {
                    let path = map.node(&mut open, &mut started, span, None);
                    open.push(Open::Map { path, key: None });
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    open.pop();
                    finish(&mut open, "?".to_owned());
                }
                Event::DocumentEnd if started => break,
                _ => {}
            }
        }
        map
    }

    /// Records a node starting at `span` and returns its path (`None` for
    /// mapping keys and inside them). `scalar` is the node's text, if any,
    /// for keys.
    fn node(&mut self, open: &mut [Open], started: &mut bool, span: Span, scalar: Option<&str>) -> Option<String> {
        let at = (span.start.line(), span.start.col() + 1);
        let path = match open.last_mut() {
            None if *started => return None,
            None => {
                *started = true;
                Some(String::new())
            }
            Some(Open::Seq { path, next }) => {
                *next += 1;
                path.as_ref().map(|p| format!("{p}[{}]", *next - 1))
            }
            Some(Open::Map { path, key: None }) => {
                // A key: remember where it is, under the path its value will have.
                if let (Some(p), Some(key)) = (path.as_ref(), scalar) {
                    self.keys.entry(at).or_insert_with(|| child(p, key));
                }
                return None;
            }
            Some(Open::Map { path, key: Some(key) }) => path.as_ref().map(|p| child(p, key)),
        };
        if let Some(path) = &path {
            self.values.entry(path.clone()).or_insert(at);
        }
        path
    }

    /// Line and column of the node at `path`, or of its nearest ancestor
    /// present in the file (a missing `via` is reported at its step).
    pub fn locate(&self, path: &str) -> Option<(usize, usize)> {
        let mut path = path;
        loop {
            if let Some(&at) = self.values.get(path) {
                return Some(at);
            }
            path = parent(path)?;
        }
    }

    /// Line and column of the mapping key whose value is at `path`, for
    /// problems with a key itself (an unknown field); falls back to
    /// [`SourceMap::locate`].
    pub fn locate_key(&self, path: &str) -> Option<(usize, usize)> {
        self.keys.iter().find(|(_, key)| key.as_str() == path).map(|(&at, _)| at).or_else(|| self.locate(path))
    }

    /// The path of the mapping key that starts exactly at `(line, column)`.
    pub(crate) fn key_at(&self, line: usize, column: usize) -> Option<&str> {
        self.keys.get(&(line, column)).map(String::as_str)
    }

    /// The path of the innermost node that starts exactly at `(line, column)`
    /// (a mapping inside a block sequence starts where its first key does).
    pub(crate) fn value_at(&self, line: usize, column: usize) -> Option<&str> {
        self.values
            .iter()
            .filter(|(_, at)| **at == (line, column))
            .map(|(path, _)| path.as_str())
            .max_by_key(|path| path.len())
    }
}

/// A node just ended inside the innermost open collection: in a mapping,
/// a key (named `text`) is now waiting for its value, or a value is done.
fn finish(open: &mut [Open], text: String) {
    if let Some(Open::Map { key, .. }) = open.last_mut() {
        *key = match key {
            None => Some(text),
            Some(_) => None,
        };
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

/// `a.b[2]` → `a.b`, `a.b` → `a`, `a` → ``; `None` for the empty path.
pub(crate) fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    let cut = match path.strip_suffix(']') {
        Some(rest) => rest.rfind('['),
        None => path.rfind('.'),
    };
    Some(&path[..cut.unwrap_or(0)])
}
