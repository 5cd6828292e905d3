//! Which component a plugin may stand in for.

use recon_abi::Manifest;
use recon_scenario::Scenario;

/// How well a plugin fits the component it stands in for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fit {
    /// Nothing to say.
    Fits,
    /// It cannot stand in for the component: refused, with the reason.
    Refused(String),
    /// It can run there, but the run will not be what one may expect: said.
    Warning(String),
}

/// Whether a plugin fits a component, in one line that starts with the
/// plugin's file name: a node agent (a kubelet) needs a component on a
/// node, so on any other it is refused; a controller that is no node agent
/// may stand in for one (a test of what happens when a node's agent
/// misbehaves), with a warning that the node's containers will not run
/// meanwhile. A component the scenario does not have fits nothing and
/// says nothing here: [`crate::Preparer::prepare`] refuses it first.
pub fn fit(scenario: &Scenario, component: &str, file_name: &str, manifest: &Manifest) -> Fit {
    let Some(spec) = scenario.components.iter().find(|c| c.name == component) else { return Fit::Fits };
    match (manifest.node_agent, &spec.node) {
        (true, None) => Fit::Refused(format!(
            "{file_name} is a node agent ({}), but {component} runs on no node; it can only stand in for a node's \
             agent (a kubelet-… component)",
            manifest.name
        )),
        (false, Some(node)) => Fit::Warning(format!(
            "{file_name} ({}) is not a node agent: while it stands in for {component}, nothing starts or stops \
             {node}'s containers",
            manifest.name
        )),
        _ => Fit::Fits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(controller: &str) -> Manifest {
        let config = recon_abi::ComponentConfig { name: "c".into(), ..Default::default() };
        recon_catalog::instantiate(controller).unwrap().init(&config).unwrap()
    }

    #[test]
    fn a_node_agent_is_refused_off_a_node_and_a_controller_on_one_is_warned_about_in_one_line() {
        let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
        let scenario = recon_scenario::parse("default.yaml", library.yaml).unwrap();
        let Fit::Refused(text) = fit(&scenario, "scheduler", "k.wasm", &manifest("kubelet")) else {
            panic!("a node agent on the scheduler is refused")
        };
        assert!(text.starts_with("k.wasm is a node agent (kubelet)") && !text.contains('\n'), "{text}");
        let Fit::Warning(text) = fit(&scenario, "kubelet-node-1", "s.wasm", &manifest("scheduler")) else {
            panic!("a controller standing in for a kubelet is warned about")
        };
        assert!(text.starts_with("s.wasm (scheduler)") && text.contains("node-1's containers"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(fit(&scenario, "kubelet-node-1", "k.wasm", &manifest("kubelet-fixed")), Fit::Fits);
        assert_eq!(fit(&scenario, "scheduler", "s.wasm", &manifest("scheduler")), Fit::Fits);
    }
}
