//! Field sets: the paths of an object's fields, how lists are keyed, the
//! FieldsV1 encoding of `metadata.managedFields`, and the field ownership
//! that server-side apply and other writes keep there.

use std::collections::BTreeSet;

use recon_abi::ManagedFieldsEntry;
use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    /// A field of a map: `f:<name>`.
    Field(String),
    /// An item of a list keyed by a field: `k:{"name":"c"}` (the key as JSON).
    Key(String),
    /// An item of a list of distinct values: `v:"x"` (the value as JSON).
    Value(String),
}

/// A path from the object's root to one field.
pub(crate) type Path = Vec<Step>;

/// A set of field paths: what one manager owns.
pub(crate) type FieldSet = BTreeSet<Path>;

/// How a list is merged: item by item on a key, as a set of values, or
/// replaced whole (atomic).
enum ListType {
    Map(&'static str),
    Set,
    Atomic,
}

/// What decides how lists merge: the kind, and whether it is a custom
/// resource (whose lists are atomic: Recon does not read CRD schemas).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schema<'a> {
    /// The kind.
    pub(crate) kind: &'a str,
    /// Whether it is a custom resource.
    pub(crate) custom: bool,
}

impl Schema<'_> {
    /// The list type of the list at `path`, from the merge keys of the
    /// built-in kinds (`x-kubernetes-patch-merge-key` in their API).
    fn list_type(&self, path: &[Step]) -> ListType {
        let Some(Step::Field(field)) = path.last() else { return ListType::Atomic };
        let in_metadata = matches!(path.first(), Some(Step::Field(f)) if f == "metadata") && path.len() == 2;
        if in_metadata {
            return match field.as_str() {
                "finalizers" => ListType::Set,
                "ownerReferences" => ListType::Map("uid"),
                _ => ListType::Atomic,
            };
        }
        if self.custom {
            return ListType::Atomic;
        }
        match field.as_str() {
            "containers" | "initContainers" | "ephemeralContainers" | "env" | "volumes" | "imagePullSecrets" => {
                ListType::Map("name")
            }
            "volumeMounts" => ListType::Map("mountPath"),
            "volumeDevices" => ListType::Map("devicePath"),
            "ports" if self.kind == "Service" && path.len() == 2 => ListType::Map("port"),
            "ports" => ListType::Map("containerPort"),
            "conditions" | "addresses" => ListType::Map("type"),
            "podIPs" | "hostIPs" => ListType::Map("ip"),
            _ => ListType::Atomic,
        }
    }

    /// The merge key of the list at `path`, if it merges by key.
    pub(crate) fn merge_key(&self, path: &[Step]) -> Option<&'static str> {
        match self.list_type(path) {
            ListType::Map(key) => Some(key),
            _ => None,
        }
    }

    /// Whether the list at `path` is a set of values (merged by union).
    pub(crate) fn is_set(&self, path: &[Step]) -> bool {
        matches!(self.list_type(path), ListType::Set)
    }
}

/// The key step of a keyed list item, if it has its key.
pub(crate) fn key_step(item: &Value, key: &str) -> Option<Step> {
    let value = item.get(key)?;
    let mut map = Map::new();
    map.insert(key.to_string(), value.clone());
    Some(Step::Key(Value::Object(map).to_string()))
}

fn step_matches(step: &Step, item: &Value) -> bool {
    match step {
        Step::Key(key) => match serde_json::from_str::<Map<String, Value>>(key) {
            Ok(key) => key.iter().all(|(k, v)| item.get(k) == Some(v)),
            Err(_) => false,
        },
        Step::Value(value) => serde_json::from_str::<Value>(value).is_ok_and(|v| v == *item),
        Step::Field(_) => false,
    }
}

/// The metadata fields no manager owns: the API server sets them.
const SERVER_SET: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generateName",
];

