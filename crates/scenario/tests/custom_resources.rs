//! CustomResourceDefinitions in a scenario: the kinds they declare are
//! served; an object of a kind nobody declared, and a CRD that is not
//! valid, are errors at their line and column.

use recon_scenario::parse;

const WIDGET_CRD: &str = r#"
  - apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: { name: widgets.example.com }
    spec:
      group: example.com
      names: { kind: Widget, plural: widgets }
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          subresources: { status: {} }
"#;

fn scenario(objects: &str) -> String {
    format!("name: crd\napiServers: [{{name: a}}]\nobjects:{objects}")
}

#[test]
fn a_declared_kind_is_served_with_its_scope_and_subresources() {
    let text =
        scenario(&format!("{WIDGET_CRD}  - {{ apiVersion: example.com/v1, kind: Widget, metadata: {{ name: w }} }}\n"));
    let s = parse("crd.yaml", &text).expect("it parses");
    let kinds = s.kinds();
    let widget = kinds.get("Widget").expect("declared");
    assert!(widget.custom && widget.status_subresource && !widget.cluster_scoped);
    assert_eq!(widget.group, "example.com");
    // Served at its plural and its storage version: /apis/example.com/v1/…/widgets.
    assert_eq!((widget.resource.as_str(), widget.api_version().as_str()), ("widgets", "example.com/v1"));
    assert_eq!(s.objects[1].metadata.namespace, "default", "namespaced: defaulted like a built-in");
}

/// The built-in kinds are served at the group, version, resource and
/// scope the Kubernetes API reference gives each (its HTTP request paths;
/// k8s-openapi's `Resource` says the same): the lowercase plural of the
/// kind, English plurals included.
#[test]
fn a_builtin_kind_is_served_at_its_group_version_and_plural() {
    let kinds = recon_scenario::Kinds::builtin();
    let at = |kind: &str| {
        let k = kinds.get(kind).expect("built in");
        (k.api_version(), k.resource.clone())
    };
    assert_eq!(at("Pod"), ("v1".into(), "pods".into()));
    assert_eq!(at("Endpoints"), ("v1".into(), "endpoints".into()));
    assert_eq!(at("Ingress"), ("networking.k8s.io/v1".into(), "ingresses".into()));
    assert_eq!(at("NetworkPolicy"), ("networking.k8s.io/v1".into(), "networkpolicies".into()));
    assert_eq!(at("HorizontalPodAutoscaler"), ("autoscaling/v2".into(), "horizontalpodautoscalers".into()));
    assert_eq!(at("ClusterRole"), ("rbac.authorization.k8s.io/v1".into(), "clusterroles".into()));
    let cluster_scoped: Vec<&str> = ["Pod", "Node", "Namespace", "PersistentVolume", "ConfigMap", "ClusterRole"]
        .into_iter()
        .chain(["ClusterRoleBinding", "StorageClass", "PriorityClass", "CustomResourceDefinition", "Lease"])
        .filter(|kind| kinds.get(kind).unwrap().cluster_scoped)
        .collect();
    let expected =
        ["Node", "Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "StorageClass", "PriorityClass"];
    assert_eq!(cluster_scoped, [&expected[..], &["CustomResourceDefinition"]].concat());
    for kind in [
        "Pod",
        "Deployment",
        "StatefulSet",
        "Lease",
        "CustomResourceDefinition",
        "PriorityClass",
        "StorageClass",
        "NetworkPolicy",
        "Ingress",
        "EndpointSlice",
        "ControllerRevision",
        "ResourceQuota",
    ] {
        let k = kinds.get(kind).unwrap();
        let stem = kind.to_lowercase();
        let plural = match stem.strip_suffix('y') {
            Some(stem) if !stem.ends_with(['a', 'e', 'o', 'u']) => format!("{stem}ies"),
            _ if stem.ends_with('s') => format!("{stem}es"),
            _ => format!("{stem}s"),
        };
        assert_eq!(k.resource, plural, "{kind}");
    }
}

// A real API server answers 404 for a resource it does not serve: here the
// scenario cannot be loaded, and says where.
#[test]
fn an_object_of_an_undeclared_kind_is_an_error_at_its_kind() {
    let text = scenario("\n  - { apiVersion: example.com/v1, kind: Gadget, metadata: { name: g } }\n");
    let error = parse("crd.yaml", &text).expect_err("rejected");
    let d = &error.diagnostics[0];
    assert_eq!((d.line, d.path.as_str()), (4, "objects[0].kind"));
    assert!(d.message.starts_with("unknown kind Gadget"), "{}", d.message);
    assert!(d.message.contains("no CustomResourceDefinition"), "{}", d.message);
}

#[test]
fn a_script_step_on_an_undeclared_kind_is_an_error() {
    let text = format!("{}script:\n  - {{ at: 1s, delete: {{ kind: Gadget, name: g }} }}\n", scenario(WIDGET_CRD));
    let error = parse("crd.yaml", &text).expect_err("rejected");
    let d = &error.diagnostics[0];
    assert_eq!(d.path, "script[0].delete.kind");
    assert!(d.message.contains("its CustomResourceDefinitions declare Widget"), "{}", d.message);
}

// apiextensions.k8s.io/v1 validation: spec.names.plural is required, the
// scope is Namespaced or Cluster, exactly one version is the storage
// version, and the CRD is named <plural>.<group>.
#[test]
fn an_invalid_crd_is_an_error_at_the_field_that_is_wrong() {
    let bad = WIDGET_CRD.replace("scope: Namespaced", "scope: Everywhere").replace("storage: true", "storage: false");
    let error = parse("crd.yaml", &scenario(&bad)).expect_err("rejected");
    let found: Vec<(usize, &str)> = error.diagnostics.iter().map(|d| (d.line, d.path.as_str())).collect();
    assert!(found.contains(&(10, "objects[0].spec.scope")), "{found:?}");
    assert!(found.contains(&(12, "objects[0].spec.versions")), "{found:?}");
    let misnamed = WIDGET_CRD.replace("name: widgets.example.com", "name: widgets");
    let d = &parse("crd.yaml", &scenario(&misnamed)).expect_err("rejected").diagnostics[0];
    assert_eq!((d.line, d.path.as_str()), (6, "objects[0].metadata.name"));
    assert!(d.message.contains("widgets.example.com"), "{}", d.message);
}

#[test]
fn a_cluster_scoped_custom_resource_has_no_namespace() {
    let cluster = WIDGET_CRD.replace("scope: Namespaced", "scope: Cluster");
    let text = scenario(&format!(
        "{cluster}  - {{ apiVersion: example.com/v1, kind: Widget, metadata: {{ name: w, namespace: team-a }} }}\n"
    ));
    let d = &parse("crd.yaml", &text).expect_err("rejected").diagnostics[0];
    assert_eq!(d.path, "objects[1].metadata.namespace");
    assert_eq!(d.message, "Widget objects are cluster-scoped and have no namespace");
}
