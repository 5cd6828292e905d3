//! `recon audit`: a real cluster's audit logs checked for stale reads, and
//! `recon run --audit-log`: a simulated run written as audit logs. The
//! work is `recon-audit`'s; this is the command line around it.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use recon_audit::{LogFile, Progress, ReadOptions, Report, analyze};

use crate::progress;
use crate::whole::WholeFile;

/// What `recon audit` was asked.
pub struct Args {
    /// Log files, or directories of them, each named by its file.
    pub files: Vec<PathBuf>,
    /// `NAME=FILE`: a log with its API server's name.
    pub servers: Vec<String>,
    /// Print the report as JSON.
    pub json: bool,
    /// Print progress on standard error even when it is not a terminal.
    pub progress: bool,
    /// Also write a scenario replaying the logs here.
    pub scenario: Option<PathBuf>,
}

/// Runs `recon audit`: exit 1 when a stale read was acted on, 0 when none
/// was, 2 when some input was bad (the report is printed all the same).
pub fn audit(args: Args) -> ExitCode {
    let files = match inputs(&args) {
        Ok(files) => files,
        Err(message) => return crate::bad_input(message),
    };
    let mut shown = progress::Progress::new(progress::Show::asked(args.progress));
    let on_progress = |p: Progress| shown.tick(|_| format!("read {} events, {} MB", p.events, p.bytes >> 20));
    let report = analyze(&files, &ReadOptions::default(), on_progress);
    shown.finish(|seconds| format!("read {} events from {} log(s) in {seconds:.1} s", report.events, files.len()));
    if args.json {
        say!("{}", report.to_json());
    } else {
        say!("{}", report.text().trim_end());
    }
    if let Some(out) = &args.scenario
        && let Err(message) = write_scenario(&files, out)
    {
        return crate::bad_input(message);
    }
    exit_status(&report)
}

/// Writes the scenario that replays the logs (a second reading of them,
/// with their bodies), says on standard error what could not be carried
/// over, and checks that the scenario loads as `recon run` would load it.
fn write_scenario(files: &[LogFile], out: &Path) -> Result<(), String> {
    let replay =
        recon_audit::replay(files, &ReadOptions::default()).map_err(|e| format!("recon audit --scenario: {e}"))?;
    let text = replay.to_yaml();
    std::fs::write(out, &text).map_err(|e| format!("{}: cannot write the scenario: {e}", out.display()))?;
    eprintln!(
        "scenario {}: {} object(s), {} component(s), {} script step(s)",
        out.display(),
        replay.scenario.objects.len(),
        replay.scenario.components.len(),
        replay.scenario.script.len()
    );
    for note in &replay.notes {
        eprintln!("not carried over: {note}");
    }
    for p in &replay.plugins_needed {
        eprintln!(
            "component {}: no built-in controller recognised for {}; run with --plugin {}=YOUR.wasm",
            p.component, p.client, p.component
        );
    }
    // The scenario is written even when it does not load, so that it can be fixed by hand.
    recon_scenario::parse(&out.display().to_string(), &text).map(|_| ()).map_err(|e| {
        format!(
            "{e}\n{}: written, but it does not load (above); edit it or report the logs that made it",
            out.display()
        )
    })
}

fn exit_status(report: &Report) -> ExitCode {
    if report.problems.any() {
        eprintln!(
            "bad input: {} line(s) skipped, {} file(s) refused (each named with its line in the report)",
            report.problems.skipped_lines,
            report.problems.refused_files.len()
        );
        return ExitCode::from(2);
    }
    if report.acted_on_stale_read { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// The logs to read: each file named by its stem (a directory gives its
/// log files, sorted), then each `--server NAME=FILE`. Two logs named
/// alike by their files is an error (their servers would be mixed up);
/// `--server` may name several files (rotated logs) for one server.
fn inputs(args: &Args) -> Result<Vec<LogFile>, String> {
    let mut files = Vec::new();
    for path in &args.files {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("{}: cannot read the directory: {e}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && is_log_name(p))
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(format!("{}: no audit logs in it (*.jsonl, *.json, *.log, *.gz)", path.display()));
            }
            files.extend(found.into_iter().map(LogFile::named_by_stem));
        } else {
            files.push(LogFile::named_by_stem(path.clone()));
        }
    }
    if let Some((a, b)) = recon_audit::input::same_server(&files) {
        return Err(format!(
            "{} and {} are both named {:?} by their file names; name them with --server NAME=FILE",
            a.path.display(),
            b.path.display(),
            b.server
        ));
    }
    for s in &args.servers {
        let (name, path) = s
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
            .ok_or_else(|| format!("--server {s:?}: expected NAME=FILE"))?;
        files.push(LogFile { server: name.to_string(), path: PathBuf::from(path) });
    }
    if files.is_empty() {
        return Err("recon audit: no log to read; give FILE... or --server NAME=FILE".to_string());
    }
    Ok(files)
}

fn is_log_name(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    [".jsonl", ".json", ".log", ".gz"].iter().any(|ext| name.ends_with(ext))
}

/// Writes a run's audit logs into `dir` (created if missing), one
/// `<api-server>.jsonl` per API server, with the objects' bodies from the
/// run's store, and says so on standard error. Each log is written line
/// by line as it is made (a 1,000-node run's are 430 MB), and the logs
/// are put in place only once all are written to disk
/// ([`WholeFile::commit_all`]): a write that fails leaves the directory's
/// files as they were.
pub fn write_logs(dir: &Path, sim: &recon_sim::Sim) -> Result<(), String> {
    let cannot = |path: &Path, e: std::io::Error| format!("{}: cannot write the audit log: {e}", path.display());
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create the directory: {e}", dir.display()))?;
    let trace = sim.trace();
    let mut logs: Vec<Log> = Vec::new();
    for server in recon_audit::api_servers(trace) {
        let path = dir.join(format!("{server}.jsonl"));
        match WholeFile::create(&path) {
            Ok(file) => logs.push(Log { path, writer: BufWriter::with_capacity(1 << 20, file), events: 0 }),
            Err(e) => {
                logs.into_iter().for_each(Log::abandon);
                return Err(cannot(&path, e));
            }
        }
    }
    // Each write's object, as the store committed it, fills the bodies.
    let store = sim.store();
    let objects = |revision| store.event(revision).map(|e| (*e.value).clone());
    let written = recon_audit::write_audit_logs(trace, &sim.kinds(), &objects, &mut |server, line| {
        let log = &mut logs[server];
        log.events += 1;
        writeln!(log.writer, "{line}").map_err(|e| cannot(&log.path, e))
    })
    .and_then(|()| logs.iter_mut().try_for_each(|log| log.writer.flush().map_err(|e| cannot(&log.path, e))));
    if let Err(message) = written {
        logs.into_iter().for_each(Log::abandon);
        return Err(message);
    }
    let said: Vec<String> =
        logs.iter().map(|log| format!("audit log {} ({} event(s))", log.path.display(), log.events)).collect();
    WholeFile::commit_all(logs.into_iter().map(|log| log.writer.into_parts().0).collect())
        .map_err(|(path, e)| cannot(&path, e))?;
    said.iter().for_each(|line| eprintln!("{line}"));
    Ok(())
}

/// One API server's log being written.
struct Log {
    path: PathBuf,
    writer: BufWriter<WholeFile>,
    events: usize,
}

impl Log {
    fn abandon(self) {
        self.writer.into_parts().0.abandon();
    }
}