/// The part of an object whose fields can be owned: all but `apiVersion`,
/// `kind` and what the API server sets in `metadata`; with `status` only
/// for the status subresource, and without it for the main resource of a
/// kind that has one.
pub(crate) fn ownable(object: &Value, status: bool, status_subresource: bool) -> Value {
    let mut out = Map::new();
    let Some(map) = object.as_object() else { return Value::Object(out) };
    for (k, v) in map {
        let keep = match k.as_str() {
            "apiVersion" | "kind" => false,
            "status" => status || !status_subresource,
            _ => !status,
        };
        if !keep {
            continue;
        }
        if k == "metadata" {
            let mut meta = v.as_object().cloned().unwrap_or_default();
            meta.retain(|f, _| !SERVER_SET.contains(&f.as_str()));
            if !meta.is_empty() {
                out.insert(k.clone(), Value::Object(meta));
            }
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// Every field path set in `value`: leaves, and the items of keyed lists.
pub(crate) fn collect(value: &Value, schema: Schema<'_>) -> FieldSet {
    let mut out = FieldSet::new();
    collect_into(value, &mut Vec::new(), schema, &mut out);
    out
}

fn collect_into(value: &Value, path: &mut Path, schema: Schema<'_>, out: &mut FieldSet) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                path.push(Step::Field(k.clone()));
                collect_into(v, path, schema, out);
                path.pop();
            }
        }
        Value::Array(items) if !path.is_empty() => {
            if let Some(key) = schema.merge_key(path) {
                let steps: Option<Vec<Step>> = items.iter().map(|i| key_step(i, key)).collect();
                if let Some(steps) = steps {
                    for (item, step) in items.iter().zip(steps) {
                        path.push(step);
                        out.insert(path.clone());
                        if let Value::Object(fields) = item {
                            for (k, v) in fields {
                                path.push(Step::Field(k.clone()));
                                collect_into(v, path, schema, out);
                                path.pop();
                            }
                        }
                        path.pop();
                    }
                    return;
                }
            } else if schema.is_set(path) {
                for item in items {
                    path.push(Step::Value(item.to_string()));
                    out.insert(path.clone());
                    path.pop();
                }
                return;
            }
            out.insert(path.clone());
        }
        _ => {
            if !path.is_empty() {
                out.insert(path.clone());
            }
        }
    }
}

/// The value at `path`, if it is set.
pub(crate) fn get<'v>(value: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Field(f) => v.as_object()?.get(f),
        _ => v.as_array()?.iter().find(|item| step_matches(step, item)),
    })
}

fn get_mut<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Field(f) => v.as_object_mut()?.get_mut(f),
        _ => v.as_array_mut()?.iter_mut().find(|item| step_matches(step, item)),
    })
}

/// Removes the field at `path`, if it is set.
pub(crate) fn remove(value: &mut Value, path: &[Step]) {
    let Some((last, parent)) = path.split_last() else { return };
    let Some(parent) = get_mut(value, parent) else { return };
    match last {
        Step::Field(f) => {
            if let Some(map) = parent.as_object_mut() {
                map.remove(f);
            }
        }
        step => {
            if let Some(items) = parent.as_array_mut() {
                items.retain(|item| !step_matches(step, item));
            }
        }
    }
}

/// Whether two objects hold the same value at `path`: for a keyed list
/// item, whether both have it (its fields are paths of their own).
pub(crate) fn same_at(a: &Value, b: &Value, path: &[Step]) -> bool {
    match path.last() {
        Some(Step::Key(_)) | Some(Step::Value(_)) => get(a, path).is_some() == get(b, path).is_some(),
        _ => get(a, path) == get(b, path),
    }
}

/// A path as the API server names it in a conflict:
/// `.spec.containers[name="web"].image`.
pub(crate) fn render(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            Step::Key(k) => match serde_json::from_str::<Map<String, Value>>(k) {
                Ok(map) => {
                    let inner: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    s += &format!("[{}]", inner.join(","));
                }
                Err(_) => s += &format!("[{k}]"),
            },
            Step::Value(v) => s += &format!("[={v}]"),
        }
    }
    s
}

