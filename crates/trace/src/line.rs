//! [`Line`]: one line of a reconcile's inputs or actions.

use std::cell::RefCell;
use std::fmt;

use recon_abi::{EventType, Verb};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::text::short_uid;
use crate::{Key, Name};

/// One line of a reconcile's inputs, actions or held-back inputs: what the
/// trace encodes as a string (`"watch 0: MODIFIED Pod default/web-0 (uid
/// 1a2b3c4d) at revision 42"`).
///
/// The lines a large run writes millions of (watch events, write results,
/// writes, container starts and stops) are kept as their parts, names and
/// keys shared with the rest of the trace, and written out only when the
/// trace is encoded or shown: formatting each one as it happened was a
/// twentieth of a 5,000-node run's time, and their text about as much of
/// its memory. Every other line is kept as written ([`Line::Text`]), and a
/// line read back from JSON is always text. Both ways encode, print and
/// compare as the same string.
#[derive(Clone)]
pub enum Line {
    /// `watch 0: MODIFIED Pod default/web-0 (uid 1a2b3c4d) at revision 42`:
    /// an event delivered on one of the controller's watches.
    Watched {
        /// The watch's index in the manifest.
        watch: u32,
        /// What happened to the object.
        event_type: EventType,
        /// The object.
        key: Key,
        /// Its uid (the line shows the first 8 characters).
        uid: Name,
        /// The object's revision.
        revision: u64,
    },
    /// `update status of Pod default/web-0: ok`: a write succeeded.
    Succeeded {
        /// What was written.
        verb: Verb,
        /// The object.
        key: Key,
    },
    /// `create Pod default/web-0`, `update status of Pod default/web-0 if
    /// at revision 7`: a create, update or status update the controller sent.
    Write {
        /// Create, update or update status.
        verb: Verb,
        /// The object.
        key: Key,
        /// The revision the write is conditional on, if any.
        if_at: Option<u64>,
    },
    /// `start container default/web-0 (uid 1a2b3c4d)`, or `stop container …`.
    Container {
        /// Start (or stop).
        start: bool,
        /// The pod.
        pod: Key,
        /// Its uid (the line shows the first 8 characters).
        uid: Name,
    },
    /// Any other line, as written.
    Text(String),
}

/// Written piece by piece, the strings with `write_str`: a string given to
/// `write!` as an argument is padded, and a trace encodes millions of lines.
impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Watched { watch, event_type, key, uid, revision } => {
                write!(f, "watch {watch}: {event_type} {key} (uid ")?;
                f.write_str(short_uid(uid))?;
                write!(f, ") at revision {revision}")
            }
            Line::Succeeded { verb, key } => write!(f, "{verb} {key}: ok"),
            Line::Write { verb, key, if_at } => {
                write!(f, "{verb} {key}")?;
                match if_at {
                    Some(revision) => write!(f, " if at revision {revision}"),
                    None => Ok(()),
                }
            }
            Line::Container { start, pod, uid } => {
                f.write_str(if *start { "start container " } else { "stop container " })?;
                f.write_str(&pod.namespace)?;
                f.write_str("/")?;
                f.write_str(&pod.name)?;
                f.write_str(" (uid ")?;
                f.write_str(short_uid(uid))?;
                f.write_str(")")
            }
            Line::Text(text) => f.write_str(text),
        }
    }
}

/// Debugs as the string it reads as, as the lines were before they had parts.
impl fmt::Debug for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl PartialEq for Line {
    fn eq(&self, other: &Line) -> bool {
        match (self, other) {
            (Line::Text(a), Line::Text(b)) => a == b,
            _ => self.to_string() == other.to_string(),
        }
    }
}

impl Eq for Line {}

impl PartialEq<str> for Line {
    fn eq(&self, other: &str) -> bool {
        match self {
            Line::Text(text) => text == other,
            _ => {
                // The text it displays, compared piece by piece as it is
                // written, without building it.
                struct Rest<'a>(&'a str);
                impl fmt::Write for Rest<'_> {
                    fn write_str(&mut self, piece: &str) -> fmt::Result {
                        self.0 = self.0.strip_prefix(piece).ok_or(fmt::Error)?;
                        Ok(())
                    }
                }
                let mut rest = Rest(other);
                fmt::write(&mut rest, format_args!("{self}")).is_ok() && rest.0.is_empty()
            }
        }
    }
}

impl PartialEq<&str> for Line {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl From<String> for Line {
    fn from(text: String) -> Self {
        Line::Text(text)
    }
}

impl From<&str> for Line {
    fn from(text: &str) -> Self {
        Line::Text(text.to_string())
    }
}

thread_local! {
    /// The text of the line being encoded, kept between lines.
    static ENCODING: RefCell<String> = const { RefCell::new(String::new()) };
}

/// A line with parts is written out whole, then encoded as one string
/// (`collect_str` escaped each piece through a writer of its own, a tenth
/// more work per line).
impl Serialize for Line {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Line::Text(text) => serializer.serialize_str(text),
            _ => ENCODING.with_borrow_mut(|text| {
                text.clear();
                fmt::write(text, format_args!("{self}")).map_err(serde::ser::Error::custom)?;
                serializer.serialize_str(text)
            }),
        }
    }
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Line::Text)
    }
}

#[cfg(test)]
mod tests {
    use recon_abi::ObjectKey;

    use super::*;

    fn pod() -> Key {
        ObjectKey::new("Pod", "default", "web-0").into()
    }

    /// Each kind of line reads, encodes and compares as the string the
    /// simulator wrote before lines had parts.
    #[test]
    fn lines_read_as_the_strings_they_stand_for() {
        let uid: Name = "1a2b3c4d-5e6f".into();
        let cases = [
            (
                Line::Watched { watch: 2, event_type: EventType::Modified, key: pod(), uid: uid.clone(), revision: 42 },
                "watch 2: MODIFIED Pod default/web-0 (uid 1a2b3c4d) at revision 42",
            ),
            (Line::Succeeded { verb: Verb::UpdateStatus, key: pod() }, "update status of Pod default/web-0: ok"),
            (Line::Write { verb: Verb::Create, key: pod(), if_at: None }, "create Pod default/web-0"),
            (
                Line::Write { verb: Verb::Update, key: pod(), if_at: Some(7) },
                "update Pod default/web-0 if at revision 7",
            ),
            (
                Line::Container { start: true, pod: pod(), uid: uid.clone() },
                "start container default/web-0 (uid 1a2b3c4d)",
            ),
            (
                Line::Container { start: false, pod: pod(), uid: "short".into() },
                "stop container default/web-0 (uid short)",
            ),
            (Line::from("requeue Pod default/web-0 after 5ms"), "requeue Pod default/web-0 after 5ms"),
        ];
        for (line, text) in cases {
            assert_eq!(line.to_string(), text);
            assert_eq!(format!("{line:?}"), format!("{text:?}"));
            assert_eq!(serde_json::to_string(&line).unwrap(), serde_json::to_string(text).unwrap());
            let back: Line = serde_json::from_str(&serde_json::to_string(&line).unwrap()).unwrap();
            assert!(matches!(back, Line::Text(_)), "read back as text");
            assert_eq!(back, line, "text and parts compare as the string");
            assert_eq!(line, text);
            // Compared without being written out: a string it merely starts
            // with, or that starts with it, is another string.
            assert_ne!(line, &text[..text.len() - 1]);
            assert_ne!(line, format!("{text}!").as_str());
            assert_ne!(line, format!("{}x", &text[..text.len() - 1]).as_str());
        }
    }
}
