//! What went wrong in a scenario file, and where.

use std::fmt;

use crate::SourceMap;

/// One problem in a scenario file, at a YAML node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Line of the offending node (1-based).
    pub line: usize,
    /// Column of the offending node (1-based, in characters).
    pub column: usize,
    /// Path of the offending node, e.g. `components[2].apiServer`; empty
    /// when the file could not be read far enough to tell.
    pub path: String,
    /// What is wrong, in plain words.
    pub message: String,
}

impl Diagnostic {
    /// A problem with the node at `path`, located through `source` (at the
    /// nearest ancestor present in the file, or at 1:1 if there is none).
    pub fn new(source: &SourceMap, path: impl Into<String>, message: impl Into<String>) -> Diagnostic {
        let path = path.into();
        let (line, column) = source.locate(&path).unwrap_or((1, 1));
        Diagnostic { line, column, path, message: message.into() }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// A scenario file that cannot be run: one or more located problems.
///
/// Displays as one `file:line:column: message` line per problem, the format
/// editors and terminals turn into links. Fix every listed problem and parse
/// again; validation reports all problems it finds, not only the first.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.file, .diagnostics))]
pub struct ScenarioError {
    /// The file name given to [`parse`](crate::parse), for messages only.
    pub file: String,
    /// The problems, in file order; never empty.
    pub diagnostics: Vec<Diagnostic>,
}

impl ScenarioError {
    /// One problem at `path` of a parsed file, for layers above this crate
    /// (the simulator rejects an unknown controller at `components[i].controller`).
    pub fn at(file: &str, source: &SourceMap, path: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: file.to_owned(), diagnostics: vec![Diagnostic::new(source, path, message)] }
    }
}

fn render(file: &str, diagnostics: &[Diagnostic]) -> String {
    let lines: Vec<String> = diagnostics.iter().map(|d| format!("{file}:{d}")).collect();
    lines.join("\n")
}
