//! The built-in Recon controllers, by name.
//!
//! A scenario names the controller each component runs (`controller:
//! kubelet`); [`instantiate`] turns that name into a fresh instance, and
//! [`BUILTINS`] lists the names with one line each for `recon` and the UI.
//! The built-ins are ordinary plugin crates written against `recon-sdk`,
//! linked natively here; the same crates build as Wasm plugins.

use recon_abi::Instance;
use recon_plugin_kubelet::Kubelet;
use recon_plugin_replicaset::ReplicaSetController;
use recon_plugin_scheduler::Scheduler;
use recon_plugin_statefulset::StatefulSetController;

/// A built-in controller's name and what it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// The name scenarios use, e.g. `kubelet`; also the manifest's `name`.
    pub name: &'static str,
    /// One line on what it does.
    pub description: &'static str,
}

/// Every built-in controller, in alphabetical order.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "kubelet",
        description: "Node agent: runs the pods bound to its node as its cache says, reports them Running and Ready, \
                      and finishes their deletion once their container stopped.",
    },
    Builtin {
        name: "replicaset",
        description: "Keeps spec.replicas pods per ReplicaSet, with expectations so it does not act twice on one view.",
    },
    Builtin {
        name: "scheduler",
        description: "Binds pending pods to the schedulable node with the fewest pods that has room.",
    },
    Builtin {
        name: "statefulset",
        description: "Runs StatefulSet pods with stable names, one at a time in ordinal order, with rolling updates.",
    },
];

/// A fresh instance of the built-in controller called `name`, or `None` if
/// there is no such built-in. Call `init` on it before anything else.
pub fn instantiate(name: &str) -> Option<Box<dyn Instance>> {
    let controller: Box<dyn Instance> = match name {
        "kubelet" => Box::new(Kubelet::new()),
        "replicaset" => Box::new(ReplicaSetController::new()),
        "scheduler" => Box::new(Scheduler::new()),
        "statefulset" => Box::new(StatefulSetController::new()),
        _ => return None,
    };
    Some(controller)
}

#[cfg(test)]
mod tests {
    use super::*;
    use recon_abi::{ABI_VERSION, ComponentConfig};

    #[test]
    fn every_builtin_instantiates_and_names_itself_in_its_manifest() {
        let config = ComponentConfig { name: "c".into(), node: Some("node-1".into()), ..Default::default() };
        for builtin in BUILTINS {
            let mut controller = instantiate(builtin.name).expect("listed builtins instantiate");
            let manifest = controller.init(&config).expect("native controllers do not crash");
            assert_eq!(manifest.name, builtin.name);
            assert_eq!(manifest.abi_version, ABI_VERSION);
            assert!(!manifest.watches.is_empty() && !manifest.writes.is_empty());
            assert_eq!(manifest.node_agent, builtin.name == "kubelet");
        }
    }

    #[test]
    fn unknown_names_are_not_instantiated() {
        assert!(instantiate("deployment").is_none());
        assert!(instantiate("Kubelet").is_none());
    }

    #[test]
    fn builtins_are_listed_once_in_alphabetical_order() {
        let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }
}
