//! A real cluster's audit logs, read in the worker ([`ToWorker::Audit`]):
//! `recon_audit::timeline_of` on the files the visitor picked or dropped,
//! read where they are, a slice at a time (the worker gets the files as
//! readers, [`AuditLog`]); the answer is the history as a trace the page's
//! timeline draws, with each finding's explanation, as `recon audit`
//! finds them. Plain Rust: the tests read logs from memory.
//!
//! [`ToWorker::Audit`]: recon_web_protocol::ToWorker::Audit

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read};
use std::rc::Rc;

use recon_audit::{LogFile, ReadOptions};
use recon_web_protocol::FromWorker;

use crate::runner::{PROGRESS_EVERY_MS, Progress};

/// How much of a file is asked for at a time: in the browser each read is
/// a call out to JavaScript, so few large ones.
const READ_CHUNK: usize = 1 << 20;

/// An audit log handed to the worker.
pub struct AuditLog {
    /// The file's name (its stem names the API server, as `recon audit` does).
    pub name: String,
    /// Its size in bytes, as stored (for progress).
    pub size: u64,
    /// Its contents, plain or gzip.
    pub input: Box<dyn Read>,
}

/// Reads the logs and draws them: [`FromWorker::Audited`], or `Failed`
/// when there is nothing to draw (no file, two files named alike, no
/// readable event: the message names each bad file and line). Progress is
/// reported through `progress` as it reads.
pub fn audit(id: u64, logs: Vec<AuditLog>, progress: &mut dyn Progress) -> FromWorker {
    let failed = |error: String| FromWorker::Failed { id, component: None, error };
    if logs.is_empty() {
        return failed("No audit log was given: pick or drop one file per API server.".into());
    }
    let files: Vec<LogFile> = logs.iter().map(|log| LogFile::named_by_stem(&log.name)).collect();
    if let Some((a, b)) = recon_audit::input::same_server(&files) {
        return failed(format!(
            "{} and {} are both named {:?} by their file names, and each file is one API server's log: rename \
             one of them",
            a.path.display(),
            b.path.display(),
            b.server
        ));
    }
    let total_bytes = logs.iter().map(|log| log.size).sum();
    // What the readers have taken from the files, counted as they go.
    let read = Rc::new(Cell::new(0u64));
    let inputs: Vec<Box<dyn BufRead>> = logs
        .into_iter()
        .map(|log| {
            let counted = Counted { input: log.input, read: Rc::clone(&read) };
            Box::new(BufReader::with_capacity(READ_CHUNK, counted)) as Box<dyn BufRead>
        })
        .collect();
    let started = progress.now_ms();
    let mut last_report = started;
    let drawn = recon_audit::timeline_of(&files, inputs, &ReadOptions::default(), |p| {
        let now = progress.now_ms();
        if now - last_report >= PROGRESS_EVERY_MS {
            last_report = now;
            progress.report(FromWorker::AuditProgress { id, events: p.events, bytes: read.get(), total_bytes });
        }
    });
    let report = &drawn.report;
    let problems = report.problems.text();
    if report.events == 0 {
        let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
        let why = if problems.is_empty() { "they are empty.".to_owned() } else { problems };
        return failed(format!("No audit event could be read from {}: {why}", names.join(", ")));
    }
    FromWorker::Audited {
        id,
        hash: drawn.trace.hash(),
        wall_ms: progress.now_ms() - started,
        summary: report.headline(),
        unjudged: report.cannot_judge.iter().map(ToString::to_string).collect(),
        problems,
        explanations: drawn.explanations,
        trace: drawn.trace,
    }
}

/// A reader that adds what it reads to a shared count.
struct Counted {
    input: Box<dyn Read>,
    read: Rc<Cell<u64>>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.input.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recon_trace::{Event, LaneRole};

    /// A clock that moves a second per look, so every chance to report is taken.
    struct Collect {
        now: f64,
        messages: Vec<FromWorker>,
    }

    impl Progress for Collect {
        fn now_ms(&mut self) -> f64 {
            self.now += 1_000.0;
            self.now
        }
        fn report(&mut self, message: FromWorker) {
            self.messages.push(message);
        }
    }

    fn collect() -> Collect {
        Collect { now: 0.0, messages: Vec::new() }
    }

