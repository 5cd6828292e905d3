//! Field and label selectors, with the syntax of `kubectl --field-selector`
//! and `--selector`.
//!
//! Supported: comma-separated requirements `key=value`, `key==value`,
//! `key!=value`; for labels also `key` (exists) and `!key` (does not exist).
//! Set-based label requirements (`in`, `notin`) are not supported and are
//! rejected when parsed.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crate::object::Object;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
}

/// A parsed selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

/// Why a selector string could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    /// The offending requirement.
    pub requirement: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid selector requirement {:?}: {}", self.requirement, self.reason)
    }
}

impl std::error::Error for SelectorError {}

impl Selector {
    /// Parses a field selector (`=`, `==`, `!=` only).
    pub fn parse_fields(text: &str) -> Result<Selector, SelectorError> {
        Self::parse(text, false)
    }

    /// Parses a label selector (`=`, `==`, `!=`, `key`, `!key`).
    pub fn parse_labels(text: &str) -> Result<Selector, SelectorError> {
        Self::parse(text, true)
    }

    fn parse(text: &str, labels: bool) -> Result<Selector, SelectorError> {
        let mut requirements = Vec::new();
        for raw in text.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            let err = |reason| SelectorError { requirement: raw.to_string(), reason };
            let requirement = if let Some((k, v)) = raw.split_once("!=") {
                Requirement::NotEquals(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = raw.split_once("==").or_else(|| raw.split_once('=')) {
                Requirement::Equals(k.trim().to_string(), v.trim().to_string())
            } else if !labels {
                return Err(err("a field selector needs an operator (=, ==, !=)"));
            } else if raw.contains(' ') {
                return Err(err("set-based requirements (in, notin) are not supported"));
            } else if let Some(k) = raw.strip_prefix('!') {
                Requirement::NotExists(k.trim().to_string())
            } else {
                Requirement::Exists(raw.to_string())
            };
            let key = match &requirement {
                Requirement::Equals(k, _)
                | Requirement::NotEquals(k, _)
                | Requirement::Exists(k)
                | Requirement::NotExists(k) => k,
            };
            if key.is_empty() {
                return Err(err("the key is empty"));
            }
            requirements.push(requirement);
        }
        Ok(Selector { requirements })
    }

    /// Whether the selector has no requirements (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The first `key=value` requirement, if there is one: every object
    /// the selector matches has `value` at `key`, so watchers can be found
    /// by it (as the API server's watch cache finds a kubelet's watch by
    /// `spec.nodeName`) instead of by asking each.
    pub fn equality(&self) -> Option<(&str, &str)> {
        self.requirements.iter().find_map(|r| match r {
            Requirement::Equals(key, value) => Some((key.as_str(), value.as_str())),
            _ => None,
        })
    }

    /// Matches the requirements against an object's fields (see [`Object::field`]).
    /// A missing field reads as the empty string, as in Kubernetes.
    pub fn matches_fields(&self, object: &Object) -> bool {
        self.matches_with(|key| Some(object.field_str(key).unwrap_or_default()))
    }

    /// Matches the requirements against a label map.
    pub fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|key| labels.get(key).map(|v| Cow::Borrowed(v.as_str())))
    }

    fn matches_with<'a>(&self, lookup: impl Fn(&str) -> Option<Cow<'a, str>>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => lookup(k).as_deref() == Some(v.as_str()),
            Requirement::NotEquals(k, v) => lookup(k).as_deref() != Some(v.as_str()),
            Requirement::Exists(k) => lookup(k).is_some(),
            Requirement::NotExists(k) => lookup(k).is_none(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(node: &str) -> Object {
        Object {
            api_version: "v1".into(),
            kind: "Pod".into(),
            spec: json!({ "nodeName": node }).into(),
            ..Default::default()
        }
    }

    #[test]
    fn field_selector_matches_node_name() {
        let s = Selector::parse_fields("spec.nodeName=node-1").unwrap();
        assert!(s.matches_fields(&pod("node-1")));
        assert!(!s.matches_fields(&pod("node-2")));
    }

    #[test]
    fn missing_field_reads_as_empty_string() {
        let unbound = Object { kind: "Pod".into(), ..Default::default() };
        assert!(Selector::parse_fields("spec.nodeName=").unwrap().matches_fields(&unbound));
        assert!(!Selector::parse_fields("spec.nodeName!=").unwrap().matches_fields(&unbound));
    }

    #[test]
    fn label_selector_supports_equality_and_existence() {
        let labels: BTreeMap<_, _> = [("app".to_string(), "web".to_string())].into();
        assert!(Selector::parse_labels("app=web").unwrap().matches_labels(&labels));
        assert!(Selector::parse_labels("app").unwrap().matches_labels(&labels));
        assert!(!Selector::parse_labels("!app").unwrap().matches_labels(&labels));
        assert!(!Selector::parse_labels("app!=web").unwrap().matches_labels(&labels));
        assert!(Selector::parse_labels("").unwrap().matches_labels(&labels));
    }

    #[test]
    fn malformed_selectors_are_rejected_with_the_requirement() {
        let e = Selector::parse_fields("spec.nodeName").unwrap_err();
        assert_eq!(e.requirement, "spec.nodeName");
        assert!(Selector::parse_labels("app in (a,b)").is_err());
        assert!(Selector::parse_labels("=x").is_err());
    }
}
