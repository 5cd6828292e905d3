//! The kinds a scenario's API serves: the built-in ones, and the custom
//! resources its CustomResourceDefinitions declare.
//!
//! A kind is served like any other once it is known: namespaced or
//! cluster-scoped, with or without a status subresource. An object of a
//! kind nobody declared is a scenario error, as a real API server answers
//! 404 for a resource it does not serve.

use std::borrow::Cow;
use std::collections::BTreeMap;

use recon_abi::Object;
use serde_json::Value;

/// One kind the API serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kind {
    /// `Pod`, `Widget`.
    pub kind: String,
    /// The API group, empty for the core group.
    pub group: String,
    /// The version a client reads and writes it at: a built-in kind's
    /// preferred version, a custom resource's storage version.
    pub version: String,
    /// The resource, the lowercase plural in its request paths (`pods`,
    /// `endpoints`, `ingresses`; a custom resource's `spec.names.plural`).
    pub resource: String,
    /// Whether its objects live outside namespaces.
    pub cluster_scoped: bool,
    /// Whether it has a status subresource: then an update leaves status
    /// alone, `updateStatus` changes only status, and `generation` counts
    /// changes to everything but metadata and status.
    pub status_subresource: bool,
    /// Whether a scenario declared it (a custom resource).
    pub custom: bool,
}

impl Kind {
    /// `group/version`, or the version alone for the core group: the
    /// `apiVersion` its objects carry.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The resource qualified by its group, as Kubernetes writes a
    /// `GroupResource`: `pods`, `deployments.apps`, `databases.example.com`.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() { self.resource.clone() } else { format!("{}.{}", self.resource, self.group) }
    }
}

/// The kinds of one scenario, by kind name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kinds {
    by_name: BTreeMap<String, Kind>,
}

/// One built-in kind: its name, group, version, plural and scope as
/// k8s-openapi's `Resource` gives them (the Kubernetes API reference's
/// preferred version where a group serves several, as `autoscaling/v2`),
/// and whether it has a status subresource.
struct Builtin {
    kind: &'static str,
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    cluster_scoped: bool,
    status_subresource: bool,
}

/// Whether a k8s-openapi scope is the cluster's.
trait Scope {
    const CLUSTER: bool;
}

impl Scope for k8s_openapi::ClusterResourceScope {
    const CLUSTER: bool = true;
}

impl Scope for k8s_openapi::NamespaceResourceScope {
    const CLUSTER: bool = false;
}

/// The row of `T`, with or without a status subresource.
const fn builtin<T: k8s_openapi::Resource<Scope: Scope>>(status_subresource: bool) -> Builtin {
    Builtin {
        kind: T::KIND,
        group: T::GROUP,
        version: T::VERSION,
        resource: T::URL_PATH_SEGMENT,
        cluster_scoped: <T::Scope as Scope>::CLUSTER,
        status_subresource,
    }
}