/// A field set in the FieldsV1 encoding.
pub(crate) fn encode(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for step in path {
            let text = match step {
                Step::Field(f) => format!("f:{f}"),
                Step::Key(k) => format!("k:{k}"),
                Step::Value(v) => format!("v:{v}"),
            };
            node = node
                .entry(text)
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("every node of the encoding is a map");
        }
        node.insert(".".into(), Value::Object(Map::new()));
    }
    fn tidy(node: &mut Map<String, Value>) {
        if node.len() == 1 && node.contains_key(".") {
            node.clear();
            return;
        }
        for (k, child) in node.iter_mut() {
            if k != "."
                && let Value::Object(child) = child
            {
                tidy(child);
            }
        }
    }
    tidy(&mut root);
    Value::Object(root)
}

/// A FieldsV1 encoding as a field set (what it cannot read, it skips).
pub(crate) fn decode(fields: &Value) -> FieldSet {
    fn walk(node: &Value, path: &mut Path, out: &mut FieldSet) {
        let Some(map) = node.as_object() else { return };
        if map.is_empty() && !path.is_empty() {
            out.insert(path.clone());
            return;
        }
        for (k, child) in map {
            if k == "." {
                out.insert(path.clone());
                continue;
            }
            let step = if let Some(f) = k.strip_prefix("f:") {
                Step::Field(f.to_string())
            } else if let Some(key) = k.strip_prefix("k:") {
                Step::Key(key.to_string())
            } else if let Some(v) = k.strip_prefix("v:") {
                Step::Value(v.to_string())
            } else {
                continue;
            };
            path.push(step);
            walk(child, path, out);
            path.pop();
        }
    }
    let mut out = FieldSet::new();
    walk(fields, &mut Vec::new(), &mut out);
    out
}

/// One manager's entry, decoded.
#[derive(Clone, Debug)]
pub(crate) struct Owner {
    pub(crate) manager: String,
    pub(crate) operation: String,
    pub(crate) subresource: String,
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
    pub(crate) fields: FieldSet,
    changed: bool,
}

impl Owner {
    fn is(&self, manager: &str, operation: &str, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }
}

/// Everyone's fields: the decoded `metadata.managedFields`, in its order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ownership {
    pub(crate) owners: Vec<Owner>,
}

impl Ownership {
    /// Reads `metadata.managedFields`.
    pub(crate) fn read(entries: &[ManagedFieldsEntry]) -> Ownership {
        let owners = entries
            .iter()
            .map(|e| Owner {
                manager: e.manager.clone(),
                operation: e.operation.clone(),
                subresource: e.subresource.clone(),
                api_version: e.api_version.clone(),
                time: e.time.clone(),
                fields: decode(&e.fields_v1),
                changed: false,
            })
            .collect();
        Ownership { owners }
    }

    /// Writes `metadata.managedFields`: empty sets dropped, changed sets
    /// stamped with `time`.
    pub(crate) fn write(self, time: &str) -> Vec<ManagedFieldsEntry> {
        self.owners
            .into_iter()
            .filter(|o| !o.fields.is_empty())
            .map(|o| ManagedFieldsEntry {
                manager: o.manager,
                operation: o.operation,
                api_version: o.api_version,
                time: if o.changed { Some(time.to_string()) } else { o.time },
                fields_type: "FieldsV1".into(),
                fields_v1: encode(&o.fields),
                subresource: o.subresource,
            })
            .collect()
    }

    /// The entry of `manager` for `operation` on `subresource`, made if absent.
    pub(crate) fn entry(&mut self, manager: &str, operation: &str, subresource: &str, api_version: &str) -> &mut Owner {
        let i = match self.owners.iter().position(|o| o.is(manager, operation, subresource)) {
            Some(i) => i,
            None => {
                self.owners.push(Owner {
                    manager: manager.into(),
                    operation: operation.into(),
                    subresource: subresource.into(),
                    api_version: api_version.into(),
                    time: None,
                    fields: FieldSet::new(),
                    changed: true,
                });
                self.owners.len() - 1
            }
        };
        &mut self.owners[i]
    }

    /// Sets an owner's fields, noting whether they changed.
    pub(crate) fn set(owner: &mut Owner, fields: FieldSet, api_version: &str) {
        if owner.fields != fields {
            owner.fields = fields;
            owner.changed = true;
            owner.api_version = api_version.into();
        }
    }

