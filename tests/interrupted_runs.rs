//! A run stopped half-way leaves nothing behind that carries its run label, on the real
//! runtime (when `CONTAINER_RUNTIME_ENDPOINT` is set): SIGINT while conformance cases run
//! (sandboxes, containers and image pulls in flight) exits 130 having removed every sandbox
//! and container of the run, its host directories and every image it pulled that the runtime
//! did not have. Without the variable the test prints a skip line.

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

mod support;

use cri_harness::cri::{self, ConnectOptions, Endpoint};
use rustix::process::{kill_process, Pid, Signal};
use support::harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn sigint_mid_run_removes_every_object_host_directory_and_pulled_image() {
    let endpoint = support::need::runtime();
    let parsed: Endpoint = endpoint.parse().unwrap();
    let client = cri::connect(&parsed, &parsed, &ConnectOptions::default())
        .await
        .unwrap();
    let before = support::image_tags(&client).await;
    let work = tempfile::tempdir().unwrap();
    let run_id = format!("int{}", std::process::id());
    let mut child = harness()
        .args(["run", "-r", &endpoint, "--tags", "core", "--parallel", "2"])
        .args(["--run-id", &run_id])
        .arg("--work-dir")
        .arg(work.path())
        .env("CRI_HARNESS_LEASE_DIR", work.path().join("leases"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once a few cases are done, so others are in flight.
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
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
        "the run ended before it could be interrupted: {seen:?}"
    );
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the run did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = format!("{}\n{}", seen.join("\n"), rest.join("\n"));
    assert_eq!(status.code(), Some(130), "{output}");
    assert!(output.contains("interrupted"), "{output}");

    assert_eq!(
        support::labelled(&client, &run_id).await,
        Vec::<String>::new(),
        "{output}"
    );
    let run_dir = work.path().join(&run_id);
    assert!(!run_dir.exists(), "{} is left: {output}", run_dir.display());
    let after = support::image_tags(&client).await;
    let pulled: Vec<&String> = after.difference(&before).collect();
    assert!(
        pulled.is_empty(),
        "images the run pulled are left: {pulled:?}\n{output}"
    );
}
