//! The example Kubernetes Indexed Job in `deploy/`: its arguments are a
//! real `recon explore` command line, and its shards find the violation.

// The same scratch directories as recon-audit's tests.
#[path = "../../audit/tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use support::Scratch;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(root().join("deploy/explore-indexed-job.yaml")).unwrap();
    serde_saphyr::from_str(&text).expect("the manifest is valid YAML")
}

#[test]
fn the_indexed_job_manifest_runs_every_shard_and_finds_the_violation() {
    let job = manifest();
    assert_eq!((job["apiVersion"].as_str(), job["kind"].as_str()), (Some("batch/v1"), Some("Job")));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let shards = spec["completions"].as_u64().expect("completions");
    assert_eq!(spec["parallelism"].as_u64(), Some(shards), "one pod per shard at once");
    // Exit 1 (found) and 2 (bad input) end the whole Job.
    let rule = &spec["podFailurePolicy"]["rules"][0];
    assert_eq!(rule["action"], "FailJob");
    assert_eq!(rule["onExitCodes"]["values"], serde_json::json!([1, 2]));
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never", "a pod failure policy needs restartPolicy Never");
    let container = &pod["containers"][0];
    assert_eq!(rule["onExitCodes"]["containerName"], container["name"]);
    assert_eq!(container["command"], serde_json::json!(["recon"]));
    let env = &container["env"][0];
    assert_eq!(env["name"], "SHARD");
    assert_eq!(
        env["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let args: Vec<String> =
        container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let shard_arg = args.iter().position(|a| a == "--shard").expect("--shard") + 1;
    assert_eq!(args[shard_arg], format!("$(SHARD)/{shards}"), "--shard agrees with completions");

    // Run each pod's command line here, as Kubernetes would expand it, with
    // the image's paths mapped into this checkout.
    let scratch = Scratch::of_this_test();
    let out = scratch.path();
    let mut found = 0;
    for index in 0..shards {
        let local: Vec<String> = args
            .iter()
            .map(|a| {
                a.replace("$(SHARD)", &index.to_string())
                    .replace("/scenarios/", &format!("{}/scenarios/", root().display()))
                    .replace("/results/", &format!("{}/", out.display()))
            })
            .collect();
        let run = Command::new(env!("CARGO_BIN_EXE_recon")).args(&local).output().expect("recon runs");
        let stdout = String::from_utf8_lossy(&run.stdout);
        match run.status.code() {
            Some(0) => assert!(stdout.contains("No violation found"), "{stdout}"),
            Some(1) => {
                found += 1;
                let written = out.join(format!("found-{index}.yaml"));
                let text = std::fs::read_to_string(&written).expect("a finding is written where the Job says");
                let scenario = recon_scenario::parse(&written.display().to_string(), &text).expect("valid");
                assert!(!scenario.expect.violations.is_empty(), "the written scenario expects its violation");
                // And replays it.
                let replay = Command::new(env!("CARGO_BIN_EXE_recon"))
                    .args(["run", "--expect", written.to_str().unwrap()])
                    .output()
                    .expect("recon runs");
                assert_eq!(replay.status.code(), Some(1), "the found scenario replays its violation");
            }
            other => panic!("shard {index}: exit {other:?}\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr)),
        }
    }
    assert!(found > 0, "the shards together find the #59848 violation");
}
