//! A generated cluster's audit logs, as big as asked: three API servers,
//! a hundred nodes whose kubelets renew their Leases, list and watch their
//! pods and report their status; controllers creating and deleting pods;
//! users reading. Every `stale_every` events one kubelet
//! relists from the third API server, whose cache is behind, and is shown a
//! pod deleted since: the findings the analysis must make, at a known rate.
//!
//! Deterministic: the same size gives the same bytes (a fixed-seed
//! xorshift, virtual times from a fixed start).

use std::io::{self, Write};

/// API servers (files).
pub const SERVERS: usize = 3;
/// Nodes, each with a kubelet.
pub const NODES: usize = 100;
/// One stale relist per this many events, in the benchmark's logs.
#[allow(dead_code, reason = "the benchmark uses it; the test that shares this module picks its own rate")]
pub const STALE_EVERY: u64 = 50_000;

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A live pod of the generated cluster.
#[derive(Clone)]
struct Pod {
    name: String,
    uid: String,
    node: usize,
    revision: u64,
}

/// What the generated logs hold.
pub struct Generated {
    /// Events written, per server.
    pub events: [u64; SERVERS],
    /// Stale relists injected (each a finding).
    pub stale: u64,
}

/// Writes `total` events as `SERVERS` logs, one stale relist every `stale_every`.
pub fn generate(total: u64, stale_every: u64, outs: &mut [Box<dyn Write>; SERVERS]) -> io::Result<Generated> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut revision: u64 = 100_000;
    let mut time_us: i64 = 1_714_564_800_000_000; // 2024-05-01T12:00:00Z
    let mut pods: Vec<Pod> = Vec::new();
    let mut deleted: Vec<Pod> = Vec::new();
    let mut serial: u64 = 0;
    let mut generated = Generated { events: [0; SERVERS], stale: 0 };
    let mut n: u64 = 0;
    while n < total {
        time_us += 37 + rng.below(40) as i64;
        n += 1;
        let server = rng.below(2) as usize; // the third server only serves the stale relists
        let line = if n.is_multiple_of(stale_every) && !deleted.is_empty() {
            // A kubelet relists from the lagging server and is shown a pod it deleted.
            let gone = deleted[rng.below(deleted.len() as u64) as usize].clone();
            generated.stale += 1;
            generated.events[2] += 1;
            let line = list(&gone, gone.revision.saturating_sub(1), time_us, n);
            writeln!(outs[2], "{line}")?;
            continue;
        } else {
            match rng.below(20) {
                // Node heartbeats: a kubelet renews its Lease.
                0..=5 => {
                    revision += 1;
                    let node = rng.below(NODES as u64) as usize;
                    lease(node, revision, time_us, n)
                }
                // A controller creates a pod, bound to a node.
                6..=7 => {
                    revision += 1;
                    serial += 1;
                    let pod = Pod {
                        name: format!("web-{serial:07}"),
                        uid: format!("{:08x}-7c1e-4d2a-9f0b-{serial:012x}", rng.next() >> 32),
                        node: rng.below(NODES as u64) as usize,
                        revision,
                    };
                    pods.push(pod.clone());
                    create(&pod, time_us, n)
                }
                // The kubelet reports a pod's status, naming the version it read.
                8..=10 if !pods.is_empty() => {
                    revision += 1;
                    let i = rng.below(pods.len() as u64) as usize;
                    let read = pods[i].revision;
                    pods[i].revision = revision;
                    status(&pods[i], read, time_us, n)
                }
                // A pod goes away (its kubelet confirms the deletion).
                11 if pods.len() > 200 => {
                    revision += 1;
                    let mut pod = pods.swap_remove(rng.below(pods.len() as u64) as usize);
                    pod.revision = revision;
                    let line = delete(&pod, time_us, n);
                    deleted.push(pod);
                    if deleted.len() > 1000 {
                        deleted.remove(0);
                    }
                    line
                }
                // Watches.
                12..=14 => watch(rng.below(NODES as u64) as usize, revision, time_us, n),
                // Fresh relists of a node's pods.
                15 => {
                    let node = rng.below(NODES as u64) as usize;
                    let mine: Vec<&Pod> = pods.iter().filter(|p| p.node == node).take(20).collect();
                    fresh_list(node, &mine, revision, time_us, n)
                }
                // Everything else: gets at Metadata.
                _ => get(rng.below(NODES as u64) as usize, time_us, n),
            }
        };
        generated.events[server] += 1;
        writeln!(outs[server], "{line}")?;
    }
    for out in outs.iter_mut() {
        out.flush()?;
    }
    Ok(generated)
}

