//! Sending a node agent what changed in its containers, not the whole list.
//!
//! A node agent (a kubelet) is told on every call which containers run
//! on its node ([`Input::containers`](crate::Input::containers)), and it is
//! called for every change to any of its node's pods. At thirty pods a
//! node that list was nearly three quarters of the bytes a kubelet plugin
//! was sent, and decoding it again on every call most of the work of
//! taking its input in, though the list changes only when a container
//! starts or stops.
//!
//! So a plugin may ask (`Manifest::container_changes`) to be sent what
//! changed since the list it was last sent ([`ContainerChanges`], in
//! [`WireInput::container_changes`](crate::WireInput::container_changes))
//! in place of the list. Both sides keep that list ([`SentContainers`]):
//! the host to work out the changes, the plugin to apply them. The Rust
//! SDK does the plugin's part before its controller sees the input, so a
//! controller always sees the whole list.

use std::cmp::Ordering;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Container, PodRef};

/// What changed in a node's containers since the list the plugin was last
/// sent: the list it stands for is that one without the `stopped` pods'
/// containers, with the `started` ones added, in order by pod. Both empty:
/// nothing changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerChanges {
    /// The pod incarnations whose containers are gone: each had one in
    /// the last list. A container started again for the same incarnation
    /// is in both lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<PodRef>,
    /// The containers that are new since the last list, in order by pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub started: Vec<Container>,
}

impl ContainerChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.stopped.is_empty() && self.started.is_empty()
    }
}

/// The list of containers last sent to one plugin instance: the host
/// [`send`](SentContainers::send)s every list through its own, the plugin
/// [`receive`](SentContainers::receive)s every call's through its own, in
/// order, so the two agree. A new instance has been sent none.
#[derive(Clone, Debug, Default)]
pub struct SentContainers {
    /// On the host's side, only a list in order by pod, the only kind
    /// changes are worked out against (each is checked once, when sent).
    last: Option<Arc<[Container]>>,
}

/// Whether `list` is in order by pod, each pod once: the order the host
/// keeps a node's containers in, and the only lists sent as changes.
fn in_order(list: &[Container]) -> bool {
    list.windows(2).all(|pair| pair[0].pod < pair[1].pod)
}

impl SentContainers {
    /// Nothing sent yet.
    pub fn new() -> SentContainers {
        SentContainers::default()
    }

    /// The host's side: what to send for the node's list `now`. `None`:
    /// send it whole (the instance's first list, a list out of order, or
    /// the one after it);
    /// else the changes since the last list sent, which are empty when
    /// `now` is that very list. Remembers `now` either way.
    pub fn send(&mut self, now: &Arc<[Container]>) -> Option<ContainerChanges> {
        if self.last.as_ref().is_some_and(|last| Arc::ptr_eq(last, now)) {
            return Some(ContainerChanges::default());
        }
        let ordered = in_order(now);
        let changes = self.last.as_deref().filter(|_| ordered).map(|last| changes(last, now));
        self.last = ordered.then(|| Arc::clone(now));
        changes
    }

    /// The plugin's side: the list one call's input stands for, from what
    /// it carried: the list `whole`, or the `changes` to the last one, or
    /// neither (a component that is not a node agent). Remembers it.
    ///
    /// # Errors
    /// Changes that do not fit the last list (none was sent, a stopped pod
    /// had no container, a started one already has one), or both a list
    /// and changes: a host that does not keep the ABI.
    pub fn receive(
        &mut self,
        whole: Option<Arc<[Container]>>,
        changes: Option<ContainerChanges>,
    ) -> Result<Option<Arc<[Container]>>, String> {
        let list = match (whole, changes) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => return Err("an input has both containers and containerChanges".into()),
            (Some(whole), None) => whole,
            (None, Some(changes)) => {
                let last = self.last.as_ref().ok_or("containerChanges before any list of containers")?;
                apply(last, changes)?
            }
        };
        self.last = Some(Arc::clone(&list));
        Ok(Some(list))
    }
}

/// The changes that turn `last` into `now`, both in order by pod: one walk
/// through the two.
fn changes(last: &[Container], now: &[Container]) -> ContainerChanges {
    let mut changes = ContainerChanges::default();
    let (mut last, mut now) = (last.iter().peekable(), now.iter().peekable());
    loop {
        match (last.peek(), now.peek()) {
            (None, None) => return changes,
            (Some(gone), None) => {
                changes.stopped.push(gone.pod.clone());
                last.next();
            }
            (None, Some(new)) => {
                changes.started.push(Container::clone(new));
                now.next();
            }
            (Some(old), Some(new)) => match old.pod.cmp(&new.pod) {
                Ordering::Less => {
                    changes.stopped.push(old.pod.clone());
                    last.next();
                }
                Ordering::Greater => {
                    changes.started.push(Container::clone(new));
                    now.next();
                }
                Ordering::Equal => {
                    if old != new {
                        changes.stopped.push(old.pod.clone());
                        changes.started.push(Container::clone(new));
                    }
                    last.next();
                    now.next();
                }
            },
        }
    }
}

