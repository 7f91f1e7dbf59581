//! A runtime killed in the middle of a run, on the real containerd that `ci/containerd.sh`
//! runs (when `CONTAINER_RUNTIME_ENDPOINT` and `CRIH_CONTAINERD_SCRIPT` are set; CI sets
//! both): the run ends on its own, says the runtime stopped answering and how to clean up;
//! once the runtime is back, that `clean` removes every sandbox and container of the run and
//! every image it pulled, and the run's host directories are already gone. Under `CI=true` the
//! test fails without the variables; elsewhere it is ignored unless asked for (`--ignored`).
//! It kills and restarts the runtime, so it lives alone in its test binary (cargo runs test
//! binaries one at a time).

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::Stdio;
use std::time::{Duration, Instant};

mod support;

use cri_harness::cri::{self, ConnectOptions, Endpoint};
use rustix::process::{kill_process, Pid, Signal};
use support::harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime and ci/containerd.sh (CRIH_CONTAINERD_SCRIPT)"
)]
async fn a_runtime_killed_mid_run_ends_the_run_and_clean_removes_the_rest() {
    let endpoint = support::need::runtime();
    let script = support::need::env(
        "CRIH_CONTAINERD_SCRIPT",
        "ci/containerd.sh, to kill the runtime",
    );
    let state =
        std::env::var("CRIH_STATE").unwrap_or_else(|_| "/tmp/cri-harness-containerd".into());
    let parsed: Endpoint = endpoint.parse().unwrap();
    let client = cri::connect(&parsed, &parsed, &ConnectOptions::default())
        .await
        .unwrap();
    let before = support::image_tags(&client).await;
    let work = tempfile::tempdir().unwrap();
    let leases = work.path().join("leases");
    let run_id = format!("kill{}", std::process::id());
    let mut child = harness()
        .args(["run", "-r", &endpoint, "--tags", "core", "--parallel", "2"])
        .args(["--run-id", &run_id, "--case-timeout", "20s"])
        .arg("--work-dir")
        .arg(work.path())
        .env("CRI_HARNESS_LEASE_DIR", &leases)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match lines.next() {
            Some(Ok(line)) => seen.push(line),
            _ => break,
        }
    }
    assert_eq!(
        seen.len(),
        3,
        "the run ended before the runtime could be killed: {seen:?}"
    );

    let pid: i32 = std::fs::read_to_string(format!("{state}/containerd.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    kill_process(Pid::from_raw(pid).unwrap(), Signal::KILL).unwrap();

    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the run did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let output = format!("{}\n{}\n{stderr}", seen.join("\n"), rest.join("\n"));
    assert_eq!(status.code(), Some(1), "{output}");
    assert!(output.contains("stopped answering"), "{output}");
    assert!(output.contains("remove it with: "), "{output}");
    let run_dir = work.path().join(&run_id);
    assert!(!run_dir.exists(), "{} is left: {output}", run_dir.display());

    // The runtime comes back with what it had persisted.
    let up = std::process::Command::new("bash")
        .args([&script, "up"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(up.success(), "{script} up failed");
    let client = cri::connect(&parsed, &parsed, &ConnectOptions::default())
        .await
        .unwrap();
    let clean = harness()
        .args(["clean", "-r", &endpoint, "--run-id", &run_id])
        .env("CRI_HARNESS_LEASE_DIR", &leases)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&clean.stdout),
        String::from_utf8_lossy(&clean.stderr)
    );
    assert!(clean.status.success(), "{said}\n{output}");
    assert_eq!(
        support::labelled(&client, &run_id).await,
        Vec::<String>::new(),
        "{said}"
    );
    let after = support::image_tags(&client).await;
    let pulled: Vec<&String> = after.difference(&before).collect();
    assert!(
        pulled.is_empty(),
        "images the run pulled are left: {pulled:?}\n{said}"
    );
}
