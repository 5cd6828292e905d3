//! The built-in Recon controllers, by name.
//!
//! A scenario names the controller each component runs (`controller:
//! kubelet`); [`instantiate`] turns that name into a fresh instance, and
//! [`BUILTINS`] lists the names with one line each for `recon` and the UI,
//! and the crate that builds each one as a Wasm plugin. The built-ins are
//! ordinary plugin crates written against `recon-sdk`, linked natively here;
//! the same crates build as Wasm plugins, which must behave identically.
//!
//! Without its default `controllers` feature it is only the names and the
//! library, for a program that shows them but runs nothing.
//!
//! It also carries the scenario library ([`SCENARIOS`]), so that the CLI,
//! the browser app and the tests offer the same scenarios, and a cluster
//! of any size ([`cluster`]) to run controllers at scale.

pub mod cluster;

#[cfg(feature = "controllers")]
use recon_abi::Instance;
#[cfg(feature = "controllers")]
use recon_plugin_garbage_collector::GarbageCollector;
#[cfg(feature = "controllers")]
use recon_plugin_kubelet::Kubelet;
#[cfg(feature = "controllers")]
use recon_plugin_kubelet_fixed::KubeletFixed;
#[cfg(feature = "controllers")]
use recon_plugin_scheduler::Scheduler;
#[cfg(feature = "controllers")]
use recon_plugin_statefulset::StatefulSetController;

/// A built-in controller's name, what it does, and where its plugin is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// The name scenarios use, e.g. `kubelet`; also the manifest's `name`.
    pub name: &'static str,
    /// One line on what it does.
    pub description: &'static str,
    /// The Rust crate name of its plugin crate, e.g. `recon_plugin_kubelet`:
    /// `cargo build --release --target wasm32-unknown-unknown` of that crate
    /// writes `target/wasm32-unknown-unknown/release/<crate_name>.wasm`
    /// (the package name is the same with `-` for `_`).
    pub crate_name: &'static str,
}

