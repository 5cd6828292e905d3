//! Many components that run one controller, folded into one row.
//!
//! A generated cluster has a kubelet per node: a thousand cards in the
//! components panel, and a thousand views in the inspector, where a
//! visitor wants the one they are after and the page redraws them all on
//! every progress report of a run. A controller run by more than
//! [`FOLD_OVER`] components is shown as one row that finds its components
//! by name; what needs the visitor's eye (a component running their
//! plugin, an informer behind etcd) stays shown.

use std::collections::BTreeMap;

/// A controller run by more components than this is folded into one row.
/// The library's stories run a handful of each; a cluster runs one per node.
pub const FOLD_OVER: usize = 8;

/// How many of a folded row's components that match its search are shown.
pub const SHOWN_AT_MOST: usize = 12;

/// One row of a list of components, in the scenario's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row {
    /// A component shown on its own, by its index in the list.
    One(usize),
    /// The components that run `controller`, folded where the first of
    /// them stands.
    Folded(Folded),
}

/// A controller's components, folded into one row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folded {
    /// The controller they run.
    pub controller: String,
    /// All of them, by index, in the list's order.
    pub members: Vec<usize>,
    /// Those shown under the row, in the list's order: every one kept in
    /// sight, and those that match the search while fewer than
    /// [`SHOWN_AT_MOST`] are shown.
    pub shown: Vec<usize>,
    /// How many of them match the search (none without one).
    pub matched: usize,
    /// How many of those that match are not shown.
    pub more: usize,
}

/// The rows for `components`, each a `(name, controller)` pair in the
/// list's order. `kept(i)` says whether the component at `i` stays in
/// sight in its folded row whatever the search (one running an uploaded
/// plugin, say); `search` holds what the visitor typed in each folded
/// controller's row.
pub fn rows(components: &[(&str, &str)], kept: impl Fn(usize) -> bool, search: &BTreeMap<String, String>) -> Vec<Row> {
    // A list, not a map: a scenario has a handful of controllers, and the
    // page's download pays for every map type it uses.
    let groups = groups(components);
    let mut rows = Vec::new();
    for (i, (_, controller)) in components.iter().enumerate() {
        let Some((_, mine)) = groups.iter().find(|(c, _)| c == controller) else { continue };
        if mine.len() <= FOLD_OVER {
            rows.push(Row::One(i));
            continue;
        }
        if mine[0] != i {
            continue;
        }
        // Component names are DNS labels, lowercase ASCII: ASCII folding
        // is enough, and spares the page Unicode's case tables.
        let query = search.get(*controller).map(|q| q.trim().to_ascii_lowercase()).unwrap_or_default();
        let matches = |j: usize| !query.is_empty() && components[j].0.to_ascii_lowercase().contains(&query);
        let (mut shown, mut matched, mut more) = (Vec::new(), 0, 0);
        for &j in mine {
            let hit = matches(j);
            matched += usize::from(hit);
            if kept(j) {
                shown.push(j);
            } else if hit {
                if shown.len() < SHOWN_AT_MOST {
                    shown.push(j);
                } else {
                    more += 1;
                }
            }
        }
        rows.push(Row::Folded(Folded {
            controller: (*controller).to_owned(),
            members: mine.clone(),
            shown,
            matched,
            more,
        }));
    }
    rows
}

/// Each controller of `components` with the indices of those that run it,
/// in order of first appearance.
fn groups<'a>(components: &[(&str, &'a str)]) -> Vec<(&'a str, Vec<usize>)> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, &(_, controller)) in components.iter().enumerate() {
        match groups.iter_mut().find(|(c, _)| *c == controller) {
            Some((_, members)) => members.push(i),
            None => groups.push((controller, vec![i])),
        }
    }
    groups
}