    fn log(name: &str, bytes: Vec<u8>) -> AuditLog {
        AuditLog { name: name.into(), size: bytes.len() as u64, input: Box::new(std::io::Cursor::new(bytes)) }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, bytes).unwrap();
        gz.finish().unwrap()
    }

    /// The #59848 run (the library's default scenario), as its API servers'
    /// audit logs: `(server, text)`.
    fn logs_of_59848() -> Vec<(String, String)> {
        let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
        let scenario = recon_scenario::parse("default.yaml", library.yaml).unwrap();
        let mut sim = recon_sim::Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).unwrap();
        sim.run();
        recon_audit::audit_logs(sim.trace(), &sim.kinds()).unwrap().into_iter().map(|l| (l.server, l.text)).collect()
    }

    /// Issue 18: the #59848 logs, one of them gzipped, are drawn as
    /// `recon audit` reads them (the same trace as the audit crate's own
    /// reading, so the same hash the CLI's logs give), with a lane per API
    /// server and per client, the kubelet's stale list and its findings.
    #[test]
    fn the_59848_logs_are_drawn_with_their_stale_list_and_its_findings_explained() {
        let texts = logs_of_59848();
        let logs = texts
            .iter()
            .map(|(server, text)| match server.as_str() {
                "apiserver-2" => log(&format!("{server}.jsonl.gz"), gzip(text.as_bytes())),
                _ => log(&format!("{server}.log"), text.clone().into_bytes()),
            })
            .collect();
        let mut out = collect();
        let FromWorker::Audited { id, hash, trace, explanations, summary, problems, .. } = audit(4, logs, &mut out)
        else {
            panic!("the logs are drawn")
        };
        assert_eq!(id, 4);
        assert_eq!(hash, trace.hash());
        assert!(problems.is_empty(), "{problems}");
        assert!(summary.contains("in 2 log(s)"), "{summary}");
        for lane in ["apiserver-1", "apiserver-2 cache", "kubelet-node-1", "scheduler", "statefulset-controller"] {
            assert!(trace.lane_named(lane).is_some(), "no lane {lane}: {:?}", trace.lanes);
        }
        let kubelet = trace.lane_named("kubelet-node-1").unwrap();
        assert!(matches!(trace.lane(kubelet).role, LaneRole::NodeAgent { .. }));
        let stale: Vec<_> = trace.entries.iter().filter(|e| e.event.is_stale_read()).collect();
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert!(matches!(&stale[0].event, Event::ListServed(list) if list.api_server == "apiserver-2"));
        assert!(!explanations.is_empty());
        assert!(explanations.iter().all(|x| x.steps.iter().any(|s| s.entry == stale[0].id)), "{explanations:?}");
        // The audit crate's own reading of the same text gives the same trace.
        let files: Vec<LogFile> =
            texts.iter().map(|(server, _)| LogFile::named_by_stem(format!("{server}.log"))).collect();
        let inputs = texts
            .iter()
            .map(|(_, text)| Box::new(std::io::Cursor::new(text.clone().into_bytes())) as Box<dyn BufRead>)
            .collect();
        let direct = recon_audit::timeline_of(&files, inputs, &ReadOptions::default(), |_| {});
        assert_eq!(direct.trace.hash(), hash);
    }

    /// A list event of the audit format, `n` milliseconds in.
    fn list_event(n: u64) -> String {
        format!(
            r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a{n}","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{{"username":"u"}},"userAgent":"t","responseStatus":{{"code":200}},"stageTimestamp":"2024-05-01T12:00:{:02}.{:03}000Z"}}"#,
            n / 1000 % 60,
            n % 1000
        )
    }

    #[test]
    fn a_long_log_reports_how_far_it_has_read() {
        let text: String = (0..2_500).map(|n| list_event(n) + "\n").collect();
        let size = text.len() as u64;
        let mut out = collect();
        let answer = audit(9, vec![log("apiserver-1.log", text.into_bytes())], &mut out);
        assert!(matches!(answer, FromWorker::Audited { id: 9, .. }), "{answer:?}");
        let reports: Vec<(u64, u64, u64)> = out
            .messages
            .iter()
            .map(|m| match m {
                FromWorker::AuditProgress { id: 9, events, bytes, total_bytes } => (*events, *bytes, *total_bytes),
                other => panic!("not progress: {other:?}"),
            })
            .collect();
        assert_eq!(reports.iter().map(|r| r.0).collect::<Vec<_>>(), [1_000, 2_000]);
        assert!(reports.iter().all(|r| r.1 > 0 && r.1 <= size && r.2 == size), "{reports:?}");
    }

    /// Bad input is named at its file and line; what can be read is drawn.
    #[test]
    fn a_bad_line_is_named_and_the_rest_is_drawn() {
        let text = format!("{}\nthis is not json\n{}\n", list_event(1), list_event(2));
        let answer = audit(2, vec![log("apiserver-1.log", text.into_bytes())], &mut collect());
        let FromWorker::Audited { problems, summary, .. } = answer else { panic!("drawn: {answer:?}") };
        assert!(problems.contains("apiserver-1.log:2: not JSON"), "{problems}");
        assert!(summary.starts_with("2 event(s) in 1 log(s)"), "{summary}");
    }

    #[test]
    fn logs_with_nothing_readable_fail_naming_the_file_and_line() {
        let logs = vec![log("broken.log", b"{\"kind\": \"Event\"\n".to_vec()), log("empty.log", Vec::new())];
        let FromWorker::Failed { id, error, .. } = audit(3, logs, &mut collect()) else { panic!("nothing to draw") };
        assert_eq!(id, 3);
        assert!(error.starts_with("No audit event could be read from broken.log, empty.log"), "{error}");
        assert!(error.contains("broken.log:1: the line ends before its event does"), "{error}");
    }

    #[test]
    fn two_files_of_one_server_name_are_refused_before_reading() {
        let logs = vec![log("a.log", Vec::new()), log("a.jsonl.gz", Vec::new())];
        let FromWorker::Failed { error, .. } = audit(1, logs, &mut collect()) else { panic!("refused") };
        assert!(error.starts_with("a.log and a.jsonl.gz are both named \"a\""), "{error}");
        let FromWorker::Failed { error, .. } = audit(1, Vec::new(), &mut collect()) else { panic!("refused") };
        assert!(error.starts_with("No audit log was given"), "{error}");
    }
}