/// Every built-in controller, in alphabetical order.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "condition-writer",
        description: "Decides one status condition of each Widget once (conditionType, status and reason from its \
                      params), by a compare-and-swap status update, and leaves a condition someone already decided; \
                      two on one condition type race (status-condition-race).",
        crate_name: "recon_plugin_condition_writer",
    },
    Builtin {
        name: "configmap-generator",
        description: "kube-rs's ConfigMap generator example, its code unchanged (kube's API served by recon-kube): \
                      server-side applies a ConfigMap owned by each nullable.se ConfigMapGenerator custom resource.",
        crate_name: "recon_plugin_configmap_generator",
    },
    Builtin {
        name: "database-operator",
        description: "An example operator: runs each example.com Database custom resource as a StatefulSet and a \
                      Service by server-side apply, holds it with a finalizer until its backup schedule is deleted.",
        crate_name: "recon_plugin_database_operator",
    },
    Builtin {
        name: "deployment",
        description: "Rolls pod templates out through one ReplicaSet per template hash, within maxSurge and \
                      maxUnavailable (RollingUpdate) or all at once (Recreate) (a kube-rs controller).",
        crate_name: "recon_plugin_deployment",
    },
    Builtin {
        name: "garbage-collector",
        description: "Deletes objects whose owners (by uid) are gone, and carries out foreground and orphan \
                      deletions; deletes with a uid precondition unless uidPrecondition: false.",
        crate_name: "recon_plugin_garbage_collector",
    },
    Builtin {
        name: "grove-operator",
        description: "The Grove operator's status reconcile (ai-dynamo/grove#775): its PodCliqueSet controller, or with \
                      controller: PodClique its PodClique controller; the status write is skipped when it equals the \
                      cached copy. liveRead: true and optimisticLock: true are the fixes.",
        crate_name: "recon_plugin_grove_operator",
    },
    Builtin {
        name: "hdfs-operator",
        description: "The Stackable HDFS operator's ClusterRoleBinding aggregator (stackabletech/hdfs-operator#774, a \
                      kube-rs reflector): on every watcher event it server-side applies one binding with a subject per \
                      HdfsCluster in its store, which is empty until a restarted operator's first InitDone. \
                      waitForInitDone: true and waitForStoreReady: true are the fixes.",
        crate_name: "recon_plugin_hdfs_operator",
    },
    Builtin {
        name: "kubelet",
        description: "Node agent: runs the pods bound to its node as its cache says, reports them Running and Ready, \
                      and finishes their deletion once their container stopped. Lists from any cache after a \
                      restart (resourceVersion=\"0\").",
        crate_name: "recon_plugin_kubelet",
    },
    Builtin {
        name: "kubelet-fixed",
        description: "The kubelet with the first fix for #59848: its first list after a restart is a quorum read.",
        crate_name: "recon_plugin_kubelet_fixed",
    },
    Builtin {
        name: "pod-reconciler",
        description: "A pod reconciler in the style of kube-rs's examples (kube's API served by recon-kube): mirrors \
                      each labelled pod's labels into an annotation by a replace from its cache, requeues, and backs \
                      off per pod when the API server refuses the write (409 Conflict).",
        crate_name: "recon_plugin_pod_reconciler",
    },
    Builtin {
        name: "rabbitmq-cluster-operator",
        description: "The RabbitMQ cluster operator (rabbitmq/cluster-operator#648, #758): runs each \
                      RabbitmqCluster as a StatefulSet it never scales down, and its finalizer deletes that \
                      StatefulSet by name; with deletePreconditionUid: true (upstream's fix for #648) the delete \
                      carries the StatefulSet's uid; with highestRequested: true the StatefulSet never gets fewer \
                      replicas than the cluster was ever seen asking for.",
        crate_name: "recon_plugin_rabbitmq_cluster_operator",
    },
    Builtin {
        name: "replicaset",
        description: "Keeps spec.replicas pods per ReplicaSet, with expectations so it does not act twice on one view (a kube-rs controller).",
        crate_name: "recon_plugin_replicaset",
    },
    Builtin {
        name: "scheduler",
        description: "Binds pending pods to the schedulable node with the fewest pods that has room.",
        crate_name: "recon_plugin_scheduler",
    },
    Builtin {
        name: "secret-syncer",
        description: "kube-rs's secret syncer example, its code unchanged (kube's API served by recon-kube): a Secret \
                      per labelled ConfigMap, which a finalizer (kube-runtime's finalizer()) deletes before the \
                      ConfigMap goes.",
        crate_name: "recon_plugin_secret_syncer",
    },
    Builtin {
        name: "statefulset",
        description: "Runs StatefulSet pods with stable names, one at a time in ordinal order, with rolling updates.",
        crate_name: "recon_plugin_statefulset",
    },
    Builtin {
        name: "template",
        description: "The plugin template: labels every pod with the node it is bound to.",
        crate_name: "recon_plugin_template",
    },
];

/// A scenario from the library (`scenarios/` in the repository), embedded at
/// build time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LibraryScenario {
    /// The file name without `.yaml`, e.g. `pod-safety-59848`.
    pub name: &'static str,
    /// The scenario file's text.
    pub yaml: &'static str,
}

/// The scenario library, sorted by name.
pub const SCENARIOS: &[LibraryScenario] = include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

/// The scenario everything opens on: Kubernetes issue #59848.
pub const DEFAULT_SCENARIO: &str = "pod-safety-59848";

/// The library scenario called `name`, if there is one.
pub fn scenario(name: &str) -> Option<&'static LibraryScenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// The built-in called `name`, if there is one.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Why a scenario's controller name is refused: it is no built-in, and
/// these are (for every front end's error message).
pub fn unknown_controller(name: &str) -> String {
    let known: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
    format!("unknown controller {name:?}; the built-in ones are: {}", known.join(", "))
}

