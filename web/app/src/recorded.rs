//! The default scenario's first visit, recorded: the simulation worker's
//! answers to the page's first two requests (the run, then the inspection
//! of its headline violation), so that a first visit draws the timeline
//! without downloading the worker, the larger half of the playground. An
//! embed asks only for the run. The worker starts with the first request
//! that has no recording: any change, another scenario, an upload, a click
//! on another moment.
//!
//! The recording is the worker's own answer, byte for byte (but for the
//! wall-clock time, which it does not have: the page says "recorded"
//! instead). A test runs the worker's code natively on the requests the
//! page makes and fails when the recording differs, after a change to the
//! simulator, a controller or the default scenario; it then says how to
//! write it again (`RECON_BLESS=1`, as for the golden trace hashes).

use recon_web_protocol::{FromWorker, ToWorker};

/// The recording: pairs of lines, a request then the worker's answer,
/// both as JSON with request id 0. Written by this module's test.
const RECORDING: &str = include_str!("../recorded/first-visit.jsonl");

/// The recorded answer to `request`, under its id, if the page recorded
/// that request; `None` sends it to the worker.
pub fn answer(request: &ToWorker) -> Option<FromWorker> {
    let (id, wanted) = without_id(request)?;
    let mut lines = RECORDING.lines();
    while let (Some(asked), Some(answered)) = (lines.next(), lines.next()) {
        if asked == wanted {
            return serde_json::from_str(answered).ok().map(|answer| with_id(answer, id));
        }
    }
    None
}

/// The request's id and the request as recorded (JSON, id 0); `None` for
/// the requests that are never recorded.
fn without_id(request: &ToWorker) -> Option<(u64, String)> {
    let mut request = request.clone();
    let id = match &mut request {
        ToWorker::Run { id, .. } | ToWorker::Inspect { id, .. } => std::mem::take(id),
        _ => return None,
    };
    Some((id, serde_json::to_string(&request).ok()?))
}

/// The answer as it would be to the request numbered `id`.
fn with_id(mut answer: FromWorker, id: u64) -> FromWorker {
    match &mut answer {
        FromWorker::Progress { id: to, .. }
        | FromWorker::AuditProgress { id: to, .. }
        | FromWorker::Audited { id: to, .. }
        | FromWorker::Done { id: to, .. }
        | FromWorker::Snapshot { id: to, .. }
        | FromWorker::Checked { id: to, .. }
        | FromWorker::Entries { id: to, .. }
        | FromWorker::Failed { id: to, .. } => *to = id,
        FromWorker::Ready | FromWorker::Search(_) => {}
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::State;
    use recon_worker::runner::{Progress, Runner};

    /// The worker's answers, with a clock that never moves (so no progress
    /// reports) and without the wall-clock time, which a recording lacks.
    struct Answers(Vec<FromWorker>);

    impl Progress for Answers {
        fn now_ms(&mut self) -> f64 {
            0.0
        }
        fn report(&mut self, mut message: FromWorker) {
            if let FromWorker::Done { wall_ms, .. } = &mut message {
                *wall_ms = None;
            }
            self.0.push(message);
        }
    }

    /// What the worker answers to `request`: exactly one message.
    fn worker_answer(runner: &mut Runner, request: &ToWorker) -> FromWorker {
        let mut answers = Answers(Vec::new());
        runner.handle(request.clone(), &mut answers);
        assert_eq!(answers.0.len(), 1, "one answer to {request:?}");
        answers.0.pop().expect("one answer")
    }

    fn json(message: &FromWorker) -> String {
        serde_json::to_string(message).unwrap()
    }

    #[test]
    fn the_recording_is_what_the_worker_answers_to_a_first_visit_of_the_default_scenario() {
        // The page's first visit, as the page makes it: the run, then (not
        // in an embed) the inspection of the violation it selects.
        let mut state = State::library(recon_catalog::DEFAULT_SCENARIO).unwrap();
        let mut runner = Runner::new().unwrap();
        let (run, plugins) = state.run_request();
        assert!(plugins.is_empty());
        let ran = worker_answer(&mut runner, &run);
        let FromWorker::Done { hash, trace, .. } = &ran else { panic!("the default scenario runs: {ran:?}") };
        assert_eq!(&trace.hash(), hash);
        state.receive(ran.clone());
        let inspect = state.next_inspection().expect("a first visit inspects its headline violation");
        let inspected = worker_answer(&mut runner, &inspect);
        assert!(matches!(inspected, FromWorker::Snapshot { .. }), "{inspected:?}");

        let mut recording = String::new();
        for (request, answer) in [(&run, &ran), (&inspect, &inspected)] {
            let (_, request) = without_id(request).unwrap();
            recording += &format!("{request}\n{}\n", json(&with_id(answer.clone(), 0)));
        }
        if std::env::var_os("RECON_BLESS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/recorded/first-visit.jsonl");
            std::fs::write(path, &recording).unwrap();
            return;
        }
        assert!(
            RECORDING == recording,
            "the default scenario's first visit no longer gives the recorded answers (trace {hash}); if that is \
             intended, record it again with RECON_BLESS=1 cargo test -p recon-web recorded"
        );
        // The page finds each answer under the request's own id.
        assert_eq!(json(&answer(&run).expect("recorded")), json(&ran));
        assert_eq!(json(&answer(&inspect).expect("recorded")), json(&inspected));
    }

    #[test]
    fn only_the_recorded_requests_are_answered_without_the_worker() {
        let mut state = State::library(recon_catalog::DEFAULT_SCENARIO).unwrap();
        let (run, _) = state.run_request();
        assert!(answer(&run).is_some());
        // Another seed, another scenario: the worker runs them.
        state.current.scenario.seed += 1;
        assert!(answer(&state.run_request().0).is_none());
        let mut other = State::library("replicaset-flapping").unwrap();
        assert!(answer(&other.run_request().0).is_none());
        let ToWorker::Run { scenario, seed, .. } = run else { unreachable!() };
        assert!(answer(&ToWorker::Inspect { id: 3, scenario, seed, uploads: Vec::new(), at_ms: 1 }).is_none());
    }
}
