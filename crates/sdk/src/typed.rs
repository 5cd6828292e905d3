//! Typed objects: Pod, Node, ReplicaSet, StatefulSet and Deployment as serde
//! structs, converted from and to [`recon_abi::Object`].
//!
//! The wire keeps `spec` and `status` as untyped JSON so that any kind can
//! cross; a controller that prefers fields to JSON paths converts:
//!
//! ```
//! use recon_sdk::typed::Pod;
//! use recon_sdk::testing::{ObjectExt, pod};
//!
//! let object = pod("default", "web-0", "uid-1", "5").on_node("node-1");
//! let mut typed = Pod::try_from(&object).unwrap();
//! assert_eq!(typed.spec.node_name.as_deref(), Some("node-1"));
//! typed.status.phase = Some("Running".into());
//! let back = typed.to_object();
//! assert_eq!(back.status["phase"], "Running");
//! ```
//!
//! Only the fields the built-in controllers read are typed, in the style of
//! k8s-openapi (every scalar an `Option`, so absent and zero differ). Every
//! struct keeps whatever else it was given in `other`, so a conversion and
//! back loses nothing but `null`-valued fields, and an empty `spec` or
//! `status` is written as absent.

use std::collections::BTreeMap;
use std::fmt::Debug;

use recon_abi::{Object, ObjectKey, ObjectMeta};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why an object could not be converted to a typed one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    /// The object is of another kind: convert it to the type of its kind.
    #[error("{key} is not a {expected}")]
    WrongKind {
        /// The object.
        key: ObjectKey,
        /// The kind the conversion expected.
        expected: &'static str,
    },
    /// A typed field of `spec` or `status` has the wrong JSON type (e.g. a
    /// string `replicas`): fix the object, or read that field as JSON.
    #[error("the {part} of {key} does not have the shape of its kind: {message}")]
    Shape {
        /// The object.
        key: ObjectKey,
        /// `spec` or `status`.
        part: &'static str,
        /// What serde found wrong.
        message: String,
    },
}

/// The typed `spec` of one kind, which also names the kind and its status type.
pub trait Spec: Clone + Debug + Default + PartialEq + Serialize + DeserializeOwned {
    /// The kind, e.g. `Pod`.
    const KIND: &'static str;
    /// The group and version, e.g. `v1` or `apps/v1`.
    const API_VERSION: &'static str;
    /// The typed `status` of the kind.
    type Status: Clone + Debug + Default + PartialEq + Serialize + DeserializeOwned;
}

/// An object of the kind `S` names, with typed `spec` and `status`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Typed<S: Spec> {
    /// The object's metadata, as on the wire.
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: S,
    /// The observed state.
    pub status: S::Status,
}

/// A typed Pod.
pub type Pod = Typed<PodSpec>;
/// A typed Node.
pub type Node = Typed<NodeSpec>;
/// A typed ReplicaSet.
pub type ReplicaSet = Typed<ReplicaSetSpec>;
/// A typed StatefulSet.
pub type StatefulSet = Typed<StatefulSetSpec>;
/// A typed Deployment.
pub type Deployment = Typed<DeploymentSpec>;

impl<S: Spec> Typed<S> {
    /// A new object with this name and spec and an empty status.
    pub fn new(namespace: &str, name: &str, spec: S) -> Typed<S> {
        let metadata = ObjectMeta { name: name.into(), namespace: namespace.into(), ..ObjectMeta::default() };
        Typed { metadata, spec, status: S::Status::default() }
    }

    /// Converts a wire object of kind `S::KIND`.
    pub fn from_object(object: &Object) -> Result<Typed<S>, TypeError> {
        if object.kind != S::KIND {
            return Err(TypeError::WrongKind { key: object.key(), expected: S::KIND });
        }
        Ok(Typed {
            metadata: object.metadata.clone(),
            spec: decode(object, "spec", &object.spec)?,
            status: decode(object, "status", &object.status)?,
        })
    }

    /// The wire object.
    pub fn to_object(&self) -> Object {
        Object {
            api_version: S::API_VERSION.into(),
            kind: S::KIND.into(),
            metadata: self.metadata.clone(),
            spec: encode(&self.spec).into(),
            status: encode(&self.status).into(),
            other: Default::default(),
        }
    }

    /// The object's key.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(S::KIND, &self.metadata.namespace, &self.metadata.name)
    }
}

impl<S: Spec> TryFrom<&Object> for Typed<S> {
    type Error = TypeError;

    fn try_from(object: &Object) -> Result<Self, TypeError> {
        Typed::from_object(object)
    }
}

impl<S: Spec> From<&Typed<S>> for Object {
    fn from(typed: &Typed<S>) -> Object {
        typed.to_object()
    }
}

