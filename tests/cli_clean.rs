//! `cri-harness clean` next to a live run, as a user meets it: a run on an endpoint holds a
//! lease, so `clean` (with or without `--run-id`) leaves its objects alone and says so, while
//! `--force` removes them; a dead run's objects are removed; an interrupted run prints the
//! exact `clean` command for what it may have left.

use crate::support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use cri_harness::cri::{labels, v1, CriClient};
use rustix::process::{kill_process, Pid, Signal};
use tokio::process::Command;

/// A case that makes a sandbox and then holds it for a minute, so `clean` meets a live run.
const SLOW_SUITE: &str = "suite: slow
about: One case that keeps its sandbox while clean runs.
cases:
  - name: holds-a-sandbox
    steps:
      - run_sandbox: {as: sb, pod: web}
      - sleep_ms: 60000
      - version: {}
";

fn harness(leases: &Path) -> Command {
    let mut command = Command::from(support::harness());
    command
        .env("CRI_HARNESS_LEASE_DIR", leases)
        .kill_on_drop(true);
    command
}

async fn clean(leases: &Path, endpoint: &str, extra: &[&str]) -> (Output, String) {
    let output = harness(leases)
        .args(["clean", "-r", endpoint])
        .args(extra)
        .output()
        .await
        .unwrap();
    let text = support::printed(&output);
    (output, text)
}

/// The sandboxes labelled with `run_id`.
async fn sandboxes_of(client: &CriClient, run_id: &str) -> Vec<v1::PodSandbox> {
    client
        .list_pod_sandbox(None)
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.labels.get(labels::RUN_ID).map(String::as_str) == Some(run_id))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_leaves_a_live_runs_objects_alone_and_force_removes_them() {
    let (dir, server, client, _control) = support::mock_on_socket().await;
    let endpoint = server.endpoint().to_string();
    let leases = dir.path().join("leases");
    let suites = dir.path().join("suites");
    std::fs::create_dir(&suites).unwrap();
    std::fs::write(suites.join("slow.yaml"), SLOW_SUITE).unwrap();
    let mut run = harness(&leases)
        .args([
            "run", "-r", &endpoint, "--run-id", "live1", "--focus", "^slow/",
        ])
        .arg("--suites")
        .arg(&suites)
        .arg("--snapshot-dir")
        .arg(dir.path().join("snapshots"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the case has made its sandbox: it is then inside its long sleep.
    let mut waited = 0;
    while sandboxes_of(&client, "live1").await.is_empty() {
        assert!(waited < 3000, "the run made no sandbox within a minute");
        if run.try_wait().unwrap().is_some() {
            let output = run.wait_with_output().await.unwrap();
            panic!(
                "the run ended before making its sandbox: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += 1;
    }

    for extra in [&[][..], &["--run-id", "live1"][..]] {
        let (output, text) = clean(&leases, &endpoint, extra).await;
        assert!(output.status.success(), "{text}");
        assert!(
            text.contains("left alone: run live1 is still running (pid"),
            "{text}"
        );
        assert_eq!(sandboxes_of(&client, "live1").await.len(), 1, "{text}");
    }

    let (output, text) = clean(&leases, &endpoint, &["--force"]).await;
    assert!(output.status.success(), "{text}");
    assert!(text.contains("removed sandbox"), "{text}");
    assert!(sandboxes_of(&client, "live1").await.is_empty(), "{text}");

    // Interrupted, the run says how to remove what it may have left.
    let pid = Pid::from_raw(i32::try_from(run.id().unwrap()).unwrap()).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), run.wait_with_output())
        .await
        .expect("the interrupted run did not exit")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "remove it with: cri-harness clean -r {endpoint} --run-id live1"
        )),
        "{stdout}"
    );
    assert!(!leases.join("live1.lock").exists());
    server.shutdown().await;
}

#[tokio::test]
async fn clean_removes_the_objects_of_a_run_that_is_no_longer_alive() {
    let (dir, server, client, _control) = support::mock_on_socket().await;
    let endpoint = server.endpoint().to_string();
    let leases = dir.path().join("leases");
    // A dead run: its objects are there, its lease file is left over but nobody holds it.
    std::fs::create_dir(&leases).unwrap();
    std::fs::write(leases.join("dead1.lock"), "pid 1 on gone").unwrap();
    let mut config = support::sandbox_config("web", "ns", "uid-web", 0);
    config.labels = support::labels(&[(labels::RUN_ID, "dead1"), (labels::CASE, "1")]);
    client.run_pod_sandbox(config, "").await.unwrap();

    let (output, text) = clean(&leases, &endpoint, &[]).await;
    assert!(output.status.success(), "{text}");
    assert!(text.contains("removed sandbox"), "{text}");
    assert!(!text.contains("left alone"), "{text}");
    assert!(sandboxes_of(&client, "dead1").await.is_empty(), "{text}");
    assert!(!leases.join("dead1.lock").exists());
    server.shutdown().await;
}
