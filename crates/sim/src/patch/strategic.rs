//! Strategic merge patch: a JSON merge patch in which the lists of the
//! built-in kinds that have a merge key merge item by item, with the
//! `$patch` directives for deleting an item or replacing a map or list.

use serde_json::{Map, Value};

use super::PatchError;
use super::fields::{Path, Schema, Step, key_step};

/// Applies `patch` to `doc` (both whole objects).
pub(crate) fn merge(doc: &mut Value, patch: &Value, schema: Schema<'_>) -> Result<(), PatchError> {
    if !patch.is_object() {
        return Err(PatchError::Malformed("a strategic merge patch must be a JSON object".into()));
    }
    merge_map(doc, patch, &mut Vec::new(), schema)
}

fn merge_map(doc: &mut Value, patch: &Value, path: &mut Path, schema: Schema<'_>) -> Result<(), PatchError> {
    let fields = patch.as_object().expect("callers pass maps");
    match fields.get("$patch").map(|d| d.as_str()) {
        None => {}
        Some(Some("replace")) => {
            *doc = strip(patch);
            return Ok(());
        }
        Some(Some("merge")) => {}
        Some(other) => {
            return Err(PatchError::Malformed(format!(
                "unknown or misplaced $patch directive {} at {}",
                other.map_or_else(|| fields["$patch"].to_string(), |s| format!("{s:?}")),
                super::fields::render(path)
            )));
        }
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    for (k, pv) in fields {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        let map = doc.as_object_mut().expect("made a map above");
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let Some(gone) = pv.as_array() else {
                return Err(PatchError::Malformed(format!("{k} must be a list")));
            };
            if let Some(Value::Array(list)) = map.get_mut(field) {
                list.retain(|v| !gone.contains(v));
            }
            continue;
        }
        if k.starts_with('$') {
            return Err(PatchError::Malformed(format!("unknown directive {k}")));
        }
        path.push(Step::Field(k.clone()));
        match pv {
            Value::Null => {
                map.remove(k);
            }
            Value::Object(inner) if inner.get("$patch").and_then(Value::as_str) == Some("delete") => {
                map.remove(k);
            }
            Value::Object(_) => merge_map(map.entry(k.clone()).or_insert(Value::Null), pv, path, schema)?,
            Value::Array(items) => merge_list(map.entry(k.clone()).or_insert(Value::Null), items, path, schema)?,
            other => {
                map.insert(k.clone(), other.clone());
            }
        }
        path.pop();
    }
    Ok(())
}

fn merge_list(doc: &mut Value, items: &[Value], path: &mut Path, schema: Schema<'_>) -> Result<(), PatchError> {
    // `{"$patch": "replace"}` among the items: the rest replace the list.
    let replace = items.iter().any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"));
    if replace {
        let rest = items.iter().filter(|i| i.get("$patch").is_none()).map(strip).collect();
        *doc = Value::Array(rest);
        return Ok(());
    }
    if let Some(key) = schema.merge_key(path) {
        if !doc.is_array() {
            *doc = Value::Array(Vec::new());
        }
        for item in items {
            let Some(step) = key_step(item, key) else {
                return Err(PatchError::DoesNotApply(format!(
                    "map: {item} does not contain declared merge key: {key} (in {})",
                    super::fields::render(path)
                )));
            };
            let list = doc.as_array_mut().expect("made a list above");
            let at = list.iter().position(|i| key_step(i, key).as_ref() == Some(&step));
            let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
            match (at, delete) {
                (Some(i), true) => {
                    list.remove(i);
                }
                (None, true) => {}
                (Some(i), false) => {
                    path.push(step);
                    merge_map(&mut list[i], item, path, schema)?;
                    path.pop();
                }
                (None, false) => list.push(strip(item)),
            }
        }
    } else if schema.is_set(path) {
        if !doc.is_array() {
            *doc = Value::Array(Vec::new());
        }
        let list = doc.as_array_mut().expect("made a list above");
        for item in items {
            if !list.contains(item) {
                list.push(item.clone());
            }
        }
    } else {
        *doc = Value::Array(items.iter().map(strip).collect());
    }
    Ok(())
}

/// A patch value without its directives, as stored.
fn strip(value: &Value) -> Value {
    super::fields::retain_fields(value, &|k, _| !k.starts_with('$'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD: Schema<'static> = Schema { kind: "Pod", custom: false };

    #[test]
    fn containers_merge_by_name_and_other_lists_are_replaced() {
        let mut doc = json!({ "spec": {
            "containers": [ { "name": "a", "image": "a:1" }, { "name": "b", "image": "b:1" } ],
            "tolerations": [ { "key": "x" } ]
        }});
        let patch = json!({ "spec": {
            "containers": [ { "name": "b", "image": "b:2" }, { "name": "c", "image": "c:1" } ],
            "tolerations": [ { "key": "y" } ]
        }});
        merge(&mut doc, &patch, POD).unwrap();
        assert_eq!(
            doc["spec"]["containers"],
            json!([ { "name": "a", "image": "a:1" }, { "name": "b", "image": "b:2" }, { "name": "c", "image": "c:1" } ])
        );
        assert_eq!(doc["spec"]["tolerations"], json!([ { "key": "y" } ]));
    }

    #[test]
    fn a_delete_directive_removes_one_item_and_replace_replaces_the_list() {
        let mut doc = json!({ "spec": { "containers": [ { "name": "a" }, { "name": "b" } ] } });
        merge(&mut doc, &json!({ "spec": { "containers": [ { "name": "a", "$patch": "delete" } ] } }), POD).unwrap();
        assert_eq!(doc["spec"]["containers"], json!([ { "name": "b" } ]));
        merge(&mut doc, &json!({ "spec": { "containers": [ { "$patch": "replace" }, { "name": "z" } ] } }), POD)
            .unwrap();
        assert_eq!(doc["spec"]["containers"], json!([ { "name": "z" } ]));
    }

    #[test]
    fn an_item_without_its_merge_key_does_not_apply() {
        let mut doc = json!({ "spec": { "containers": [] } });
        let err = merge(&mut doc, &json!({ "spec": { "containers": [ { "image": "x" } ] } }), POD).unwrap_err();
        assert!(matches!(err, PatchError::DoesNotApply(ref m) if m.contains("merge key: name")), "{err:?}");
    }
}