/// The built-in kinds the simulator serves.
const BUILTIN: &[Builtin] = {
    use k8s_openapi::api::{
        apps::v1 as apps, autoscaling::v2 as autoscaling, batch::v1 as batch, coordination::v1 as coordination,
        core::v1 as core, discovery::v1 as discovery, networking::v1 as networking, policy::v1 as policy,
        rbac::v1 as rbac, scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    &[
        builtin::<core::Pod>(true),
        builtin::<core::Node>(true),
        builtin::<core::Namespace>(true),
        builtin::<core::Service>(true),
        builtin::<core::PersistentVolumeClaim>(true),
        builtin::<core::PersistentVolume>(true),
        builtin::<core::ReplicationController>(true),
        builtin::<core::ResourceQuota>(true),
        builtin::<core::ConfigMap>(false),
        builtin::<core::Secret>(false),
        builtin::<core::ServiceAccount>(false),
        builtin::<core::Endpoints>(false),
        builtin::<core::Event>(false),
        builtin::<core::LimitRange>(false),
        builtin::<apps::Deployment>(true),
        builtin::<apps::ReplicaSet>(true),
        builtin::<apps::StatefulSet>(true),
        builtin::<apps::DaemonSet>(true),
        builtin::<apps::ControllerRevision>(false),
        builtin::<batch::Job>(true),
        builtin::<batch::CronJob>(true),
        builtin::<coordination::Lease>(false),
        builtin::<policy::PodDisruptionBudget>(true),
        builtin::<autoscaling::HorizontalPodAutoscaler>(true),
        builtin::<networking::Ingress>(true),
        builtin::<networking::NetworkPolicy>(false),
        builtin::<discovery::EndpointSlice>(false),
        builtin::<rbac::Role>(false),
        builtin::<rbac::RoleBinding>(false),
        builtin::<rbac::ClusterRole>(false),
        builtin::<rbac::ClusterRoleBinding>(false),
        builtin::<storage::StorageClass>(false),
        builtin::<scheduling::PriorityClass>(false),
        builtin::<apiextensions::CustomResourceDefinition>(true),
    ]
};

/// The top-level fields, besides `apiVersion`, `kind`, `metadata`, `spec`
/// and `status`, of the built-in kinds that keep their content outside a
/// spec (per the Kubernetes API reference of each kind; `Event` lists the
/// fields of both `v1` and `events.k8s.io/v1`). A built-in kind not listed
/// has none.
const TOP_LEVEL_FIELDS: &[(&str, &[&str])] = &[
    ("ConfigMap", &["binaryData", "data", "immutable"]),
    ("Secret", &["data", "immutable", "stringData", "type"]),
    ("ServiceAccount", &["automountServiceAccountToken", "imagePullSecrets", "secrets"]),
    ("Endpoints", &["subsets"]),
    (
        "Event",
        &[
            "action",
            "count",
            "deprecatedCount",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedSource",
            "eventTime",
            "firstTimestamp",
            "involvedObject",
            "lastTimestamp",
            "message",
            "note",
            "reason",
            "regarding",
            "related",
            "reportingComponent",
            "reportingController",
            "reportingInstance",
            "series",
            "source",
            "type",
        ],
    ),
    ("ControllerRevision", &["data", "revision"]),
    ("EndpointSlice", &["addressType", "endpoints", "ports"]),
    ("Role", &["rules"]),
    ("ClusterRole", &["aggregationRule", "rules"]),
    ("RoleBinding", &["roleRef", "subjects"]),
    ("ClusterRoleBinding", &["roleRef", "subjects"]),
    (
        "StorageClass",
        &[
            "allowVolumeExpansion",
            "allowedTopologies",
            "mountOptions",
            "parameters",
            "provisioner",
            "reclaimPolicy",
            "volumeBindingMode",
        ],
    ),
    ("PriorityClass", &["description", "globalDefault", "preemptionPolicy", "value"]),
];

/// The kind of a CustomResourceDefinition manifest.
pub const CRD_KIND: &str = "CustomResourceDefinition";

impl Default for Kinds {
    fn default() -> Self {
        Kinds::builtin()
    }
}

impl Kinds {
    /// The built-in kinds only.
    pub fn builtin() -> Kinds {
        let by_name = BUILTIN
            .iter()
            .map(|b| {
                let k = Kind {
                    kind: b.kind.into(),
                    group: b.group.into(),
                    version: b.version.into(),
                    resource: b.resource.into(),
                    cluster_scoped: b.cluster_scoped,
                    status_subresource: b.status_subresource,
                    custom: false,
                };
                (b.kind.to_owned(), k)
            })
            .collect();
        Kinds { by_name }
    }

    /// The built-in kinds and the custom resources the CRDs among
    /// `objects` declare. A CRD that is not valid is left out: see
    /// [`crd_problems`] for what is wrong with it.
    pub fn declared_by<'a>(objects: impl IntoIterator<Item = &'a Object>) -> Kinds {
        let mut kinds = Kinds::builtin();
        for object in objects {
            if object.kind == CRD_KIND
                && crd_problems(object).is_empty()
                && let Some(kind) = custom_kind(object)
            {
                kinds.by_name.entry(kind.kind.clone()).or_insert(kind);
            }
        }
        kinds
    }

    /// The kind of this name, if the API serves it.
    pub fn get(&self, kind: &str) -> Option<&Kind> {
        self.by_name.get(kind)
    }

    /// Whether objects of `kind` live outside namespaces (an unknown kind is namespaced).
    pub fn is_cluster_scoped(&self, kind: &str) -> bool {
        self.get(kind).is_some_and(|k| k.cluster_scoped)
    }

    /// Whether `kind` has a status subresource.
    pub fn has_status(&self, kind: &str) -> bool {
        self.get(kind).is_some_and(|k| k.status_subresource)
    }

    /// The top-level fields besides apiVersion, kind, metadata, spec and
    /// status that objects of `kind` may have: `None` when any may (a
    /// custom resource's schema is its own, and an unknown kind is
    /// reported as such).
    pub fn top_level_fields(&self, kind: &str) -> Option<&'static [&'static str]> {
        match self.get(kind) {
            Some(k) if !k.custom => {
                Some(TOP_LEVEL_FIELDS.iter().find(|(name, _)| *name == kind).map_or(&[][..], |(_, fields)| fields))
            }
            _ => None,
        }
    }

    /// The kind served as `resource` in `group` (`pods` in the core
    /// group is `Pod`), if any.
    pub fn by_resource(&self, group: &str, resource: &str) -> Option<&Kind> {
        self.by_name.values().find(|k| k.group == group && k.resource == resource)
    }

    /// `kind` as the API serves it, or, for a kind it does not serve (a
    /// request refused for that), as a core `v1` kind whose resource is
    /// its lowercase plural: what a message or a log line names it by.
    pub fn get_or_guess(&self, kind: &str) -> Cow<'_, Kind> {
        match self.get(kind) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(Kind {
                kind: kind.to_owned(),
                group: String::new(),
                version: "v1".into(),
                resource: format!("{}s", kind.to_lowercase()),
                cluster_scoped: false,
                status_subresource: false,
                custom: false,
            }),
        }
    }

    /// An object of `kind` named `name` as the API server's errors name
    /// it: the group-qualified resource, then the name in quotes (`pods
    /// "web-0"`, `deployments.apps "web"`), the words of apimachinery's
    /// NotFound, AlreadyExists and Conflict errors (`pods "web-0" not
    /// found`).
    pub fn api_name(&self, kind: &str, name: &str) -> String {
        format!("{} \"{name}\"", self.get_or_guess(kind).group_resource())
    }

    /// An object of `kind` named `name` as the API server's validation
    /// errors name it: the group-qualified kind, then the name in quotes
    /// (`Pod "web-0"`, `StatefulSet.apps "web"`), the words of
    /// apimachinery's Invalid error (`Pod "web-0" is invalid: …`).
    pub fn api_kind_name(&self, kind: &str, name: &str) -> String {
        match self.get(kind).filter(|k| !k.group.is_empty()) {
            Some(k) => format!("{kind}.{} \"{name}\"", k.group),
            None => format!("{kind} \"{name}\""),
        }
    }

    /// The custom kinds, by name.
    pub fn custom(&self) -> impl Iterator<Item = &Kind> {
        self.by_name.values().filter(|k| k.custom)
    }
}

