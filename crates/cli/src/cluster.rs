//! `recon cluster`: the scenario of a cluster of any size
//! (`recon_catalog::cluster`), on standard output or in a file.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::whole::WholeFile;

/// Writes the cluster of `nodes` nodes and `pods` pods to `output`, or to
/// standard output.
pub fn write(nodes: u64, pods: u64, output: Option<&Path>) -> ExitCode {
    if let Some(refusal) = recon_catalog::cluster::refusal(nodes, pods) {
        return crate::bad_input(refusal);
    }
    if !recon_catalog::cluster::within_published_limits(nodes, pods) {
        let (max_nodes, max_pods) = recon_catalog::cluster::PUBLISHED_LIMITS;
        eprintln!(
            "note: Kubernetes tests clusters up to {max_nodes} nodes and {max_pods} pods; this one is larger, \
             and its run may take minutes and gigabytes"
        );
    }
    let (Ok(nodes), Ok(pods)) = (usize::try_from(nodes), usize::try_from(pods)) else {
        return crate::bad_input("that cluster is too large for this machine's addresses");
    };
    let yaml = recon_catalog::cluster::yaml(nodes, pods);
    let Some(path) = output else {
        let mut out = std::io::stdout().lock();
        return match out.write_all(yaml.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => ExitCode::SUCCESS,
            // A reader that stops early (`| head`) ends the output quietly.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => crate::bad_input(format!("cannot write the scenario to standard output: {e}")),
        };
    };
    let failed = |e: std::io::Error| crate::bad_input(format!("cannot write the scenario to {}: {e}", path.display()));
    let mut file = match WholeFile::create(path) {
        Ok(file) => file,
        Err(e) => return failed(e),
    };
    if let Err(e) = file.write_all(yaml.as_bytes()) {
        file.abandon();
        return failed(e);
    }
    match file.commit() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failed(e),
    }
}
