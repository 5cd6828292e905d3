//! Reading and writing scenario files.

use serde_saphyr::{MessageFormatter, UserMessageFormatter};

use crate::source::parent;
use crate::validate::{normalize, validate};
use crate::{Diagnostic, Scenario, ScenarioError, SourceMap};

/// Reads a scenario file: YAML → [`Scenario`], then normalisation (see
/// [`parse_with_source`]), then validation.
///
/// `file` is only used in messages. On error, every problem found is
/// reported with its line and column.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    parse_with_source(file, text).map(|(scenario, _)| scenario)
}

/// Like [`parse`], and also returns the file's [`SourceMap`] so that later
/// layers can report their own problems at a position
/// (see [`ScenarioError::at`]).
///
/// Normalisation, done before validation: a namespaced object (in `objects`,
/// or in a `create`, `apply`, `delete` or `scale` step) without a namespace
/// gets `default`, as `kubectl` would give it.
pub fn parse_with_source(file: &str, text: &str) -> Result<(Scenario, SourceMap), ScenarioError> {
    // Diagnostics carry positions, not rendered snippets of the source.
    let options = serde_saphyr::options! { with_snippet: false };
    let typed = serde_saphyr::from_str_with_options::<Scenario>(text, options);
    // For malformed YAML this maps what comes before the error.
    let source = SourceMap::build(text);
    let mut scenario =
        typed.map_err(|e| ScenarioError { file: file.to_owned(), diagnostics: vec![from_yaml_error(&source, &e)] })?;
    normalize(&mut scenario);
    let mut diagnostics = validate(&scenario, &source);
    if diagnostics.is_empty() {
        return Ok((scenario, source));
    }
    diagnostics.sort_by_key(|d| (d.line, d.column));
    Err(ScenarioError { file: file.to_owned(), diagnostics })
}

/// Writes a scenario back in the shape [`parse`] reads:
/// `parse(file, &to_yaml(&s)) == Ok(s)` for every parsed `s`.
pub fn to_yaml(scenario: &Scenario) -> String {
    // Every type in the model is strings, numbers, sequences and string-keyed
    // maps, which YAML can always represent.
    serde_saphyr::to_string(scenario).expect("a scenario is always representable in YAML")
}

fn from_yaml_error(source: &SourceMap, error: &serde_saphyr::Error) -> Diagnostic {
    use serde_saphyr::Error as E;
    // The position is the outer error's: for an alias, where it is used.
    let (line, column) = error
        .location()
        .and_then(|at| Some((usize::try_from(at.line()).ok()?, usize::try_from(at.column()).ok()?)))
        .filter(|&(line, column)| line > 0 && column > 0)
        .unwrap_or((1, 1));
    let mut inner = error;
    while let E::WithSnippet { error, .. } | E::AliasError { error, .. } = inner {
        inner = error;
    }
    let message = match inner {
        // The library names the Rust type ("invalid u32"); say what to write instead.
        E::InvalidScalar { ty, .. } => match *ty {
            "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "expected a whole number, zero or more".to_owned(),
            "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "expected a whole number".to_owned(),
            "f32" | "f64" => "expected a number".to_owned(),
            "bool" | "boolean" => "expected true or false".to_owned(),
            _ => UserMessageFormatter.format_message(inner).into_owned(),
        },
        _ => UserMessageFormatter.format_message(inner).into_owned(),
    };
    // The formatter leaves control characters to its own renderer; a
    // diagnostic is one line.
    let message = message.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let (line, column, path) = match inner {
        // Reported at the key it is about.
        E::SerdeUnknownField { .. } => (line, column, source.key_at(line, column).or(source.value_at(line, column))),
        // Reported at the last key read; the mapping that lacks the field is its parent.
        E::SerdeMissingField { .. } => match source.key_at(line, column).and_then(parent) {
            Some(map) => {
                let (line, column) = source.locate(map).unwrap_or((line, column));
                (line, column, Some(map))
            }
            None => (line, column, source.value_at(line, column)),
        },
        _ => (line, column, source.value_at(line, column).or(source.key_at(line, column))),
    };
    Diagnostic { line, column, path: path.unwrap_or_default().to_owned(), message }
}