/// `last` with `changes` applied, in order by pod.
fn apply(last: &Arc<[Container]>, changes: ContainerChanges) -> Result<Arc<[Container]>, String> {
    if changes.is_empty() {
        return Ok(Arc::clone(last));
    }
    let stopped: std::collections::BTreeSet<&PodRef> = changes.stopped.iter().collect();
    if let Some(pod) = stopped.iter().find(|pod| !last.iter().any(|c| &c.pod == **pod)) {
        return Err(format!("containerChanges stops {pod}, which had no container"));
    }
    let mut list: Vec<Container> = last.iter().filter(|c| !stopped.contains(&c.pod)).cloned().collect();
    list.extend(changes.started);
    list.sort_by(|a, b| a.pod.cmp(&b.pod));
    if let Some(pair) = list.windows(2).find(|pair| pair[0].pod == pair[1].pod) {
        return Err(format!("containerChanges starts {}, which already had a container", pair[0].pod));
    }
    Ok(list.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, uid: &str, started_at_ms: u64) -> Container {
        Container { pod: PodRef { namespace: "default".into(), name: name.into(), uid: uid.into() }, started_at_ms }
    }

    fn list(containers: Vec<Container>) -> Arc<[Container]> {
        containers.into()
    }

    /// Every list the host sends, the plugin gets back whole, through a
    /// sequence of starts, stops, a restart of one incarnation and a new
    /// incarnation under an old name; and a list that is sent again
    /// costs nothing but its marker.
    #[test]
    fn the_plugin_rebuilds_every_list_the_host_sends() {
        let (a, b, c) = (container("a", "1", 10), container("b", "2", 20), container("c", "3", 30));
        let lists = [
            list(vec![]),
            list(vec![b.clone()]),
            list(vec![a.clone(), b.clone(), c.clone()]),
            list(vec![a.clone(), c.clone()]),
            // `a` restarted (a new start time), `c` now a new incarnation.
            list(vec![container("a", "1", 40), container("c", "4", 40)]),
            list(vec![]),
            list(vec![c.clone()]),
        ];
        let (mut host, mut plugin) = (SentContainers::new(), SentContainers::new());
        for (i, now) in lists.iter().enumerate() {
            let sent = host.send(now);
            assert_eq!(sent.is_none(), i == 0, "only the first list goes whole");
            let whole = sent.is_none().then(|| Arc::clone(now));
            let got = plugin.receive(whole, sent).unwrap().unwrap();
            assert_eq!(*got, **now, "list {i}");
            let again = host.send(now).unwrap();
            assert!(again.is_empty(), "list {i} again: nothing changed");
            assert!(Arc::ptr_eq(&plugin.receive(None, Some(again)).unwrap().unwrap(), &got), "kept, not copied");
        }
        // The restart is a stop and a start of the same incarnation.
        let mut host = SentContainers::new();
        host.send(&lists[3]);
        let restart = host.send(&lists[4]).unwrap();
        assert_eq!(restart.stopped, [a.pod.clone(), c.pod.clone()]);
        assert_eq!(restart.started, [container("a", "1", 40), container("c", "4", 40)]);
    }

    /// A list out of order by pod goes whole, and so does the next one.
    #[test]
    fn a_list_out_of_order_is_sent_whole() {
        let (a, b) = (container("a", "1", 10), container("b", "2", 20));
        let mut host = SentContainers::new();
        host.send(&list(vec![a.clone()]));
        assert!(host.send(&list(vec![b.clone(), a.clone()])).is_none());
        assert!(host.send(&list(vec![a.clone(), b.clone()])).is_none(), "the last list was out of order");
        assert!(host.send(&list(vec![a.clone(), b.clone()])).unwrap().is_empty(), "equal, if not the same list");
    }

    /// Changes that do not fit the list the plugin holds are refused with
    /// what is wrong, as is an input with both forms; neither form is no
    /// list at all.
    #[test]
    fn changes_that_do_not_fit_are_refused() {
        let a = container("a", "1", 10);
        let mut plugin = SentContainers::new();
        assert_eq!(plugin.receive(None, None).unwrap(), None);
        let stop_a = || ContainerChanges { stopped: vec![a.pod.clone()], started: vec![] };
        assert!(plugin.receive(None, Some(stop_a())).unwrap_err().contains("before any list"));
        plugin.receive(Some(list(vec![])), None).unwrap();
        assert!(plugin.receive(None, Some(stop_a())).unwrap_err().contains("had no container"));
        plugin.receive(Some(list(vec![a.clone()])), None).unwrap();
        let start_a = ContainerChanges { stopped: vec![], started: vec![a.clone()] };
        assert!(plugin.receive(None, Some(start_a)).unwrap_err().contains("already had a container"));
        let both = plugin.receive(Some(list(vec![])), Some(ContainerChanges::default()));
        assert!(both.unwrap_err().contains("both"));
    }

    /// On the wire: `{}` for no change, and each list only when it has
    /// something.
    #[test]
    fn changes_encode_compactly() {
        assert_eq!(serde_json::to_string(&ContainerChanges::default()).unwrap(), "{}");
        let changes = ContainerChanges { stopped: vec![container("a", "1", 0).pod], started: vec![] };
        assert_eq!(
            serde_json::to_string(&changes).unwrap(),
            r#"{"stopped":[{"namespace":"default","name":"a","uid":"1"}]}"#
        );
        assert_eq!(serde_json::from_str::<ContainerChanges>("{}").unwrap(), ContainerChanges::default());
    }
}
