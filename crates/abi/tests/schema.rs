//! The ABI for other languages: `docs/plugin-abi.schema.json` is the JSON
//! Schema the Rust types generate (`RECON_BLESS=1` rewrites it), and every
//! example message in `docs/plugin-abi.md` reads as its type, writes back
//! the same, and together they show every event, action and outcome.

use std::collections::BTreeSet;
use std::path::PathBuf;

use recon_abi::schema::{MESSAGES, schema};
use recon_abi::{ActionResult, ComponentConfig, Manifest, Output, WireInput};
use serde_json::Value;

fn docs(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs").join(file)
}

#[test]
fn the_checked_in_schema_is_the_one_the_types_generate() {
    let path = docs("plugin-abi.schema.json");
    let generated = schema();
    if std::env::var_os("RECON_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let checked_in: Value = serde_json::from_str(&text).expect("the schema file is JSON");
    assert!(
        checked_in == generated,
        "docs/plugin-abi.schema.json differs from what crates/abi generates: \
         RECON_BLESS=1 cargo test -p recon-abi --test schema rewrites it"
    );
    for message in MESSAGES {
        assert!(generated["$defs"].get(message).is_some(), "{message} is defined");
    }
}

/// The examples of `docs/plugin-abi.md`: (type name, JSON), each a block
/// after a `<!-- example: Type -->` line.
fn examples() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(docs("plugin-abi.md")).unwrap();
    let mut found = Vec::new();
    for (at, _) in text.match_indices("<!-- example: ") {
        let rest = &text[at + "<!-- example: ".len()..];
        let (name, rest) = rest.split_once(" -->").expect("a closed marker");
        let block = rest.trim_start().strip_prefix("```json\n").expect("a json block after the marker");
        let (json, _) = block.split_once("```").expect("a closed block");
        found.push((name.to_owned(), json.to_owned()));
    }
    found
}

/// Reads `json` as the type `name`, writes it back.
fn round_trip(name: &str, json: &str) -> Value {
    fn again<T: serde::de::DeserializeOwned + serde::Serialize>(json: &str) -> Result<Value, serde_json::Error> {
        serde_json::from_str::<T>(json).map(|value| serde_json::to_value(value).unwrap())
    }
    match name {
        "ComponentConfig" => again::<ComponentConfig>(json),
        "Manifest" => again::<Manifest>(json),
        "Input" => again::<WireInput>(json),
        "Output" => again::<Output>(json),
        "ActionResult" => again::<ActionResult>(json),
        other => panic!("an example of {other}, which is not a message"),
    }
    .unwrap_or_else(|e| panic!("the {name} example does not read: {e}\n{json}"))
}

/// Every value of `field` anywhere in `value`.
fn values_of(value: &Value, field: &str, into: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key == field
                    && let Some(text) = inner.as_str()
                {
                    into.insert(text.to_owned());
                }
                values_of(inner, field, into);
            }
        }
        Value::Array(items) => items.iter().for_each(|inner| values_of(inner, field, into)),
        _ => {}
    }
}

/// The `type` tags a definition of the schema allows (its variants).
fn tags(definition: &str) -> BTreeSet<String> {
    let mut tags = BTreeSet::new();
    for variant in schema()["$defs"][definition]["oneOf"].as_array().expect("a tagged enum") {
        tags.insert(variant["properties"]["type"]["const"].as_str().expect("a tag").to_owned());
    }
    tags
}

#[test]
fn every_example_in_the_abi_doc_reads_as_its_type_and_writes_back_the_same() {
    let examples = examples();
    let mut shown: BTreeSet<&str> = BTreeSet::new();
    let mut types = BTreeSet::new();
    let mut outcomes = BTreeSet::new();
    for (name, json) in &examples {
        let written: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{name}: not JSON: {e}\n{json}"));
        assert_eq!(round_trip(name, json), written, "the {name} example has a field its type would not write back");
        shown.insert(name);
        values_of(&written, "type", &mut types);
        if let Some(outcome) = written.get("outcome").and_then(Value::as_object) {
            outcomes.extend(outcome.keys().cloned());
        }
    }
    assert_eq!(shown, BTreeSet::from(MESSAGES), "an example of every message");
    // Every event the host sends, every action a plugin may return, every outcome.
    let missing: Vec<String> =
        tags("InputEvent").into_iter().chain(tags("Action")).filter(|t| !types.contains(t)).collect();
    assert!(missing.is_empty(), "no example shows {missing:?}");
    for watch_event in ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"] {
        assert!(types.contains(watch_event), "no example shows a {watch_event} watch event");
    }
    assert_eq!(outcomes, BTreeSet::from(["ok", "listed", "err"].map(String::from)));
}

/// `value` as compact JSON with every map's `type` key written last, as a
/// plugin in another language (or a format that sorts keys) may write it.
fn tag_last(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().filter(|(key, _)| *key != "type").collect();
            entries.extend(map.get_key_value("type"));
            let inner: Vec<String> =
                entries.iter().map(|(key, v)| format!("{}:{}", Value::from(key.as_str()), tag_last(v))).collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(tag_last).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

// The host and the SDK write an event's or action's `type` first, and the
// decoder then reads its fields without buffering them (`tagged.rs` in
// `crates/abi`); JSON leaves key order free, so the tag anywhere else must
// read as the same message.
#[test]
fn every_example_reads_the_same_with_its_type_tags_last() {
    let mut moved_any = 0;
    for (name, json) in examples() {
        let written: Value = serde_json::from_str(&json).unwrap();
        let moved = tag_last(&written);
        moved_any += json.matches(r#""type""#).count();
        assert_eq!(round_trip(&name, &moved), written, "the {name} example, tags last:\n{moved}");
    }
    assert!(moved_any > 20, "tags moved: {moved_any}");
}

// Both ways of reading a tag refuse the same mistakes, each by name.
#[test]
fn a_bad_event_or_action_is_refused_wherever_its_tag_is() {
    use recon_abi::{Action, InputEvent};
    let refusals: [(&str, &str, &str); 5] = [
        (r#"{"type":"timer","key":"k","extra":1}"#, r#"{"key":"k","extra":1,"type":"timer"}"#, "unknown field `extra`"),
        (r#"{"type":"sleep","key":"k"}"#, r#"{"key":"k","type":"sleep"}"#, "unknown variant `sleep`"),
        (r#"{"type":"timer"}"#, r#"{}"#, "missing field"),
        (r#"{"type":"timer","key":"k","key":"j"}"#, r#"{"key":"k","key":"j","type":"timer"}"#, "duplicate field `key`"),
        (r#"{"type":7,"key":"k"}"#, r#"{"key":"k","type":7}"#, "invalid type"),
    ];
    for (first, last, expected) in refusals {
        for json in [first, last] {
            let error = serde_json::from_str::<InputEvent>(json).expect_err(json).to_string();
            assert!(error.contains(expected), "{json}: {error}");
        }
    }
    let error = serde_json::from_str::<Action>(r#"{"after_ms":5,"type":"requeueAfter","key":"k"}"#)
        .expect_err("snake case")
        .to_string();
    assert!(error.contains("unknown field `after_ms`"), "{error}");
    let requeue: Action = serde_json::from_str(r#"{"afterMs":5,"key":"k","type":"requeueAfter"}"#).unwrap();
    assert_eq!(requeue, Action::RequeueAfter { key: "k".into(), after_ms: 5 });
}
