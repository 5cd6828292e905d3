//! Leader election through a Lease, run by the host for a component that
//! asks for it (`leaderElection` in the scenario), the way client-go's
//! `leaderelection` package runs it for kube-controller-manager.
//!
//! The controller knows nothing of it: its process starts as a candidate,
//! and only when the candidate wins the Lease does the controller start and
//! its reflectors list (from whatever cache its API server has). That is
//! why a new leader can work from an old cache: it wins on a fresh quorum
//! read of the Lease, then fills its informers with a stale list.
//!
//! Every `retryPeriod` the candidate reads the Lease (a quorum read, from
//! etcd) and writes itself in as holder with a compare-and-swap update when
//! the Lease is absent, its own, or expired. Expiry is judged by the
//! candidate's own clock, as in client-go: the record has not changed for
//! `leaseDuration` since the candidate first saw it this way. A leader that
//! has not renewed for `renewDeadline` stops leading, and its process exits
//! (and is restarted after a back-off), as kube-controller-manager does.

use recon_abi::{Action, Object, ObjectKey, ObjectMeta, Outcome, StatusReason};
use recon_scenario::LeaderElection;
use serde_json::{Value, json};

use crate::api::{GetRequest, Request};
use crate::message::Scheduled;
use crate::message::{Client, Reply};
use crate::world::Sim;
use recon_trace::{EntryId, Event};

/// A candidate's election state; one per process lifetime (a restart
/// begins a new candidacy).
#[derive(Clone, Debug)]
pub(crate) struct Candidacy {
    pub config: LeaderElection,
    /// Whether this process leads (its controller runs).
    pub leading: bool,
    /// The Lease record last read (holder, resourceVersion), and when it
    /// was first seen that way.
    observed: Option<(String, String)>,
    observed_at: u64,
    /// When this process last wrote itself into the Lease.
    renewed_at: Option<u64>,
    /// A read or write is outstanding: the next tick waits for it.
    busy: bool,
}

impl Candidacy {
    pub fn new(config: LeaderElection) -> Candidacy {
        Candidacy { config, leading: false, observed: None, observed_at: 0, renewed_at: None, busy: false }
    }
}

