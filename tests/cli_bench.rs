//! `cri-harness bench` on the mock as a user runs it: the table has a row per operation, the
//! JSON report parses and counts one sample per iteration, and nothing of the run is left.
//! No figure is checked: timings belong to the benchmark, not to tests.

use crate::support;

use std::process::Output;

use cri_harness::bench::Benchmark;
use support::harness;

fn bench(extra: &[&str]) -> Output {
    harness()
        .args(["bench", "--mock"])
        .args(extra)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The table's row of `operation` of `benchmark`, split into cells.
fn row<'a>(stdout: &'a str, benchmark: &str, operation: &str) -> Option<Vec<&'a str>> {
    stdout
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&benchmark) && cells.get(1) == Some(&operation))
}

#[test]
fn bench_on_the_mock_prints_a_row_per_operation_and_json_counting_every_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let output = bench(&[
        "--iterations",
        "3",
        "--parallel",
        "2",
        "--run-id",
        "bench-test",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for benchmark in Benchmark::ALL {
        for operation in benchmark.operations() {
            let cells = row(&stdout, &benchmark.to_string(), operation)
                .unwrap_or_else(|| panic!("no row for {benchmark} {operation}:\n{stdout}"));
            assert_eq!(cells.len(), 6, "{stdout}");
            assert_eq!(cells[2], "3", "{stdout}");
            for figure in &cells[3..] {
                assert!(figure.parse::<f64>().is_ok(), "{figure}: {stdout}");
            }
        }
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["run_id"], "bench-test");
    assert_eq!(report["iterations"], 3);
    assert_eq!(report["parallel"], 2);
    assert_eq!(report["interrupted"], false);
    let benchmarks = report["benchmarks"].as_array().unwrap();
    let names: Vec<String> = Benchmark::ALL.iter().map(ToString::to_string).collect();
    let reported: Vec<&str> = benchmarks
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(reported, names);
    for benchmark in benchmarks {
        assert_eq!(benchmark["failures"], 0, "{benchmark}");
        let workers = if benchmark["name"] == "image_lifecycle" {
            1
        } else {
            2
        };
        assert_eq!(benchmark["workers"], workers, "{benchmark}");
        for operation in benchmark["operations"].as_array().unwrap() {
            assert_eq!(operation["count"], 3, "{operation}");
            assert_eq!(operation["samples_ms"].as_array().unwrap().len(), 3);
            let p50 = operation["p50_ms"].as_f64().unwrap();
            let max = operation["max_ms"].as_f64().unwrap();
            assert!(p50 <= max, "{operation}");
        }
    }
    assert_eq!(report["cleanup"]["left"], serde_json::json!([]));
    assert_eq!(report["cleanup"]["errors"], serde_json::json!([]));
}

#[test]
fn only_runs_the_benchmarks_named() {
    let output = bench(&["--iterations", "2", "--only", "image_listing,pod_lifecycle"]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        row(&stdout, "image_listing", "list_images").is_some(),
        "{stdout}"
    );
    assert!(
        row(&stdout, "pod_lifecycle", "run_pod_sandbox").is_some(),
        "{stdout}"
    );
    assert!(!stdout.contains("container_lifecycle"), "{stdout}");
}

#[test]
fn an_unknown_benchmark_name_is_refused_listing_the_names() {
    let output = bench(&["--only", "pod_lifecycles"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("\"pod_lifecycles\""), "{stderr}");
    for benchmark in Benchmark::ALL {
        assert!(stderr.contains(&benchmark.to_string()), "{stderr}");
    }
}

#[test]
fn sigint_mid_bench_sweeps_the_run_and_exits_130_with_the_json_saying_so() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;

    use rustix::process::{kill_process, Pid, Signal};

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let mut child = harness()
        .args(["bench", "--mock", "--iterations", "100000", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The header comes once the mock is connected, so the signal lands among the iterations.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut header = String::new();
    stdout.read_line(&mut header).unwrap();
    assert!(header.starts_with("bench on "), "{header}");
    // Past the image check before the first benchmark, well short of 100,000 iterations.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    // Bounded, so a bench that ignores the signal fails the test instead of hanging it.
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(130), "{rest}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["interrupted"], true);
    assert_eq!(report["cleanup"]["left"], serde_json::json!([]));
    let first = &report["benchmarks"][0]["operations"][0];
    assert!(first["count"].as_u64().unwrap() < 100_000, "{first}");
}

#[test]
fn bench_without_an_endpoint_names_every_way_to_give_one_and_the_mock() {
    let output = harness().args(["bench"]).output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for way in [
        "-r/--runtime-endpoint",
        "CONTAINER_RUNTIME_ENDPOINT",
        "--mock",
    ] {
        assert!(stderr.contains(way), "{stderr}");
    }
}

#[test]
fn bench_on_an_absent_endpoint_fails_naming_it_and_the_mock_ignores_it() {
    const ABSENT: &str = "/nonexistent/runtime.sock";
    let leases = tempfile::tempdir().unwrap();
    let output = harness()
        .args(["bench", "--iterations", "1"])
        .env("CONTAINER_RUNTIME_ENDPOINT", ABSENT)
        .env("CRI_HARNESS_LEASE_DIR", leases.path())
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(ABSENT), "{stderr}");
    let output = harness()
        .args([
            "bench",
            "--mock",
            "--iterations",
            "1",
            "--only",
            "image_listing",
        ])
        .env("CONTAINER_RUNTIME_ENDPOINT", ABSENT)
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(!stdout.contains(ABSENT), "{stdout}");
}
