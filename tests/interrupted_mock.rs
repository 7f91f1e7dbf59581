//! A run interrupted at any instant leaves nothing, on the mock as a runtime endpoint, so the
//! test can look at it afterwards: `cri-harness run -r unix://MOCK` runs as a child, the mock
//! holds a call of each kind that makes an object (RunPodSandbox, PullImage, CreateContainer,
//! StartContainer) open and finishes it even after the harness stopped waiting, and SIGINT
//! or SIGTERM comes while it is held, or at instants spread over the run. Then the run exits
//! 130, the cases it cut short say `interrupted`, and no sandbox, container, image or host
//! directory of the run is left.

use std::io::Read as _;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support;

use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::control::{CallRecord, GetCallLogRequest, InjectLatencyRequest};
use rstest::rstest;
use rustix::process::{kill_process, Pid, Signal};
use support::harness;
use tonic::transport::Channel;

/// Every kind of create and start, in one case; two cases so the run has them in flight at
/// once (`--parallel 2`).
const SUITE: &str = "suite: interrupt
about: every call that makes an object, for the interruption tests
cases:
  - name: first
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - start_container: app
      - version: {}
  - name: second
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - start_container: app
      - version: {}
";

/// What an interrupted run left and said.
struct Interrupted {
    code: Option<i32>,
    /// From the signal to the exit.
    exit_latency: Duration,
    left: Vec<String>,
    images: Vec<String>,
    work_left: bool,
    /// Each case's outcome word in the JSON report.
    outcomes: Vec<String>,
    /// Removals the mock refused while a container was starting.
    refused_while_starting: usize,
    output: String,
}

