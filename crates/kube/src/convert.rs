//! k8s-openapi (and custom resource) objects to the ABI's
//! [`recon_abi::Object`] and back, through their JSON.
//!
//! Both are the Kubernetes wire shape, so the conversion is serde's. The
//! one difference: the ABI types only the metadata the simulator gives a
//! meaning to. The metadata fields it does not have (`creationTimestamp`,
//! `selfLink`) are dropped from what a controller sends, as an API server
//! ignores them on write; objects coming back never have them.

use recon_abi::{Object, SharedValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The metadata fields the ABI carries (`recon_abi::ObjectMeta`).
const ABI_METADATA: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Drops the metadata fields the ABI does not carry from an object's JSON.
pub(crate) fn strip_metadata(value: &mut Value) {
    if let Some(Value::Object(metadata)) = value.get_mut("metadata") {
        metadata.retain(|key, _| ABI_METADATA.contains(&key.as_str()));
    }
}

/// A typed object as the ABI's object.
pub(crate) fn to_object<K: Serialize>(object: &K) -> Result<Object, serde_json::Error> {
    let mut value = serde_json::to_value(object)?;
    strip_metadata(&mut value);
    serde_json::from_value(value)
}

/// A body (of a patch) as JSON, with the metadata the ABI does not carry dropped.
pub(crate) fn to_body<P: Serialize>(body: &P) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(body)?;
    strip_metadata(&mut value);
    Ok(value)
}

/// The ABI's object as a typed object.
///
/// It is read from the object where it is, as the JSON it serializes to:
/// `spec`, `status` and the other fields are read in place, never copied
/// into a JSON value first, and a controller's own type of a pod (the
/// ReplicaSet controller's `CachedPod`) skips most of the object without
/// building any of it. Every watch event of every kube-rs controller comes
/// through here: writing the whole object out and reading it back cost a
/// twentieth of a large run natively, and 6 % of the ReplicaSet plugin's
/// work under Wasm (BENCHMARKS.md, *The price of the sandbox*).
///
/// The head (`apiVersion`, `kind`, `metadata`) is typed in the ABI.
/// Natively it is presented from its typed fields as their JSON
/// ([`in_place::Part`]). Compiled to Wasm (the playground's worker, the
/// plugins) it is written out as a small JSON value, so that every field
/// of every typed kind is read through one decoder, a borrowed JSON
/// value's: a second decoder for the head would instantiate every kind's
/// `Deserialize` again (1.8 MB more for each kube-rs plugin). Both ways
/// give the same object, or the same error.
pub(crate) fn from_object<K: DeserializeOwned>(object: &Object) -> Result<K, serde_json::Error> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use in_place::Part;
        let metadata = Part::metadata(&object.metadata)?;
        K::deserialize(in_place::ObjectFields::of(
            object,
            [Part::Str(&object.api_version), Part::Str(&object.kind), metadata],
        ))
    }
    #[cfg(target_arch = "wasm32")]
    {
        let head = [
            Value::from(object.api_version.as_str()),
            Value::from(object.kind.as_str()),
            serde_json::to_value(&object.metadata)?,
        ];
        let [api_version, kind, metadata] = &head;
        K::deserialize(in_place::ObjectFields::of(object, [api_version, kind, metadata]))
    }
}

/// Reading an object in place (see [`from_object`]).
mod in_place {
    #[cfg(not(target_arch = "wasm32"))]
    use std::collections::BTreeMap;

    use recon_abi::Object;
    #[cfg(not(target_arch = "wasm32"))]
    use recon_abi::{ObjectMeta, OwnerReference};
    #[cfg(not(target_arch = "wasm32"))]
    use serde::de::value::{MapDeserializer, SeqDeserializer};
    #[cfg(not(target_arch = "wasm32"))]
    use serde::de::{IntoDeserializer, Visitor};
    use serde_json::Value;