/// For each of `components`' `(name, controller)` pairs, in order, the
/// controller if more than [`FOLD_OVER`] of them run it: the components
/// the inspector folds where their view matches etcd.
pub fn folded_controllers<'a>(components: &[(&str, &'a str)]) -> Vec<Option<&'a str>> {
    let groups = groups(components);
    let crowded = |controller: &str| groups.iter().any(|(c, members)| *c == controller && members.len() > FOLD_OVER);
    components.iter().map(|&(_, controller)| crowded(controller).then_some(controller)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three control-plane components and `kubelets` kubelets after them.
    fn cluster(kubelets: usize) -> Vec<(String, String)> {
        let mut components: Vec<(String, String)> = ["scheduler", "replicaset", "deployment"]
            .iter()
            .map(|c| (format!("{c}-controller"), (*c).to_owned()))
            .collect();
        components.extend((0..kubelets).map(|n| (format!("kubelet-node-{n}"), "kubelet".to_owned())));
        components
    }

    fn pairs(components: &[(String, String)]) -> Vec<(&str, &str)> {
        components.iter().map(|(n, c)| (n.as_str(), c.as_str())).collect()
    }

    #[test]
    fn a_handful_of_one_controller_is_shown_one_by_one() {
        let components = cluster(FOLD_OVER);
        let rows = rows(&pairs(&components), |_| false, &BTreeMap::new());
        assert_eq!(rows, (0..components.len()).map(Row::One).collect::<Vec<_>>());
        assert!(folded_controllers(&pairs(&components)).iter().all(Option::is_none));
    }

    #[test]
    fn many_of_one_controller_fold_into_one_row_where_the_first_stands() {
        let mut components = cluster(100);
        // A component listed after the kubelets keeps its place after the row.
        components.push(("late".into(), "logger".into()));
        let rows = rows(&pairs(&components), |_| false, &BTreeMap::new());
        assert_eq!(rows.len(), 5, "{rows:?}");
        assert_eq!(rows[..3], [Row::One(0), Row::One(1), Row::One(2)]);
        let Row::Folded(folded) = &rows[3] else { panic!("{:?}", rows[3]) };
        assert_eq!(folded.controller, "kubelet");
        assert_eq!(folded.members, (3..103).collect::<Vec<_>>());
        assert!(folded.shown.is_empty(), "nothing is searched for, nothing kept: {folded:?}");
        assert_eq!((folded.matched, folded.more), (0, 0));
        assert_eq!(rows[4], Row::One(103));
        let folded = folded_controllers(&pairs(&components));
        let expected: Vec<Option<&str>> =
            components.iter().map(|(_, c)| (c == "kubelet").then_some("kubelet")).collect();
        assert_eq!(folded, expected);
    }

    #[test]
    fn a_search_shows_the_first_matches_and_counts_the_rest() {
        let components = cluster(1000);
        let search = BTreeMap::from([("kubelet".to_owned(), " Node-7".to_owned())]);
        let rows = rows(&pairs(&components), |_| false, &search);
        let Row::Folded(folded) = &rows[3] else { panic!("{:?}", rows[3]) };
        // node-7, node-70..79, node-700..799: 111 names hold "node-7".
        let names: Vec<&str> = folded.shown.iter().map(|&i| components[i].0.as_str()).collect();
        assert_eq!(names.len(), SHOWN_AT_MOST);
        assert_eq!(names[..3], ["kubelet-node-7", "kubelet-node-70", "kubelet-node-71"]);
        assert_eq!((folded.matched, folded.more), (111, 111 - SHOWN_AT_MOST));
        // An exact name is one match.
        let search = BTreeMap::from([("kubelet".to_owned(), "kubelet-node-999".to_owned())]);
        let Row::Folded(folded) = &rows_of(&components, &search)[3] else { panic!() };
        assert_eq!(folded.shown, [1002]);
        assert_eq!((folded.matched, folded.more), (1, 0));
    }

    #[test]
    fn a_kept_component_stays_shown_whatever_the_search() {
        let components = cluster(50);
        // kubelet-node-40 runs an uploaded plugin.
        let kept = |i: usize| components[i].0 == "kubelet-node-40";
        let search = BTreeMap::from([("kubelet".to_owned(), "node-4".to_owned())]);
        let rows = rows(&pairs(&components), kept, &search);
        let Row::Folded(folded) = &rows[3] else { panic!("{:?}", rows[3]) };
        let names: Vec<&str> = folded.shown.iter().map(|&i| components[i].0.as_str()).collect();
        // node-4 and node-41..49 match (node-40 is kept, not counted as a match).
        assert_eq!(
            names,
            [
                "kubelet-node-4",
                "kubelet-node-40",
                "kubelet-node-41",
                "kubelet-node-42",
                "kubelet-node-43",
                "kubelet-node-44",
                "kubelet-node-45",
                "kubelet-node-46",
                "kubelet-node-47",
                "kubelet-node-48",
                "kubelet-node-49"
            ]
        );
        assert_eq!((folded.matched, folded.more), (11, 0));
        let rows = self::rows(&pairs(&components), kept, &BTreeMap::new());
        let Row::Folded(folded) = &rows[3] else { panic!() };
        assert_eq!(folded.shown, [43]);
        assert_eq!(folded.matched, 0);
    }

    fn rows_of(components: &[(String, String)], search: &BTreeMap<String, String>) -> Vec<Row> {
        rows(&pairs(components), |_| false, search)
    }
}
