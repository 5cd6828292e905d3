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

use crate::message::Reply;
use recon_trace::EntryId;

/// A candidate's election state; one per process lifetime (a restart
/// begins a new candidacy). Whether it leads is the process's state (see
/// `component::Process`): a leading process runs its controller.
#[derive(Clone, Debug)]
pub(crate) struct Candidacy {
    /// As the scenario configures it.
    pub config: LeaderElection,
    /// The Lease record last read (holder, resourceVersion), and when it
    /// was first seen that way.
    observed: Option<(String, String)>,
    observed_at: u64,
    /// When this process last wrote itself into the Lease.
    renewed_at: Option<u64>,
    /// A read or write is outstanding: the next tick waits for it.
    busy: bool,
}

/// What a tick asks of the process.
pub(crate) enum Tick {
    /// It has not renewed for `renewDeadline`: it stops leading (and exits).
    StepDown {
        /// The Lease.
        lease: String,
        /// The deadline it missed, in ms.
        deadline: u64,
    },
    /// Read the Lease (and tick again after `retryPeriod`).
    Read(ObjectKey),
    /// A request is outstanding: only tick again.
    Wait,
}

/// What an answer from the API server asks of the process.
#[allow(
    clippy::large_enum_variant,
    reason = "made and matched once per Lease reply; boxing would only add an allocation"
)]
pub(crate) enum Answer {
    /// Write the Lease.
    Write(Action),
    /// It wrote itself into the Lease: it leads from that write on.
    Won(EntryId),
    /// Nothing (someone else holds it, a lost race, an unreachable store).
    Nothing,
}

impl Candidacy {
    /// A fresh candidate.
    pub fn new(config: LeaderElection) -> Candidacy {
        Candidacy { config, observed: None, observed_at: 0, renewed_at: None, busy: false }
    }

    /// The Lease it competes for.
    pub fn lease_key(&self) -> ObjectKey {
        ObjectKey::new("Lease", &self.config.namespace, &self.config.lease)
    }

    /// The periodic attempt; `leading` is whether the process leads now.
    pub fn tick(&mut self, now: u64, leading: bool) -> Tick {
        let deadline = self.config.renew_deadline.0;
        if leading && self.renewed_at.is_some_and(|t| now.saturating_sub(t) > deadline) {
            return Tick::StepDown { lease: self.config.lease.clone(), deadline };
        }
        if std::mem::replace(&mut self.busy, true) {
            return Tick::Wait;
        }
        Tick::Read(self.lease_key())
    }

    /// The Lease read or write came back. Expiry is judged by this
    /// candidate's own clock: the record has not changed for
    /// `leaseDuration` since it first saw it this way.
    pub fn answer(&mut self, now: u64, identity: &str, leading: bool, reply: Reply) -> Answer {
        self.busy = false;
        let duration = self.config.lease_duration.0;
        let write = match reply {
            Reply::Read(served) => {
                let Some(lease) = served.objects.into_iter().next() else { return Answer::Nothing };
                let record = (holder(&lease), lease.metadata.resource_version.clone());
                if self.observed.as_ref() != Some(&record) {
                    self.observed = Some(record.clone());
                    self.observed_at = now;
                }
                let (current, _) = record;
                let expired = now.saturating_sub(self.observed_at) >= duration;
                if current == identity || current.is_empty() || expired {
                    let mut lease = std::sync::Arc::unwrap_or_clone(lease);
                    let transitions = lease.spec.get("leaseTransitions").and_then(Value::as_u64).unwrap_or(0);
                    if current != identity {
                        lease.spec["acquireTime"] = json!(micro_time(now));
                        lease.spec["leaseTransitions"] = json!(transitions + 1);
                    }
                    lease.spec["holderIdentity"] = json!(identity);
                    lease.spec["leaseDurationSeconds"] = json!(duration.div_ceil(1000));
                    lease.spec["renewTime"] = json!(micro_time(now));
                    Action::Update { object: lease, dry_run: false }
                } else {
                    if leading {
                        // Someone else holds it: this process was deposed.
                        self.renewed_at = Some(0);
                    }
                    return Answer::Nothing;
                }
            }
            Reply::Failed(status) if status.reason == StatusReason::NotFound => {
                let key = self.lease_key();
                let mut lease = Object {
                    api_version: "coordination.k8s.io/v1".into(),
                    kind: "Lease".into(),
                    metadata: ObjectMeta { name: key.name, namespace: key.namespace, ..Default::default() },
                    spec: json!({}).into(),
                    status: Default::default(),
                    other: Default::default(),
                };
                lease.spec["holderIdentity"] = json!(identity);
                lease.spec["leaseDurationSeconds"] = json!(duration.div_ceil(1000));
                lease.spec["acquireTime"] = json!(micro_time(now));
                lease.spec["renewTime"] = json!(micro_time(now));
                lease.spec["leaseTransitions"] = json!(0);
                Action::Create { object: lease, dry_run: false }
            }
            Reply::Written { outcome: Outcome::Ok(_), entry, .. } => {
                self.renewed_at = Some(now);
                return Answer::Won(entry);
            }
            // A lost race for the Lease, or an API server that cannot reach
            // etcd: try again at the next tick.
            _ => return Answer::Nothing,
        };
        self.busy = true;
        Answer::Write(write)
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