impl<S: Spec> From<Typed<S>> for Object {
    fn from(typed: Typed<S>) -> Object {
        typed.to_object()
    }
}

fn decode<T: Default + DeserializeOwned>(object: &Object, part: &'static str, value: &Value) -> Result<T, TypeError> {
    if value.is_null() {
        return Ok(T::default());
    }
    T::deserialize(value).map_err(|e| TypeError::Shape { key: object.key(), part, message: e.to_string() })
}

fn encode<T: Serialize>(value: &T) -> Value {
    // These structs have string keys only, so they always serialise.
    let value = serde_json::to_value(value).expect("typed objects encode as JSON");
    match value {
        Value::Object(map) if map.is_empty() => Value::Null,
        other => other,
    }
}

/// A status condition, e.g. `{"type": "Ready", "status": "True"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition's type, e.g. `Ready` or `Available`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Reason, message, transition times.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Sets the condition `type_` to `True` or `False` in a list of conditions,
/// keeping the others; returns whether anything changed.
pub fn set_condition(conditions: &mut Option<Vec<Condition>>, type_: &str, value: bool) -> bool {
    let wanted = if value { "True" } else { "False" };
    let list = conditions.get_or_insert_with(Vec::new);
    match list.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) if existing.status == wanted => false,
        Some(existing) => {
            existing.status = wanted.into();
            true
        }
        None => {
            list.push(Condition { type_: type_.into(), status: wanted.into(), other: Map::new() });
            true
        }
    }
}

/// An integer or a percentage such as `"25%"` (maxSurge, maxUnavailable).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrString {
    /// An absolute number.
    Int(i64),
    /// A percentage (`"25%"`), or a number written as a string.
    String(String),
}

impl IntOrString {
    /// The value against `total`: a number as is, a percentage of `total`
    /// rounded up or down, as Kubernetes' `GetScaledValueFromIntOrPercent`.
    /// `None` for text that is neither.
    pub fn scaled(&self, total: i64, round_up: bool) -> Option<i64> {
        match self {
            IntOrString::Int(n) => Some(*n),
            IntOrString::String(text) => match text.strip_suffix('%') {
                Some(percent) => {
                    let product = percent.trim().parse::<i64>().ok()?.checked_mul(total)?;
                    Some(if round_up { (product + 99).div_euclid(100) } else { product.div_euclid(100) })
                }
                None => text.trim().parse().ok(),
            },
        }
    }
}

/// A label selector; only `matchLabels` is typed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelector {
    /// Labels that must all match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// `matchExpressions` and anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The metadata of a pod template: labels and annotations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TemplateMeta {
    /// Labels the pods get.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations the pods get.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A pod template (`spec.template` of the workload kinds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodTemplateSpec {
    /// The pods' labels and annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TemplateMeta>,
    /// The pods' spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<PodSpec>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `Pod.spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    /// The node the pod is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The pod's hostname (StatefulSet pods: the pod's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The pod's subdomain (StatefulSet pods: the governing service).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    /// Containers and anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `Pod.status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Conditions such as `Ready`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// When the kubelet started the pod (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Spec for PodSpec {
    const KIND: &'static str = "Pod";
    const API_VERSION: &'static str = "v1";
    type Status = PodStatus;
}

/// `Node.spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec {
    /// Cordoned: no new pods are scheduled here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unschedulable: Option<bool>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `Node.status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeStatus {
    /// Resource quantities, e.g. `pods: "110"` (numbers or strings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<BTreeMap<String, Value>>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Spec for NodeSpec {
    const KIND: &'static str = "Node";
    const API_VERSION: &'static str = "v1";
    type Status = NodeStatus;
}

/// `ReplicaSet.spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicaSetSpec {
    /// Desired pods; the API server defaults it to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Which pods belong to the set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// What its pods look like.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<PodTemplateSpec>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `ReplicaSet.status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicaSetStatus {
    /// Active pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Ready pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Pods ready for `minReadySeconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// The generation the status describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Spec for ReplicaSetSpec {
    const KIND: &'static str = "ReplicaSet";
    const API_VERSION: &'static str = "apps/v1";
    type Status = ReplicaSetStatus;
}

