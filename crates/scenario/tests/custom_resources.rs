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
    assert_eq!(s.objects[1].metadata.namespace, "default", "namespaced: defaulted like a built-in");
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