/// The Lease's holder, or "" if it has none.
fn holder(lease: &Object) -> String {
    lease.spec.get("holderIdentity").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Virtual time as a Kubernetes MicroTime (microsecond precision).
fn micro_time(ms: u64) -> String {
    let time = recon_abi::format_timestamp(ms);
    format!("{}000Z", time.trim_end_matches('Z'))
}

impl Sim {
    fn lease_key(&self, c: usize) -> Option<ObjectKey> {
        let e = &self.components[c].candidacy.as_ref()?.config;
        Some(ObjectKey::new("Lease", &e.namespace, &e.lease))
    }

    /// A candidate's periodic attempt: read the Lease from etcd, and give
    /// up leading if renewals have failed for too long.
    pub(crate) fn election_tick(&mut self, c: usize, epoch: u64) {
        let comp = &mut self.components[c];
        if comp.epoch != epoch {
            return;
        }
        let Some(candidacy) = comp.candidacy.as_mut() else { return };
        let retry = candidacy.config.retry_period.0;
        let deadline = candidacy.config.renew_deadline.0;
        if candidacy.leading && candidacy.renewed_at.is_some_and(|t| self.engine.now.saturating_sub(t) > deadline) {
            let lease = candidacy.config.lease.clone();
            let name = comp.spec.name.clone();
            let entry = self.engine.record(
                self.engine.lanes.components[c],
                Event::Leadership { component: name.clone(), lease: lease.clone(), leading: false },
                vec![],
            );
            let reason = format!("stopped leading: could not renew Lease {lease} for {deadline}ms");
            return self.controller_crashed(c, reason, vec![entry]);
        }
        let busy = std::mem::replace(&mut candidacy.busy, true);
        self.engine.schedule(self.engine.now + retry, Scheduled::ElectionTick { component: c, epoch });
        if busy {
            return;
        }
        let key = self.lease_key(c).expect("a candidacy has a Lease");
        let request = Request::Get(GetRequest { key, resource_version: None });
        self.send(c, Client::Elector { component: c, epoch }, request, None);
    }

    /// The Lease read or write came back.
    pub(crate) fn on_elector_reply(&mut self, c: usize, reply: Reply) {
        let now = self.engine.now;
        let epoch = self.components[c].epoch;
        let identity = self.components[c].spec.name.clone();
        let key = self.lease_key(c).expect("a candidacy has a Lease");
        let Some(candidacy) = self.components[c].candidacy.as_mut() else { return };
        candidacy.busy = false;
        let duration = candidacy.config.lease_duration.0;
        let write = match reply {
            Reply::Read(served) => {
                let Some(lease) = served.objects.into_iter().next() else { return };
                let record = (holder(&lease), lease.metadata.resource_version.clone());
                if candidacy.observed.as_ref() != Some(&record) {
                    candidacy.observed = Some(record.clone());
                    candidacy.observed_at = now;
                }
                let (current, _) = record;
                let expired = now.saturating_sub(candidacy.observed_at) >= duration;
                if current == identity || current.is_empty() || expired {
                    let mut lease = lease;
                    let transitions = lease.spec.get("leaseTransitions").and_then(Value::as_u64).unwrap_or(0);
                    if current != identity {
                        lease.spec["acquireTime"] = json!(micro_time(now));
                        lease.spec["leaseTransitions"] = json!(transitions + 1);
                    }
                    lease.spec["holderIdentity"] = json!(identity);
                    lease.spec["leaseDurationSeconds"] = json!(duration.div_ceil(1000));
                    lease.spec["renewTime"] = json!(micro_time(now));
                    Action::Update { object: lease }
                } else {
                    if candidacy.leading {
                        // Someone else holds it: this process was deposed.
                        candidacy.renewed_at = Some(0);
                    }
                    return;
                }
            }
            Reply::Failed(status) if status.reason == StatusReason::NotFound => {
                let mut lease = Object {
                    api_version: "coordination.k8s.io/v1".into(),
                    kind: "Lease".into(),
                    metadata: ObjectMeta {
                        name: key.name.clone(),
                        namespace: key.namespace.clone(),
                        ..Default::default()
                    },
                    spec: json!({}),
                    status: Value::Null,
                };
                lease.spec["holderIdentity"] = json!(identity);
                lease.spec["leaseDurationSeconds"] = json!(duration.div_ceil(1000));
                lease.spec["acquireTime"] = json!(micro_time(now));
                lease.spec["renewTime"] = json!(micro_time(now));
                lease.spec["leaseTransitions"] = json!(0);
                Action::Create { object: lease }
            }
            Reply::Written { outcome: Outcome::Ok(_), entry, .. } => return self.won_lease(c, entry),
            // A lost race for the Lease, or an API server that cannot reach
            // etcd: try again at the next tick.
            _ => return,
        };
        candidacy.busy = true;
        self.send(c, Client::Elector { component: c, epoch }, Request::Write(write), None);
    }

    /// This process wrote itself into the Lease: it leads, and its
    /// controller starts if it was not running yet.
    fn won_lease(&mut self, c: usize, entry: EntryId) {
        let now = self.engine.now;
        let Some(candidacy) = self.components[c].candidacy.as_mut() else { return };
        candidacy.renewed_at = Some(now);
        if std::mem::replace(&mut candidacy.leading, true) {
            return;
        }
        let lease = candidacy.config.lease.clone();
        let name = self.components[c].spec.name.clone();
        let won = self.engine.record(
            self.engine.lanes.components[c],
            Event::Leadership { component: name.clone(), lease, leading: true },
            vec![entry],
        );
        self.start_controller(c, won);
    }
}

#[cfg(test)]
mod tests {
    use super::micro_time;

    #[test]
    fn virtual_time_reads_as_a_microtime_from_the_epoch() {
        assert_eq!(micro_time(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(micro_time(5_500), "1970-01-01T00:00:05.500000Z");
        assert_eq!(micro_time(3_723_004), "1970-01-01T01:02:03.004000Z");
        assert_eq!(micro_time(86_400_000), "1970-01-02T00:00:00.000000Z");
    }
}