/// `StatefulSet.spec.updateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatefulSetUpdateStrategy {
    /// `RollingUpdate` (the default) or `OnDelete`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Parameters of `RollingUpdate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<StatefulSetRollingUpdate>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `StatefulSet.spec.updateStrategy.rollingUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatefulSetRollingUpdate {
    /// Ordinals below it are not updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `StatefulSet.spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatefulSetSpec {
    /// Desired pods; the API server defaults it to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The governing service: the pods' subdomain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Which pods belong to the set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// What its pods look like.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<PodTemplateSpec>,
    /// How template changes roll out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<StatefulSetUpdateStrategy>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `StatefulSet.status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatefulSetStatus {
    /// Pods that exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Running and Ready pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Pods at the current revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_replicas: Option<i32>,
    /// Pods at the update revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i32>,
    /// The revision the set is rolling away from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,
    /// The revision of the current template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_revision: Option<String>,
    /// The generation the status describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Spec for StatefulSetSpec {
    const KIND: &'static str = "StatefulSet";
    const API_VERSION: &'static str = "apps/v1";
    type Status = StatefulSetStatus;
}

/// `Deployment.spec.strategy.rollingUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RollingUpdateDeployment {
    /// Pods allowed above `replicas` during a rollout (default 25%, rounded up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// Pods allowed to be unavailable during a rollout (default 25%, rounded down).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `Deployment.spec.strategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeploymentStrategy {
    /// `RollingUpdate` (the default) or `Recreate`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Parameters of `RollingUpdate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateDeployment>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `Deployment.spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeploymentSpec {
    /// Desired pods; the API server defaults it to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Which pods belong to the deployment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// What its pods look like.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<PodTemplateSpec>,
    /// How template changes roll out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<DeploymentStrategy>,
    /// A paused deployment does not roll out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `Deployment.status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeploymentStatus {
    /// Pods of all its ReplicaSets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Pods of the newest ReplicaSet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i32>,
    /// Ready pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Available pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// Pods still missing for it to be complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_replicas: Option<i32>,
    /// The generation the status describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions such as `Available`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Anything else.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Spec for DeploymentSpec {
    const KIND: &'static str = "Deployment";
    const API_VERSION: &'static str = "apps/v1";
    type Status = DeploymentStatus;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ObjectExt, node, object, pod};
    use serde_json::json;

    #[test]
    fn a_conversion_and_back_keeps_untyped_fields() {
        let original = pod("default", "web-0", "uid-1", "5").on_node("node-1").running_ready().with_spec(json!({
            "nodeName": "node-1",
            "containers": [{"name": "app", "image": "web:1"}],
        }));
        let typed = Pod::try_from(&original).unwrap();
        assert_eq!(typed.spec.node_name.as_deref(), Some("node-1"));
        assert_eq!(typed.status.conditions.as_ref().unwrap()[0].type_, "Ready");
        assert_eq!(typed.to_object(), original);
    }

    #[test]
    fn absent_spec_and_status_read_as_defaults_and_are_written_as_absent() {
        let bare = object("Deployment", "default", "web");
        let typed = Deployment::try_from(&bare).unwrap();
        assert_eq!(typed.spec, DeploymentSpec::default());
        assert_eq!(Object::from(typed), bare);
    }

    #[test]
    fn a_wrong_kind_or_shape_is_an_error_that_names_the_object() {
        let set = object("ReplicaSet", "default", "web").with_spec(json!({"replicas": "three"}));
        assert!(matches!(Pod::try_from(&set), Err(TypeError::WrongKind { expected: "Pod", .. })));
        let error = ReplicaSet::try_from(&set).unwrap_err();
        assert!(error.to_string().starts_with("the spec of ReplicaSet default/web"), "{error}");
    }

    #[test]
    fn node_capacity_keeps_numbers_and_strings() {
        let typed = Node::try_from(&node("node-1", 3)).unwrap();
        assert_eq!(typed.status.capacity.unwrap()["pods"], json!("3"));
    }

    #[test]
    fn percentages_scale_with_the_requested_rounding() {
        let quarter = IntOrString::String("25%".into());
        assert_eq!(quarter.scaled(10, true), Some(3));
        assert_eq!(quarter.scaled(10, false), Some(2));
        assert_eq!(IntOrString::Int(2).scaled(10, true), Some(2));
        assert_eq!(IntOrString::String("4".into()).scaled(10, true), Some(4));
        assert_eq!(IntOrString::String("a%".into()).scaled(10, true), None);
        let parsed: RollingUpdateDeployment =
            serde_json::from_value(json!({"maxSurge": 1, "maxUnavailable": "0%"})).unwrap();
        assert_eq!(parsed.max_surge, Some(IntOrString::Int(1)));
        assert_eq!(parsed.max_unavailable, Some(IntOrString::String("0%".into())));
    }

    #[test]
    fn set_condition_adds_flips_and_reports_no_change() {
        let mut conditions = None;
        assert!(set_condition(&mut conditions, "Available", false));
        assert!(set_condition(&mut conditions, "Available", true));
        assert!(!set_condition(&mut conditions, "Available", true));
        assert_eq!(conditions.unwrap().len(), 1);
    }
}