fn stamp(t: i64) -> String {
    let secs = t / 1_000_000;
    let micros = t % 1_000_000;
    let day = secs % 86_400;
    format!("2024-05-01T{:02}:{:02}:{:02}.{micros:06}Z", day / 3600, (day / 60) % 60, day % 60)
}

/// Who makes a request: user name, groups (as JSON strings), user agent.
struct Who<'a>(&'a str, &'a str, &'a str);

fn head(verb: &str, uri: &str, who: Who<'_>, level: &str, stage: &str, n: u64) -> String {
    let Who(user, groups, agent) = who;
    format!(
        r#""kind":"Event","apiVersion":"audit.k8s.io/v1","level":"{level}","auditID":"5b0f{n:08x}-7c1e-4d2a-9f0b-00000000{n:04x}","stage":"{stage}","requestURI":"{uri}","verb":"{verb}","user":{{"username":"{user}","groups":[{groups}]}},"sourceIPs":["10.0.{}.{}"],"userAgent":"{agent}""#,
        n % 200,
        n % 250
    )
}

fn times(t: i64) -> String {
    format!(
        r#""requestReceivedTimestamp":"{}","stageTimestamp":"{}","annotations":{{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#,
        stamp(t - 900),
        stamp(t)
    )
}

const KUBELET: &str = "kubelet/v1.30.2 (linux/amd64) kubernetes/3968350";
const NODES_GROUPS: &str = r#""system:nodes","system:authenticated""#;

fn node_user(node: usize) -> String {
    format!("system:node:node-{node:03}")
}

fn pod_json(p: &Pod, revision: u64) -> String {
    format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{}","namespace":"default","uid":"{}","resourceVersion":"{revision}","labels":{{"app":"web"}}}},"spec":{{"nodeName":"node-{:03}","containers":[{{"name":"web","image":"nginx:1.25"}}]}},"status":{{"phase":"Running"}}}}"#,
        p.name, p.uid, p.node
    )
}

fn lease(node: usize, revision: u64, t: i64, n: u64) -> String {
    let uri = format!("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-{node:03}");
    format!(
        r#"{{{},"objectRef":{{"resource":"leases","namespace":"kube-node-lease","name":"node-{node:03}","apiGroup":"coordination.k8s.io","apiVersion":"v1","resourceVersion":"{}"}},"responseStatus":{{"metadata":{{}},"code":200}},"responseObject":{{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{{"name":"node-{node:03}","namespace":"kube-node-lease","resourceVersion":"{revision}"}},"spec":{{"holderIdentity":"node-{node:03}","leaseDurationSeconds":40,"renewTime":"{}"}}}},{}}}"#,
        head("update", &uri, Who(&node_user(node), NODES_GROUPS, KUBELET), "RequestResponse", "ResponseComplete", n),
        revision - 1,
        stamp(t),
        times(t)
    )
}

fn create(p: &Pod, t: i64, n: u64) -> String {
    format!(
        r#"{{{},"objectRef":{{"resource":"pods","namespace":"default","name":"{}","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":201}},"responseObject":{},{}}}"#,
        head(
            "create",
            "/api/v1/namespaces/default/pods",
            Who(
                "system:serviceaccount:kube-system:replicaset-controller",
                r#""system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated""#,
                "kube-controller-manager/v1.30.2 (linux/amd64) kubernetes/3968350/system:serviceaccount:kube-system:replicaset-controller",
            ),
            "RequestResponse",
            "ResponseComplete",
            n
        ),
        p.name,
        pod_json(p, p.revision),
        times(t)
    )
}

