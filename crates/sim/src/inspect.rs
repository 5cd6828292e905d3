//! What each component believed at a moment, beside the store's truth.
//!
//! A stale read is invisible in any one component's logs: it acts on what
//! it holds. [`Sim::snapshot`] puts every running component's view (what its
//! watches delivered) beside the store and lists the differences: objects it
//! lacks, objects it holds at an older revision, and objects it still holds
//! though they were deleted (or replaced by a new incarnation).

use serde::{Deserialize, Serialize};

use crate::Sim;
use crate::trace::ObjectVersion;

/// Every component's view against the store, at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Virtual time of the snapshot.
    pub time_ms: u64,
    /// The store's revision then.
    pub store_revision: u64,
    /// Every component, in scenario order.
    pub components: Vec<ComponentView>,
}

/// One component's view against the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentView {
    /// The component.
    pub component: String,
    /// The API server it is connected to.
    pub api_server: String,
    /// Whether an instance is running (a crashed one holds nothing).
    pub running: bool,
    /// How many objects it holds.
    pub held: usize,
    /// Objects in the store that its watches select but it does not hold.
    pub missing: Vec<ObjectVersion>,
    /// Objects it holds at an older revision than the store's.
    pub outdated: Vec<Outdated>,
    /// Objects it holds that the store no longer has: deleted, or replaced
    /// by a new incarnation (another uid) under the same name.
    pub deleted: Vec<ObjectVersion>,
}

/// An object held at an older revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outdated {
    /// What the component holds.
    pub held: ObjectVersion,
    /// The store's revision of the same incarnation.
    pub current: u64,
}

impl ComponentView {
    /// Whether the view matches the store for everything it watches.
    pub fn is_current(&self) -> bool {
        self.missing.is_empty() && self.outdated.is_empty() && self.deleted.is_empty()
    }
}

fn version(object: &recon_abi::Object) -> ObjectVersion {
    ObjectVersion { key: object.key(), uid: object.metadata.uid.clone(), revision: object.revision().unwrap_or(0) }
}

impl Sim {
    /// Every component's view against the store, now. Run the simulation
    /// to the moment of interest first ([`Sim::run_until`]).
    pub fn snapshot(&self) -> Snapshot {
        let store = self.store.range("", None).unwrap_or_default();
        let components = self
            .components
            .iter()
            .map(|comp| {
                let api_server = self.servers[comp.server].config.name.clone();
                let mut view = ComponentView {
                    component: comp.spec.name.clone(),
                    api_server,
                    running: comp.instance.is_some(),
                    held: 0,
                    missing: Vec::new(),
                    outdated: Vec::new(),
                    deleted: Vec::new(),
                };
                let Some(instance) = &comp.instance else { return view };
                for (w, spec) in instance.manifest.watches.iter().enumerate() {
                    let Some(held) = instance.view.get(w) else { continue };
                    view.held += held.len();
                    let Ok(filter) = crate::cache::Filter::new(&crate::component::selection(spec)) else { continue };
                    for kv in store.iter().filter(|kv| filter.matches(&kv.value)) {
                        match held.get(&kv.value.key()) {
                            None => view.missing.push(version(&kv.value)),
                            Some(h) if h.metadata.uid == kv.value.metadata.uid => {
                                let held = version(h);
                                if held.revision < kv.mod_revision {
                                    view.outdated.push(Outdated { held, current: kv.mod_revision });
                                }
                            }
                            // Another incarnation: what it holds is gone.
                            Some(_) => {}
                        }
                    }
                    for object in held.values() {
                        let current = store.iter().find(|kv| kv.value.key() == object.key());
                        if current.is_none_or(|kv| kv.value.metadata.uid != object.metadata.uid) {
                            view.deleted.push(version(object));
                        }
                    }
                }
                view
            })
            .collect();
        Snapshot { time_ms: self.now, store_revision: self.store.revision(), components }
    }
}

#[cfg(test)]
mod tests {
    use crate::Sim;

    fn default_sim() -> Sim {
        let text = include_str!("../../../scenarios/pod-safety-59848.yaml");
        let scenario = recon_scenario::parse("pod-safety-59848.yaml", text).unwrap();
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap()
    }

    #[test]
    fn before_the_partition_every_view_is_current() {
        let mut sim = default_sim();
        sim.run_until(900);
        let snapshot = sim.snapshot();
        assert_eq!(snapshot.components.len(), 4);
        for view in &snapshot.components {
            assert!(view.running && view.is_current(), "{view:?}");
        }
        let kubelet = snapshot.components.iter().find(|v| v.component == "kubelet-node-1").unwrap();
        assert!(kubelet.held > 0);
    }

    #[test]
    fn after_the_stale_relist_node_1s_kubelet_holds_the_deleted_pod() {
        let mut sim = default_sim();
        sim.run_until(5_010);
        let snapshot = sim.snapshot();
        let kubelet = snapshot.components.iter().find(|v| v.component == "kubelet-node-1").unwrap();
        assert_eq!(kubelet.api_server, "apiserver-2");
        let names: Vec<&str> = kubelet.deleted.iter().map(|o| o.key.name.as_str()).collect();
        assert!(names.contains(&"web-0"), "{kubelet:?}");
        // node-2's kubelet, on the fresh API server, holds the new web-0.
        let other = snapshot.components.iter().find(|v| v.component == "kubelet-node-2").unwrap();
        assert!(other.deleted.is_empty(), "{other:?}");
    }
}