/// Runs the suite against a fresh mock, holds `held` calls of each method for `hold` (they
/// finish even if the harness stops waiting), sends `signal` at `at` (or once the first
/// held call of `wait_for` is in flight) and reports what was left.
async fn interrupt(
    held: &[&str],
    hold: Duration,
    wait_for: Option<&str>,
    at: Duration,
    signal: Signal,
    call_timeout: &str,
) -> Interrupted {
    let (dir, server, client, mut control) = support::mock_on_socket().await;
    for method in held {
        control
            .inject_latency(InjectLatencyRequest {
                method: (*method).to_owned(),
                delay_ms: u64::try_from(hold.as_millis()).unwrap(),
                count: 0,
                finish_if_abandoned: true,
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let suites = dir.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::write(suites.join("interrupt.yaml"), SUITE).unwrap();
    let work = dir.path().join("work");
    let reports = dir.path().join("reports");
    let run_id = "intr";
    let endpoint = server.endpoint().to_string();
    let mut child = harness()
        .args([
            "run",
            "-r",
            &endpoint,
            "--parallel",
            "2",
            "--focus",
            "^interrupt/",
        ])
        .args(["--run-id", run_id, "--timeout", call_timeout])
        .arg("--suites")
        .arg(&suites)
        .arg("--snapshot-dir")
        .arg(dir.path().join("snapshots"))
        // The cases' references are recorded, not compared: a run that ends before the signal
        // then exits 0, whatever its cases' new references hold.
        .arg("--update-snapshots")
        .arg("--work-dir")
        .arg(&work)
        .arg("--report-dir")
        .arg(&reports)
        .env("CRI_HARNESS_LEASE_DIR", dir.path().join("leases"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    if let Some(method) = wait_for {
        // The signal comes while the mock holds a call of `method`.
        loop {
            if calls(&mut control)
                .await
                .iter()
                .any(|c| c.method == method && c.message.contains("still in flight"))
            {
                break;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "the run ended before a {method} was held: {}",
                output_of(&mut child)
            );
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no {method} arrived"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    } else {
        tokio::time::sleep(at).await;
    }
    let pid = Pid::from_child(&child);
    let signalled = Instant::now();
    if child.try_wait().unwrap().is_none() {
        kill_process(pid, signal).unwrap();
    }
    let code = wait_at_most(&mut child, Duration::from_secs(90));
    let exit_latency = signalled.elapsed();
    let output = output_of(&mut child);
    // Whatever the mock still holds finishes first: its objects count as left too.
    let settling = Instant::now();
    loop {
        if !calls(&mut control)
            .await
            .iter()
            .any(|c| c.message.contains("still in flight"))
        {
            break;
        }
        assert!(
            settling.elapsed() < hold + Duration::from_secs(10),
            "the mock never finished its held calls"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let left = support::labelled(&client, run_id).await;
    let images = support::image_tags(&client).await.into_iter().collect();
    let refused_while_starting = calls(&mut control)
        .await
        .iter()
        .filter(|c| c.method.starts_with("Remove") && c.message.contains("starting state"))
        .count();
    let outcomes = outcomes(&reports.join("results.json"));
    let work_left = work.join(run_id).exists();
    server.shutdown().await;
    Interrupted {
        code,
        exit_latency,
        left,
        images,
        work_left,
        outcomes,
        refused_while_starting,
        output,
    }
}

/// The mock's call log so far.
async fn calls(control: &mut MockControlClient<Channel>) -> Vec<CallRecord> {
    control
        .get_call_log(GetCallLogRequest { clear: false })
        .await
        .unwrap()
        .into_inner()
        .calls
}

/// Waits for the child, killing it after `limit` so a hang fails rather than blocks.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn output_of(child: &mut Child) -> String {
    let mut text = String::new();
    if child.try_wait().ok().flatten().is_none() {
        return "(still running)".to_owned();
    }
    if let Some(out) = child.stdout.as_mut() {
        let _ = out.read_to_string(&mut text);
    }
    if let Some(err) = child.stderr.as_mut() {
        let _ = err.read_to_string(&mut text);
    }
    text
}

/// Each case's `outcome` in a JSON report (none when the run wrote no report). A case cut
/// short says so where it stopped, too.
fn outcomes(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            let outcome = case["outcome"].as_str().unwrap().to_owned();
            if outcome == "interrupted" {
                assert_eq!(case["stopped"]["kind"], "interrupted", "{case}");
            }
            outcome
        })
        .collect()
}

/// What every interrupted run must show: exit 130, nothing left, and no case called failed.
fn assert_left_nothing(run: &Interrupted, what: &str) {
    let output = &run.output;
    assert_eq!(run.code, Some(130), "{what}: {output}");
    assert_eq!(
        run.left,
        Vec::<String>::new(),
        "{what}: objects left\n{output}"
    );
    assert_eq!(
        run.images,
        Vec::<String>::new(),
        "{what}: images left\n{output}"
    );
    assert!(
        !run.work_left,
        "{what}: the run's host directory is left\n{output}"
    );
    assert!(
        run.outcomes.iter().all(|o| o != "failed" && o != "error"),
        "{what}: {:?}\n{output}",
        run.outcomes
    );
}

#[rstest]
#[case::run_pod_sandbox_sigint("RunPodSandbox", Signal::INT)]
#[case::pull_image_sigterm("PullImage", Signal::TERM)]
#[case::create_container_sigint("CreateContainer", Signal::INT)]
#[case::start_container_sigterm("StartContainer", Signal::TERM)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_inside_each_kind_of_create_and_start_leaves_nothing_and_says_interrupted(
    #[case] method: &str,
    #[case] signal: Signal,
) {
    // The held call ends a second after the signal: what it makes appears after the case's
    // first listing would have been, had the cleanup not waited for it.
    let run = interrupt(
        &[method],
        Duration::from_millis(1500),
        Some(method),
        Duration::ZERO,
        signal,
        "10s",
    )
    .await;
    assert_left_nothing(&run, method);
    assert!(
        run.outcomes.iter().any(|o| o == "interrupted"),
        "{method}: {:?}\n{}",
        run.outcomes,
        run.output
    );
    assert!(
        run.output.contains("INTERRUPTED interrupt/"),
        "{}",
        run.output
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_still_starting_after_the_call_timed_out_is_removed_once_it_settles() {
    // The harness gives up on StartContainer after 1 s; the mock finishes it at 4 s and
    // refuses removal until then, as containerd refuses a container "in starting state".
    let run = interrupt(
        &["StartContainer"],
        Duration::from_secs(4),
        Some("StartContainer"),
        Duration::ZERO,
        Signal::TERM,
        "1s",
    )
    .await;
    assert_left_nothing(&run, "starting");
    assert!(
        run.refused_while_starting > 0,
        "the mock never refused a removal while starting, so the test checked nothing\n{}",
        run.output
    );
    // Bounded: the settle wait is within its 30 s bound, not the 90 s this test allows.
    assert!(
        run.exit_latency < Duration::from_secs(40),
        "{:?}\n{}",
        run.exit_latency,
        run.output
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_at_instants_spread_over_the_run_leave_nothing() {
    let held = [
        "RunPodSandbox",
        "PullImage",
        "CreateContainer",
        "StartContainer",
    ];
    let signals = [Signal::INT, Signal::TERM];
    for step in 0..8u64 {
        let at = Duration::from_millis(150 + step * 230);
        let signal = signals[(step % 2) as usize];
        let run = interrupt(&held, Duration::from_millis(400), None, at, signal, "10s").await;
        let what = format!("{signal:?} at {at:?}");
        if run.code == Some(0) {
            // The run ended before the signal: nothing to check but that it left nothing.
            assert!(run.left.is_empty() && run.images.is_empty(), "{what}");
            continue;
        }
        assert_left_nothing(&run, &what);
    }
}