fn status(p: &Pod, read: u64, t: i64, n: u64) -> String {
    let uri = format!("/api/v1/namespaces/default/pods/{}/status", p.name);
    format!(
        r#"{{{},"objectRef":{{"resource":"pods","namespace":"default","name":"{}","uid":"{}","apiVersion":"v1","resourceVersion":"{read}","subresource":"status"}},"responseStatus":{{"metadata":{{}},"code":200}},"responseObject":{},{}}}"#,
        head("update", &uri, Who(&node_user(p.node), NODES_GROUPS, KUBELET), "RequestResponse", "ResponseComplete", n),
        p.name,
        p.uid,
        pod_json(p, p.revision),
        times(t)
    )
}

fn delete(p: &Pod, t: i64, n: u64) -> String {
    let uri = format!("/api/v1/namespaces/default/pods/{}", p.name);
    format!(
        r#"{{{},"objectRef":{{"resource":"pods","namespace":"default","name":"{}","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":200}},"requestObject":{{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,"preconditions":{{"uid":"{}"}}}},"responseObject":{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{}","namespace":"default","uid":"{}","resourceVersion":"{}","deletionTimestamp":"{}","deletionGracePeriodSeconds":0}}}},{}}}"#,
        head("delete", &uri, Who(&node_user(p.node), NODES_GROUPS, KUBELET), "RequestResponse", "ResponseComplete", n),
        p.name,
        p.uid,
        p.name,
        p.uid,
        p.revision,
        stamp(t),
        times(t)
    )
}

fn watch(node: usize, revision: u64, t: i64, n: u64) -> String {
    let uri = format!(
        "/api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dnode-{node:03}&resourceVersion={revision}&timeoutSeconds=412&watch=true"
    );
    format!(
        r#"{{{},"objectRef":{{"resource":"pods","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":200}},{}}}"#,
        head("watch", &uri, Who(&node_user(node), NODES_GROUPS, KUBELET), "Metadata", "ResponseStarted", n),
        times(t)
    )
}

fn list_event(node: usize, items: &str, revision: u64, t: i64, n: u64) -> String {
    let uri = format!("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-{node:03}&limit=500&resourceVersion=0");
    format!(
        r#"{{{},"objectRef":{{"resource":"pods","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":200}},"responseObject":{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{revision}"}},"items":[{items}]}},{}}}"#,
        head("list", &uri, Who(&node_user(node), NODES_GROUPS, KUBELET), "RequestResponse", "ResponseComplete", n),
        times(t)
    )
}

fn fresh_list(node: usize, pods: &[&Pod], revision: u64, t: i64, n: u64) -> String {
    let items: Vec<String> = pods.iter().map(|p| pod_json(p, p.revision)).collect();
    list_event(node, &items.join(","), revision, t, n)
}

/// The stale relist: the gone pod, at the revision before its deletion.
fn list(gone: &Pod, revision: u64, t: i64, n: u64) -> String {
    list_event(gone.node, &pod_json(gone, revision), revision, t, n)
}

fn get(node: usize, t: i64, n: u64) -> String {
    let uri = format!("/api/v1/nodes/node-{node:03}");
    format!(
        r#"{{{},"objectRef":{{"resource":"nodes","name":"node-{node:03}","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":200}},{}}}"#,
        head(
            "get",
            &uri,
            Who(
                "kubernetes-admin",
                r#""kubeadm:cluster-admins","system:authenticated""#,
                "kubectl/v1.30.2 (linux/amd64) kubernetes/3968350",
            ),
            "Metadata",
            "ResponseComplete",
            n
        ),
        times(t)
    )
}