    /// Takes `paths` away from every owner but the one named.
    pub(crate) fn take_from_others(&mut self, keep: (&str, &str, &str), paths: &FieldSet) {
        for owner in self.owners.iter_mut().filter(|o| !o.is(keep.0, keep.1, keep.2)) {
            let before = owner.fields.len();
            owner.fields.retain(|p| !paths.contains(p));
            owner.changed |= owner.fields.len() != before;
        }
    }

    /// Takes `paths` away from every owner.
    pub(crate) fn take_from_all(&mut self, paths: &FieldSet) {
        for owner in &mut self.owners {
            let before = owner.fields.len();
            owner.fields.retain(|p| !paths.contains(p));
            owner.changed |= owner.fields.len() != before;
        }
    }

    /// Whether anyone but the named owner owns `path` or a field under it.
    pub(crate) fn others_own(&self, keep: (&str, &str, &str), path: &Path) -> bool {
        self.owners
            .iter()
            .filter(|o| !o.is(keep.0, keep.1, keep.2))
            .any(|o| o.fields.range(path.clone()..).next().is_some_and(|p| p.starts_with(path)))
    }
}

/// Merges an apply configuration into an object: maps field by field,
/// keyed lists item by item, sets by union, anything else replaced.
pub(crate) fn merge_applied(doc: &mut Value, applied: &Value, path: &mut Path, schema: Schema<'_>) {
    match applied {
        Value::Object(fields) => {
            if !doc.is_object() {
                *doc = Value::Object(Map::new());
            }
            let map = doc.as_object_mut().expect("made a map above");
            for (k, v) in fields {
                path.push(Step::Field(k.clone()));
                merge_applied(map.entry(k.clone()).or_insert(Value::Null), v, path, schema);
                path.pop();
            }
        }
        Value::Array(items) if !path.is_empty() => {
            if let Some(key) = schema.merge_key(path)
                && items.iter().all(|i| key_step(i, key).is_some())
            {
                if !doc.is_array() {
                    *doc = Value::Array(Vec::new());
                }
                for item in items {
                    let step = key_step(item, key).expect("checked above");
                    let list = doc.as_array_mut().expect("made a list above");
                    match list.iter_mut().find(|i| step_matches(&step, i)) {
                        Some(existing) => {
                            path.push(step);
                            merge_applied(existing, item, path, schema);
                            path.pop();
                        }
                        None => list.push(item.clone()),
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
                *doc = applied.clone();
            }
        }
        _ => *doc = applied.clone(),
    }
}

/// Drops `null`s from an apply configuration: a field set to null is a
/// field the configuration does not state.
pub(crate) fn without_nulls(value: &Value) -> Value {
    retain_fields(value, &|_, v| !v.is_null())
}

/// A copy of `value` keeping, at every depth, only the object fields
/// `keep` accepts (array items are all kept, their fields filtered alike).
pub(crate) fn retain_fields(value: &Value, keep: &dyn Fn(&str, &Value) -> bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(k, v)| keep(k, v)).map(|(k, v)| (k.clone(), retain_fields(v, keep))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| retain_fields(v, keep)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD: Schema<'static> = Schema { kind: "Pod", custom: false };

    #[test]
    fn fields_v1_round_trips_keyed_items_and_sets() {
        let object = json!({
            "metadata": { "labels": { "app": "web" }, "finalizers": ["a"] },
            "spec": { "containers": [ { "name": "c", "image": "x" } ] }
        });
        let set = collect(&object, POD);
        let encoded = encode(&set);
        assert_eq!(
            encoded["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"],
            json!({ ".": {}, "f:image": {}, "f:name": {} })
        );
        assert_eq!(encoded["f:metadata"]["f:finalizers"]["v:\"a\""], json!({}));
        assert_eq!(decode(&encoded), set);
    }

    #[test]
    fn a_path_reads_as_the_api_server_names_it() {
        let set = collect(&json!({ "spec": { "containers": [ { "name": "c", "image": "x" } ] } }), POD);
        let names: Vec<String> = set.iter().map(|p| render(p)).collect();
        assert!(names.contains(&".spec.containers[name=\"c\"].image".to_string()), "{names:?}");
    }
}