    /// One top-level field of an object: JSON borrowed from the object, or
    /// a field of its head (`apiVersion`, `kind`, `metadata`) as `H`
    /// presents it.
    enum FieldValue<'a, H> {
        Json(&'a Value),
        Head(H),
    }

    /// An object's top-level fields in the order and with the omissions of
    /// its serialization (`apiVersion`, `kind`, `metadata`, `spec` and
    /// `status` unless null, then the other fields by name), read by a typed
    /// object's `Deserialize` as a map.
    pub(super) struct ObjectFields<'a, H> {
        fields: std::vec::IntoIter<(&'a str, FieldValue<'a, H>)>,
        value: Option<FieldValue<'a, H>>,
    }

    impl<'a, H> ObjectFields<'a, H> {
        /// `object`'s fields, with `head` its `apiVersion`, `kind` and
        /// `metadata`.
        pub(super) fn of(object: &'a Object, head: [H; 3]) -> ObjectFields<'a, H> {
            let mut fields = Vec::with_capacity(5 + object.other.len());
            fields.extend(["apiVersion", "kind", "metadata"].into_iter().zip(head.map(FieldValue::Head)));
            for (name, value) in [("spec", &object.spec), ("status", &object.status)] {
                if !value.is_null() {
                    fields.push((name, FieldValue::Json(value)));
                }
            }
            fields.extend(object.other.iter().map(|(name, value)| (name.as_str(), FieldValue::Json(value))));
            ObjectFields { fields: fields.into_iter(), value: None }
        }
    }

    impl<'a, H: serde::Deserializer<'a, Error = serde_json::Error>> serde::de::MapAccess<'a> for ObjectFields<'a, H> {
        type Error = serde_json::Error;

        fn next_key_seed<S: serde::de::DeserializeSeed<'a>>(
            &mut self,
            seed: S,
        ) -> Result<Option<S::Value>, Self::Error> {
            let Some((name, value)) = self.fields.next() else {
                return Ok(None);
            };
            self.value = Some(value);
            seed.deserialize(serde::de::value::BorrowedStrDeserializer::new(name)).map(Some)
        }

        fn next_value_seed<S: serde::de::DeserializeSeed<'a>>(&mut self, seed: S) -> Result<S::Value, Self::Error> {
            match self.value.take() {
                Some(FieldValue::Json(value)) => seed.deserialize(value),
                Some(FieldValue::Head(head)) => seed.deserialize(head),
                None => Err(serde::de::Error::custom("a value was asked for before its key")),
            }
        }

        fn size_hint(&self) -> Option<usize> {
            Some(self.fields.len())
        }
    }

    impl<'de, H: serde::Deserializer<'de, Error = serde_json::Error>> serde::Deserializer<'de> for ObjectFields<'de, H> {
        type Error = serde_json::Error;

        fn deserialize_any<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            visitor.visit_map(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map struct enum identifier ignored_any
        }
    }

    /// A piece of an object's metadata as the JSON it serializes to,
    /// borrowed from the typed fields where they are: the same fields, in
    /// the same order and with the same omissions as `ObjectMeta`'s and
    /// `OwnerReference`'s `Serialize`. Writing the metadata out as a JSON
    /// value to read it back was two fifths of decoding a pod (natively;
    /// see [`super::from_object`] for Wasm).
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) enum Part<'a> {
        Str(&'a str),
        I64(i64),
        Bool(bool),
        Strs(&'a [String]),
        StrMap(&'a BTreeMap<String, String>),
        /// A struct: its fields as a map, by their JSON names.
        Fields(Vec<(&'static str, Part<'a>)>),
        Seq(Vec<Part<'a>>),
        /// Written out: the rarely present `managedFields`.
        Json(Value),
    }

    #[cfg(not(target_arch = "wasm32"))]
    impl<'a> Part<'a> {
        pub(super) fn metadata(meta: &'a ObjectMeta) -> Result<Part<'a>, serde_json::Error> {
            let mut fields = Vec::with_capacity(8);
            let strings = [
                ("name", &meta.name),
                ("generateName", &meta.generate_name),
                ("namespace", &meta.namespace),
                ("uid", &meta.uid),
                ("resourceVersion", &meta.resource_version),
            ];
            fields.extend(strings.into_iter().filter(|(_, s)| !s.is_empty()).map(|(n, s)| (n, Part::Str(s))));
            if meta.generation != 0 {
                fields.push(("generation", Part::I64(meta.generation)));
            }
            if let Some(timestamp) = &meta.deletion_timestamp {
                fields.push(("deletionTimestamp", Part::Str(timestamp)));
            }
            if let Some(seconds) = meta.deletion_grace_period_seconds {
                fields.push(("deletionGracePeriodSeconds", Part::I64(seconds)));
            }
            for (name, map) in [("labels", &meta.labels), ("annotations", &meta.annotations)] {
                if !map.is_empty() {
                    fields.push((name, Part::StrMap(map)));
                }
            }
            if !meta.owner_references.is_empty() {
                let references = meta.owner_references.iter().map(Part::owner_reference).collect();
                fields.push(("ownerReferences", Part::Seq(references)));
            }
            if !meta.finalizers.is_empty() {
                fields.push(("finalizers", Part::Strs(&meta.finalizers)));
            }
            if !meta.managed_fields.is_empty() {
                fields.push(("managedFields", Part::Json(serde_json::to_value(&meta.managed_fields)?)));
            }
            Ok(Part::Fields(fields))
        }

        fn owner_reference(reference: &'a OwnerReference) -> Part<'a> {
            let mut fields = vec![
                ("apiVersion", Part::Str(&reference.api_version)),
                ("kind", Part::Str(&reference.kind)),
                ("name", Part::Str(&reference.name)),
                ("uid", Part::Str(&reference.uid)),
            ];
            if reference.controller {
                fields.push(("controller", Part::Bool(true)));
            }
            if reference.block_owner_deletion {
                fields.push(("blockOwnerDeletion", Part::Bool(true)));
            }
            Part::Fields(fields)
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    impl<'a> IntoDeserializer<'a, serde_json::Error> for Part<'a> {
        type Deserializer = Self;

        fn into_deserializer(self) -> Self {
            self
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    impl<'de> serde::Deserializer<'de> for Part<'de> {
        type Error = serde_json::Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self {
                Part::Str(s) => visitor.visit_borrowed_str(s),
                Part::I64(n) => visitor.visit_i64(n),
                Part::Bool(b) => visitor.visit_bool(b),
                Part::Strs(strings) => {
                    let mut seq = SeqDeserializer::new(strings.iter().map(|s| Part::Str(s)));
                    let value = visitor.visit_seq(&mut seq)?;
                    seq.end().map(|()| value)
                }
                Part::StrMap(map) => {
                    let mut map = MapDeserializer::new(map.iter().map(|(k, v)| (Part::Str(k), Part::Str(v))));
                    let value = visitor.visit_map(&mut map)?;
                    map.end().map(|()| value)
                }
                Part::Fields(fields) => {
                    let mut map = MapDeserializer::new(fields.into_iter().map(|(k, v)| (Part::Str(k), v)));
                    let value = visitor.visit_map(&mut map)?;
                    map.end().map(|()| value)
                }
                Part::Seq(items) => {
                    let mut seq = SeqDeserializer::new(items.into_iter());
                    let value = visitor.visit_seq(&mut seq)?;
                    seq.end().map(|()| value)
                }
                Part::Json(value) => value.deserialize_any(visitor),
            }
        }

        /// Present means `Some`, as in JSON (absent fields are left out).
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self {
                Part::Json(value) => value.deserialize_option(visitor),
                part => visitor.visit_some(part),
            }
        }

        /// As serde_json: a newtype (k8s-openapi's `Time`) is its content.
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            match self {
                Part::Json(value) => value.deserialize_newtype_struct(name, visitor),
                part => visitor.visit_newtype_struct(part),
            }
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf unit unit_struct seq tuple
            tuple_struct map struct enum identifier ignored_any
        }
    }
}

/// Whether `object` reads as its Kubernetes type, for the built-in kinds
/// Recon's controllers write: Pod, ConfigMap, Secret, Deployment,
/// ReplicaSet, StatefulSet and Lease. `Err` says why (serde's words, e.g.
/// `invalid type: string "ten", expected i32`); other kinds (custom
/// resources among them) are `Ok`.
///
/// An API server decodes a request's body into its kind's type and
/// answers 400 Bad Request when that fails (a field of the wrong type;
/// unknown fields are only warned about by default), so such an object
/// is never stored. A scenario that holds one is refused where it is
/// written (`recon-prepare` calls this when it reads a scenario) rather
/// than crashing every controller that is sent it. Each kind checked
/// brings its type's decoder into the playground's worker (BENCHMARKS.md,
/// *Objects that do not decode*, says what they cost).
pub fn check_object(object: &Object) -> Result<(), String> {
    check_change(object, None)
}

/// [`check_object`] for an object judged against `before`, an object of
/// the same kind and version that was checked already (its previous
/// version, or the last object created of its kind): only the parts that
/// differ from it are decoded (a status write decodes the status alone, a
/// pod created from the same template as the last one decodes nothing), so
/// the simulated API server can check every write it stores without
/// decoding every pod whole at each of its writes. The typed metadata reads as
/// Kubernetes' `ObjectMeta` whatever it holds, but for the times in
/// `managedFields`: a write that changes those is decoded whole.
pub fn check_change(object: &Object, before: Option<&Object>) -> Result<(), String> {
    use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
    use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
    use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetStatus};
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodSpec, PodStatus, Secret};
    use serde::de::IgnoredAny;
    fn decodes<K: DeserializeOwned>(object: &Object) -> Result<(), String> {
        from_object::<K>(object).map(drop).map_err(|e| e.to_string())
    }
    /// A kind whose fields are all under `spec` and `status`.
    fn parts<K: DeserializeOwned, Spec: DeserializeOwned, Status: DeserializeOwned>(
        object: &Object,
        before: Option<&Object>,
    ) -> Result<(), String> {
        let Some(before) = before.filter(|b| b.metadata.managed_fields == object.metadata.managed_fields) else {
            return decodes::<K>(object);
        };
        fn part<T: DeserializeOwned>(now: &SharedValue, before: &SharedValue) -> Result<(), String> {
            if now.is_null() || now == before {
                return Ok(());
            }
            // Through a borrowed value's decoder, as `from_object` reads
            // every field: one instantiation of each kind's type.
            T::deserialize(&**now).map(drop).map_err(|e| e.to_string())
        }
        part::<Spec>(&object.spec, &before.spec)?;
        part::<Status>(&object.status, &before.status)
    }
    /// A kind whose fields are top-level (`data`, `type`, …).
    fn whole<K: DeserializeOwned>(object: &Object, before: Option<&Object>) -> Result<(), String> {
        let unchanged =
            |b: &Object| b.other == object.other && b.metadata.managed_fields == object.metadata.managed_fields;
        if before.is_some_and(unchanged) { Ok(()) } else { decodes::<K>(object) }
    }
    match (object.api_version.as_str(), object.kind.as_str()) {
        ("v1", "Pod") => parts::<Pod, PodSpec, PodStatus>(object, before),
        ("v1", "ConfigMap") => whole::<ConfigMap>(object, before),
        ("v1", "Secret") => whole::<Secret>(object, before),
        ("apps/v1", "ReplicaSet") => parts::<ReplicaSet, ReplicaSetSpec, ReplicaSetStatus>(object, before),
        ("apps/v1", "Deployment") => parts::<Deployment, DeploymentSpec, DeploymentStatus>(object, before),
        ("apps/v1", "StatefulSet") => parts::<StatefulSet, StatefulSetSpec, StatefulSetStatus>(object, before),
        // A Lease has no status; one in the object is not part of the type.
        ("coordination.k8s.io/v1", "Lease") => parts::<Lease, LeaseSpec, IgnoredAny>(object, before),
        _ => Ok(()),
    }
}

/// Decodes what a watch delivered; an object that does not decode as the
/// watch's type stops the instance with a message that names both.
pub(crate) fn decode<K: DeserializeOwned>(object: &Object) -> K {
    from_object(object).unwrap_or_else(|e| {
        panic!("the watch delivered {} which does not decode as {}: {e}", object.key(), std::any::type_name::<K>())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
    use std::collections::BTreeMap;

    /// Kubernetes' API concepts ("Field validation"): a body that does not
    /// decode into the kind's type (a field of the wrong type) is refused
    /// with 400 Bad Request whatever the field validation level; an
    /// unknown field is only warned about by default. The check answers
    /// the same: a wrong type is named, an unknown field passes.
    #[test]
    fn an_object_of_a_checked_kind_must_read_as_its_type() {
        let object = |api_version: &str, kind: &str, spec: serde_json::Value| recon_abi::Object {
            api_version: api_version.into(),
            kind: kind.into(),
            metadata: recon_abi::ObjectMeta { name: "web".into(), namespace: "default".into(), ..Default::default() },
            spec: spec.into(),
            ..Default::default()
        };
        let set = |replicas: serde_json::Value| {
            object("apps/v1", "ReplicaSet", serde_json::json!({ "replicas": replicas, "selector": {} }))
        };
        assert_eq!(check_object(&set(serde_json::json!(3))), Ok(()));
        let refused = check_object(&set(serde_json::json!("ten"))).expect_err("a string is not an i32");
        assert!(refused.contains(r#"invalid type: string "ten", expected i32"#), "{refused}");
        let unknown = object("v1", "Pod", serde_json::json!({ "containers": [], "notAField": 1 }));
        assert_eq!(check_object(&unknown), Ok(()), "an unknown field is not an error");
        let bad_pod = object("v1", "Pod", serde_json::json!({ "containers": "web" }));
        assert!(check_object(&bad_pod).is_err());
        // So are the other kinds Recon's controllers write.
        let bad_set = object("apps/v1", "StatefulSet", serde_json::json!({ "replicas": "ten", "selector": {} }));
        assert!(check_object(&bad_set).unwrap_err().contains(r#"invalid type: string "ten", expected i32"#));
        // A Lease has no status: one there is an unknown field, not an error.
        let mut lease = object("coordination.k8s.io/v1", "Lease", serde_json::json!({ "holderIdentity": "a" }));
        lease.status = serde_json::json!({ "anything": 1 }).into();
        assert_eq!(check_object(&lease), Ok(()));
        lease.spec = serde_json::json!({ "leaseDurationSeconds": "15" }).into();
        assert!(check_object(&lease).is_err());
        let unchecked = object("example.com/v1", "Widget", serde_json::json!({ "replicas": "ten" }));
        assert_eq!(check_object(&unchecked), Ok(()), "only the kinds listed are checked");
    }

    /// A new version is judged by what it changed: a part it shares with
    /// the version before was judged when that was written.
    #[test]
    fn a_change_is_checked_where_it_changed() {
        let pod = |spec: serde_json::Value, status: serde_json::Value| recon_abi::Object {
            api_version: "v1".into(),
            kind: "Pod".into(),
            spec: spec.into(),
            status: status.into(),
            ..Default::default()
        };
        let before = pod(serde_json::json!({ "containers": [] }), serde_json::json!({ "phase": "Pending" }));
        let mut running = before.clone();
        running.status["phase"] = serde_json::json!("Running");
        assert_eq!(check_change(&running, Some(&before)), Ok(()));
        running.status["phase"] = serde_json::json!(1);
        let why = check_change(&running, Some(&before)).expect_err("the status changed to a wrong type");
        assert!(why.contains("invalid type: integer `1`"), "{why}");

        // A spec the version before already had is not decoded again (here
        // one that would not decode, to show it is skipped); a changed one is.
        let odd = pod(serde_json::json!({ "containers": "web" }), serde_json::json!({}));
        let mut restatused = odd.clone();
        restatused.status = serde_json::json!({ "phase": "Running" }).into();
        assert_eq!(check_change(&restatused, Some(&odd)), Ok(()));
        assert!(check_change(&odd, Some(&before)).is_err(), "a changed spec is decoded");
        assert!(check_change(&odd, None).is_err(), "with no version before, the whole object is");

        let config = |data: serde_json::Value| {
            let mut c = recon_abi::Object { api_version: "v1".into(), kind: "ConfigMap".into(), ..Default::default() };
            c.other.insert("data".into(), data);
            c
        };
        let good = config(serde_json::json!({ "k": "v" }));
        assert_eq!(check_change(&good, None), Ok(()));
        assert!(check_change(&config(serde_json::json!({ "k": 1 })), Some(&good)).is_err());

        // The one typed metadata field that can hold what Kubernetes cannot
        // read: a managedFields entry's time.
        let mut stamped = before.clone();
        stamped.metadata.managed_fields =
            vec![recon_abi::ManagedFieldsEntry { time: Some("yesterday".into()), ..Default::default() }];
        let why = check_change(&stamped, Some(&before)).expect_err("not an RFC 3339 time");
        assert!(why.contains("as year"), "{why}");
    }

    #[test]
    fn a_config_map_crosses_to_the_abi_and_back_with_its_data_and_owner() {
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cm".into()),
                namespace: Some("default".into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "nullable.se/v1".into(),
                    kind: "ConfigMapGenerator".into(),
                    name: "gen".into(),
                    uid: "uid-1".into(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("content".to_owned(), "hello".to_owned())])),
            ..ConfigMap::default()
        };
        let object = to_object(&map).unwrap();
        assert_eq!((object.api_version.as_str(), object.kind.as_str()), ("v1", "ConfigMap"));
        assert_eq!(object.other["data"]["content"], "hello");
        assert!(object.metadata.owner_references[0].controller);
        let back: ConfigMap = from_object(&object).unwrap();
        assert_eq!(back, map);
    }

    #[test]
    fn metadata_the_abi_does_not_carry_is_dropped_rather_than_refused() {
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cm".into()),
                creation_timestamp: Some(Time("1970-01-01T00:00:01Z".parse().unwrap())),
                self_link: Some("/api/v1/namespaces/default/configmaps/cm".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let object = to_object(&map).unwrap();
        assert_eq!(object.metadata.name, "cm");
        let body = to_body(&map).unwrap();
        assert_eq!(body["metadata"], serde_json::json!({ "name": "cm" }));
    }

    /// The direct reading must give what the JSON round trip gave, for
    /// a typed kind with spec, status and metadata, for a kind whose
    /// content is in other top-level fields, and for untyped JSON.
    #[test]
    fn an_object_reads_as_its_json_would() {
        use k8s_openapi::api::core::v1::Pod;
        let object: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                         "labels": {"app": "web"}, "finalizers": ["f"],
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                              "uid": "u-0", "controller": true}]},
            "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "web:1"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        let round_trip = |o: &Object| serde_json::to_value(o).unwrap();
        let pod: Pod = from_object(&object).unwrap();
        assert_eq!(pod, serde_json::from_value::<Pod>(round_trip(&object)).unwrap());
        assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("node-1"));
        let value: Value = from_object(&object).unwrap();
        assert_eq!(value, round_trip(&object));
        let map = to_object(&ConfigMap {
            data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
            ..ConfigMap::default()
        })
        .unwrap();
        assert_eq!(from_object::<Value>(&map).unwrap(), round_trip(&map));
        // The wrong kind is refused, as it was through JSON.
        let wrong = from_object::<ConfigMap>(&object).unwrap_err().to_string();
        let through_json = serde_json::from_value::<ConfigMap>(round_trip(&object)).unwrap_err().to_string();
        assert_eq!(wrong, through_json);
    }

    /// kube-derive's `#[derive(Resource)]` with `inherit`: a type of one's
    /// own has the built-in kind's `Resource` (so `Api` lists and watches
    /// it as that kind), and reads only the fields it declares, as serde
    /// reads JSON with more fields than a struct has.
    #[test]
    fn a_type_inheriting_a_kind_reads_only_its_own_fields() {
        use k8s_openapi::api::core::v1::Pod;
        use kube_core::Resource as _;

        // Inside this crate the derive's default path (`::kube::core`) is
        // not there; a controller's crate names `kube` and needs no `crates`.
        #[derive(crate::Resource, Clone, Debug, serde::Deserialize)]
        #[resource(inherit = Pod, crates(kube_core = "::kube_core"))]
        struct Phase {
            metadata: ObjectMeta,
            status: Option<PhaseOnly>,
        }
        #[derive(Clone, Debug, serde::Deserialize)]
        struct PhaseOnly {
            phase: Option<String>,
        }

        assert_eq!(
            (Phase::kind(&()), Phase::api_version(&()), Phase::plural(&())),
            ("Pod".into(), "v1".into(), "pods".into())
        );
        let object: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "web:1"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        }))
        .unwrap();
        let phase: Phase = from_object(&object).unwrap();
        assert_eq!(phase.metadata.name.as_deref(), Some("web-0"));
        assert_eq!(phase.meta().labels, Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])));
        assert_eq!(phase.status.and_then(|s| s.phase).as_deref(), Some("Running"));
    }

    /// Metadata is read from its typed fields rather than from its JSON:
    /// every field the ABI carries, set, must read as its JSON does, into
    /// a typed object and into untyped JSON alike.
    #[test]
    fn every_metadata_field_reads_as_its_json_would() {
        use k8s_openapi::api::core::v1::Pod;
        let object: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web-x1", "generateName": "web-", "namespace": "team", "uid": "u-1",
                "resourceVersion": "42", "generation": 3,
                "deletionTimestamp": recon_abi::format_timestamp(61_000), "deletionGracePeriodSeconds": 30,
                "labels": {"app": "web", "tier": "front"}, "annotations": {"note": "a b"},
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u-0",
                     "controller": true, "blockOwnerDeletion": true},
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "u-2"}
                ],
                "finalizers": ["a/b", "c"],
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                                   "time": recon_abi::format_timestamp(1_000), "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}]
            }
        }))
        .unwrap();
        let json = serde_json::to_value(&object).unwrap();
        let pod: Pod = from_object(&object).unwrap();
        assert_eq!(pod, serde_json::from_value::<Pod>(json.clone()).unwrap());
        assert_eq!(pod.metadata.owner_references.as_ref().map(Vec::len), Some(2));
        assert_eq!(pod.metadata.managed_fields.as_ref().map(Vec::len), Some(1));
        assert!(pod.metadata.deletion_timestamp.is_some());
        assert_eq!(from_object::<Value>(&object).unwrap(), json);
        // And with nothing set but a name.
        let bare: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}
        }))
        .unwrap();
        let json = serde_json::to_value(&bare).unwrap();
        assert_eq!(from_object::<Pod>(&bare).unwrap(), serde_json::from_value::<Pod>(json.clone()).unwrap());
        assert_eq!(from_object::<Value>(&bare).unwrap(), json);
    }

    #[test]
    fn a_deletion_timestamp_written_by_the_simulator_decodes() {
        let mut object = to_object(&ConfigMap::default()).unwrap();
        object.metadata.deletion_timestamp = Some(recon_abi::format_timestamp(4_250));
        let map: ConfigMap = from_object(&object).unwrap();
        assert!(map.metadata.deletion_timestamp.is_some());
    }
}
