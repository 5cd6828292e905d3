//! What the simulator's integration tests share.

use recon_abi::{Action, Object, Outcome, Status};
use recon_sim::api::Request;
use recon_sim::{Reply, Sim};

/// Sends `action` to apiserver-1 at `at`, runs 100 ms more, and returns
/// the one answer.
pub fn write(sim: &mut Sim, at: u64, action: Action) -> Result<Option<Object>, Status> {
    sim.run_until(at);
    let id = sim.request("apiserver-1", Request::Write(action)).unwrap();
    sim.run_until(at + 100);
    match sim.responses(id) {
        [Reply::Written { outcome: Outcome::Ok(object), .. }] => Ok(object.clone()),
        [Reply::Written { outcome: Outcome::Err(status), .. }] => Err(status.clone()),
        other => panic!("expected one write result, got {other:?}"),
    }
}
