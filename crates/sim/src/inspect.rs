//! [`Sim::snapshot`]: every component's view and every API server's watch
//! cache beside the store's truth, at one moment. The types it returns live
//! in [`recon_trace::inspect`], where the playground reads them.

use std::collections::BTreeMap;

use recon_store::KeyValue;
use recon_trace::ObjectVersion;
pub use recon_trace::inspect::{CacheView, ComponentView, Differences, Outdated, Snapshot};

use crate::Sim;

fn version(object: &recon_abi::Object) -> ObjectVersion {
    ObjectVersion {
        key: object.key().into(),
        uid: object.metadata.uid.as_str().into(),
        revision: object.revision().unwrap_or(0),
    }
}

/// Where what a view holds differs from the store's objects it should hold.
fn compare<'a>(
    selected: impl Iterator<Item = &'a KeyValue>,
    held: impl Iterator<Item = &'a recon_abi::Object>,
    held_now: impl Fn(&KeyValue) -> Option<&'a recon_abi::Object>,
    store: &BTreeMap<recon_abi::ObjectKey, &KeyValue>,
) -> Differences {
    let mut d = Differences::default();
    for kv in selected {
        match held_now(kv) {
            None => d.missing.push(version(&kv.value)),
            Some(h) if h.metadata.uid == kv.value.metadata.uid => {
                let held = version(h);
                if held.revision < kv.mod_revision {
                    d.outdated.push(Outdated { held, current: kv.mod_revision });
                }
            }
            // Another incarnation: what it holds is gone (listed below).
            Some(_) => {}
        }
    }
    for object in held {
        if store.get(&object.key()).is_none_or(|kv| kv.value.metadata.uid != object.metadata.uid) {
            d.deleted.push(version(object));
        }
    }
    d
}

impl Sim {
    /// Every component's view and every API server's cache against the
    /// store, now. Run the simulation to the moment of interest first
    /// ([`Sim::run_until`]).
    pub fn snapshot(&self) -> Snapshot {
        let store = self.engine.store.range("", None).unwrap_or_default();
        let by_key: BTreeMap<recon_abi::ObjectKey, &KeyValue> = store.iter().map(|kv| (kv.value.key(), kv)).collect();
        let components = self
            .components
            .iter()
            .map(|comp| {
                let api_server = self.servers[comp.server.index()].config.name.clone();
                let mut view = ComponentView {
                    component: comp.spec.name.clone(),
                    api_server,
                    running: comp.instance().is_some(),
                    held: 0,
                    differences: Differences::default(),
                };
                let Some(instance) = comp.instance() else { return view };
                for (w, spec) in instance.manifest.watches.iter().enumerate() {
                    let Some(held) = instance.view.get(w) else { continue };
                    view.held += held.len();
                    let Ok(filter) = crate::cache::Filter::new(&crate::reflector::selection(spec)) else { continue };
                    let selected = store.iter().filter(|kv| filter.matches(&kv.value));
                    let held_now =
                        |kv: &KeyValue| held.get(&kv.value.metadata.namespace, &kv.value.metadata.name).map(|o| &**o);
                    view.differences.extend(compare(selected, held.values().map(|o| &**o), held_now, &by_key));
                }
                view
            })
            .collect();
        let caches = self
            .servers
            .iter()
            .map(|server| {
                let cache = &server.cache;
                CacheView {
                    api_server: server.config.name.clone(),
                    enabled: server.config.watch_cache.enabled,
                    revision: cache.revision,
                    held: cache.objects().count(),
                    differences: compare(store.iter(), cache.objects(), |kv| cache.get(&kv.key).map(|o| &**o), &by_key),
                }
            })
            .collect();
        Snapshot { time_ms: self.engine.now, store_revision: self.engine.store.revision(), components, caches }
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
            assert!(view.running && view.differences.is_current(), "{view:?}");
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
        let names: Vec<&str> = kubelet.differences.deleted.iter().map(|o| o.key.name.as_str()).collect();
        assert!(names.contains(&"web-0"), "{kubelet:?}");
        // node-2's kubelet, on the fresh API server, holds the new web-0.
        let other = snapshot.components.iter().find(|v| v.component == "kubelet-node-2").unwrap();
        assert!(other.differences.deleted.is_empty(), "{other:?}");
    }

    #[test]
    fn the_partitioned_servers_cache_is_shown_frozen_beside_the_store() {
        let mut sim = default_sim();
        sim.run_until(900);
        let before = sim.snapshot();
        let names: Vec<&str> = before.caches.iter().map(|c| c.api_server.as_str()).collect();
        assert_eq!(names, ["apiserver-1", "apiserver-2"]);
        assert!(
            before.caches.iter().all(|c| c.differences.is_current() && c.revision == before.store_revision),
            "{before:?}"
        );
        // During the partition (from 2s in #59848) apiserver-2's cache stops
        // at an old revision and still holds the pod the store deleted.
        sim.run_until(5_010);
        let during = sim.snapshot();
        let fresh = &during.caches[0];
        let frozen = &during.caches[1];
        assert!(fresh.differences.is_current() && fresh.revision == during.store_revision, "{fresh:?}");
        assert!(frozen.revision < during.store_revision, "{frozen:?}");
        let held: Vec<&str> = frozen.differences.deleted.iter().map(|o| o.key.name.as_str()).collect();
        assert!(held.contains(&"web-0"), "{frozen:?}");
        assert!(frozen.held > 0, "{frozen:?}");
    }
}