/// A fresh instance of the built-in controller called `name`, or `None` if
/// there is no such built-in. Call `init` on it before anything else. A
/// native built-in never fails; it is an [`Instance`] so that it runs through
/// the same interface as a Wasm plugin. (With the `controllers` feature,
/// on by default.)
#[cfg(feature = "controllers")]
pub fn instantiate(name: &str) -> Option<Box<dyn Instance>> {
    let instance: Box<dyn Instance> = match name {
        "condition-writer" => Box::new(recon_plugin_condition_writer::controller()),
        "configmap-generator" => Box::new(recon_kube::Native::new(recon_plugin_configmap_generator::controller())),
        "database-operator" => Box::new(recon_plugin_database_operator::controller()),
        "deployment" => Box::new(recon_kube::Native::new(recon_plugin_deployment::controller())),
        "garbage-collector" => Box::new(GarbageCollector::new()),
        "grove-operator" => Box::new(recon_plugin_grove_operator::controller()),
        "hdfs-operator" => Box::new(recon_kube::Native::new(recon_plugin_hdfs_operator::controller())),
        "kubelet" => Box::new(Kubelet::new()),
        "kubelet-fixed" => Box::new(KubeletFixed::new()),
        "pod-reconciler" => Box::new(recon_kube::Native::new(recon_plugin_pod_reconciler::controller())),
        "rabbitmq-cluster-operator" => Box::new(recon_plugin_rabbitmq_cluster_operator::controller()),
        "replicaset" => Box::new(recon_kube::Native::new(recon_plugin_replicaset::controller())),
        "scheduler" => Box::new(Scheduler::new()),
        "secret-syncer" => Box::new(recon_kube::Native::new(recon_plugin_secret_syncer::controller())),
        "statefulset" => Box::new(StatefulSetController::new()),
        "template" => Box::new(recon_plugin_template::controller()),
        _ => return None,
    };
    Some(instance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use recon_abi::{ABI_VERSION, ComponentConfig, ListMode};

    #[test]
    fn every_builtin_instantiates_and_names_itself_in_its_manifest() {
        let config = ComponentConfig { name: "c".into(), node: Some("node-1".into()), ..Default::default() };
        for builtin in BUILTINS {
            let mut instance = instantiate(builtin.name).expect("listed builtins instantiate");
            let manifest = instance.init(&config).expect("native built-ins do not crash");
            // The grove operator is one binary run as either of its two
            // controllers; it names itself after the one it runs.
            if builtin.name == "grove-operator" {
                assert!(
                    manifest.name.starts_with("grove-") && manifest.name.ends_with("-controller"),
                    "{}",
                    manifest.name
                );
            } else {
                assert_eq!(manifest.name, builtin.name);
            }
            assert_eq!(manifest.abi_version, ABI_VERSION);
            assert!(!manifest.watches.is_empty() && !manifest.writes.is_empty());
            assert_eq!(manifest.node_agent, builtin.name.starts_with("kubelet"));
        }
    }

    #[test]
    fn only_the_fixed_kubelet_and_the_kube_rs_examples_list_with_a_quorum_read_issue_59848() {
        let config = ComponentConfig { name: "c".into(), node: Some("node-1".into()), ..Default::default() };
        // kube's `watcher::Config::default()` lists with `ListSemantic::MostRecent`, a quorum read.
        let quorum = ["kubelet-fixed", "configmap-generator", "hdfs-operator", "pod-reconciler", "secret-syncer"];
        for builtin in BUILTINS {
            let manifest = instantiate(builtin.name).unwrap().init(&config).unwrap();
            let expected = if quorum.contains(&builtin.name) { ListMode::Quorum } else { ListMode::Any };
            assert_eq!(manifest.list_mode, expected, "{}", builtin.name);
        }
    }

    #[test]
    fn every_builtin_names_the_crate_that_builds_its_plugin() {
        for listed in BUILTINS {
            let expected = format!("recon_plugin_{}", listed.name.replace('-', "_"));
            assert_eq!(listed.crate_name, expected);
            assert_eq!(builtin(listed.name), Some(listed));
        }
    }

    #[test]
    fn the_library_holds_the_default_scenario_and_is_sorted() {
        let default = scenario(DEFAULT_SCENARIO).expect("the default scenario is in the library");
        assert!(default.yaml.contains("name: pod-safety-59848"));
        let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.len() >= 5, "{names:?}");
    }

    #[test]
    fn unknown_names_are_not_instantiated() {
        assert!(instantiate("daemonset").is_none());
        assert!(instantiate("Kubelet").is_none());
        assert!(builtin("daemonset").is_none());
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