/// What a valid CRD declares.
fn custom_kind(crd: &Object) -> Option<Kind> {
    let spec = &crd.spec;
    let storage = spec["versions"].as_array()?.iter().find(|v| v["storage"] == Value::Bool(true))?;
    Some(Kind {
        kind: spec["names"]["kind"].as_str()?.to_owned(),
        group: spec["group"].as_str()?.to_owned(),
        version: storage["name"].as_str()?.to_owned(),
        resource: spec["names"]["plural"].as_str()?.to_owned(),
        cluster_scoped: spec["scope"] == "Cluster",
        status_subresource: storage["subresources"].get("status").is_some(),
        custom: true,
    })
}

/// What is wrong with a CustomResourceDefinition manifest, as (path under
/// the object, message) pairs; empty when it is valid. Follows the
/// apiextensions.k8s.io/v1 validation: a group, names with a kind and a
/// plural, a scope of `Namespaced` or `Cluster`, at least one version and
/// exactly one storage version, and the name `<plural>.<group>`.
pub fn crd_problems(crd: &Object) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    let mut problem = |path: &str, message: String| problems.push((path.to_owned(), message));
    if crd.api_version != "apiextensions.k8s.io/v1" {
        problem(
            "apiVersion",
            format!("a CustomResourceDefinition is apiextensions.k8s.io/v1, not {:?}", crd.api_version),
        );
    }
    let spec = &crd.spec;
    let group = spec["group"].as_str().unwrap_or_default();
    if group.is_empty() {
        problem("spec.group", "spec.group is required (e.g. example.com)".into());
    }
    let kind = spec["names"]["kind"].as_str().unwrap_or_default();
    if kind.is_empty() {
        problem("spec.names", "spec.names.kind is required".into());
    } else if BUILTIN.iter().any(|builtin| builtin.kind == kind) {
        problem("spec.names.kind", format!("{kind} is a built-in kind"));
    }
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    if plural.is_empty() {
        problem("spec.names", "spec.names.plural is required".into());
    }
    match spec["scope"].as_str() {
        Some("Namespaced" | "Cluster") => {}
        Some(other) => problem("spec.scope", format!("spec.scope must be Namespaced or Cluster, not {other:?}")),
        None => problem("spec", "spec.scope is required (Namespaced or Cluster)".into()),
    }
    match spec["versions"].as_array() {
        Some(versions) if !versions.is_empty() => {
            let storage = versions.iter().filter(|v| v["storage"] == Value::Bool(true)).count();
            if storage != 1 {
                problem("spec.versions", format!("exactly one version must be the storage version, found {storage}"));
            }
            for (i, v) in versions.iter().enumerate() {
                if v["name"].as_str().is_none_or(str::is_empty) {
                    problem(&format!("spec.versions[{i}]"), "each version needs a name (e.g. v1)".into());
                }
            }
        }
        _ => problem("spec", "spec.versions must list at least one version".into()),
    }
    if !group.is_empty() && !plural.is_empty() && crd.metadata.name != format!("{plural}.{group}") {
        problem(
            "metadata.name",
            format!("a CustomResourceDefinition must be named {plural}.{group}, not {:?}", crd.metadata.name),
        );
    }
    problems
}
