//! `report history` and `report diff` over generated nights: two nights, then thirty, each
//! output checked exactly: every change the diff names, the first failing night and the flake
//! rates on the page, a planted slowdown flagged and a planted no-change night not.

use std::path::{Path, PathBuf};
use std::process::Output;

use cri_harness::report::history::generate::{self, Plan};
use cri_harness::report::merge::generate::case_names;
use serde_json::{json, Value};

fn harness(args: &[&str], paths: &[&Path]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_cri-harness"))
        .args(args)
        .args(paths)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Runs `report history` over `nights` and answers its text and the page's data.
fn history(nights: &[PathBuf], out: &Path) -> (String, Value) {
    let mut args: Vec<&Path> = nights.iter().map(PathBuf::as_path).collect();
    args.push(Path::new("--out"));
    args.push(out);
    let output = harness(&["report", "history"], &args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let start = page.find("id=\"data\">").unwrap() + "id=\"data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    (
        stdout(&output),
        serde_json::from_str(&page[start..end]).unwrap(),
    )
}

/// `suite/case` of generated case `j`.
fn case(j: usize) -> String {
    let (suite, case) = &case_names(12)[j];
    format!("{suite}/{case}")
}

#[test]
fn report_diff_names_each_change_between_two_generated_nights() {
    let dir = tempfile::tempdir().unwrap();
    let nights = generate::write(dir.path(), &Plan::new(2, 12)).unwrap();
    let output = harness(&["report", "diff"], &[&nights[0], &nights[1]]);
    assert_eq!(output.status.code(), Some(1), "a new failure gates");
    let c = case;
    let expected = format!(
        "new failures (1):
  containerd v1.7.24 (endpoint, kubelet seed): {r} (passed -> failed): RemoveContainer left the container on night 2
fixed (2):
  containerd v1.6.20 (endpoint, kubelet seed): {f} (failed -> passed)
  containerd v1.7.24 (endpoint, kubelet seed): {f} (failed -> passed)
changed verdict (6):
  containerd v1.6.20 (endpoint, kubelet seed): {kf} (known -> passed)
  containerd v1.6.20 (endpoint, kubelet seed): {w} (passed -> warning): a should clause broke: ContainerStatus.reason is empty
  containerd v1.6.20 (endpoint, kubelet seed): {nk} (passed -> known): Unimplemented
  containerd v1.7.24 (endpoint, kubelet seed): {kf} (known -> passed)
  containerd v1.7.24 (endpoint, kubelet seed): {w} (passed -> warning): a should clause broke: ContainerStatus.reason is empty
  containerd v1.7.24 (endpoint, kubelet seed): {nk} (passed -> known): Unimplemented
added (2):
  containerd v1.6.20 (endpoint, kubelet seed): {a} (passed)
  containerd v1.7.24 (endpoint, kubelet seed): {a} (passed)
removed (2):
  containerd v1.6.20 (endpoint, kubelet seed): {rm} (passed)
  containerd v1.7.24 (endpoint, kubelet seed): {rm} (passed)
new known findings (2):
  containerd v1.6.20 (endpoint, kubelet seed): {nk}: containerd/containerd#11111
  containerd v1.7.24 (endpoint, kubelet seed): {nk}: containerd/containerd#11111
known findings gone or maybe fixed (2):
  containerd v1.6.20 (endpoint, kubelet seed): {kf}: containerd/containerd#10520
  containerd v1.7.24 (endpoint, kubelet seed): {kf}: containerd/containerd#10520
",
        r = c(0),
        f = c(3),
        kf = c(4),
        w = c(6),
        a = c(7),
        rm = c(8),
        nk = c(9),
    );
    assert_eq!(stdout(&output), expected);
}

/// The page's series as `(runtime, benchmark/operation, points, status)`.
fn series(data: &Value) -> Vec<(String, String, usize, String)> {
    data["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["runtime"].as_str().unwrap().to_owned(),
                format!(
                    "{}/{}",
                    s["benchmark"].as_str().unwrap(),
                    s["operation"].as_str().unwrap()
                ),
                s["points"].as_array().unwrap().len(),
                s["check"]["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every generated series over `nights` nights, all with `status` but the first one, whose
/// status is `first`.
fn expected_series(
    nights: usize,
    first: &str,
    status: &str,
) -> Vec<(String, String, usize, String)> {
    let mut expected = Vec::new();
    for runtime in ["containerd v1.6.20", "containerd v1.7.24"] {
        let mut ops: Vec<String> = generate::OPERATIONS
            .iter()
            .map(|(b, o, _)| format!("{b}/{o}"))
            .collect();
        ops.sort();
        for op in ops {
            let flagged = runtime.ends_with("1.7.24") && op == "pod_lifecycle/run_pod_sandbox";
            let status = if flagged { first } else { status };
            expected.push((runtime.to_owned(), op, nights, status.to_owned()));
        }
    }
    expected
}

#[test]
fn thirty_nights_show_what_fails_since_when_the_flake_rates_and_a_planted_slowdown() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        slowdown: 1.4,
        ..Plan::new(30, 12)
    };
    let nights = generate::write(&dir.path().join("nights"), &plan).unwrap();
    // Given out of order: the history orders them by their start.
    let mut shuffled = nights.clone();
    shuffled.reverse();
    shuffled.swap(3, 17);
    let (text, data) = history(&shuffled, &dir.path().join("out"));
    let (always, regressed, intermittent, flaky) = (case(2), case(0), case(1), case(10));
    let snapshot = "snapshot changed: PodSandboxStatus differs from the stored snapshot";
    let (head, bench) = text.split_once("bench changes").unwrap();
    assert_eq!(
        head,
        format!(
            "30 nights, 2 lanes, ordered by start time
failing in the latest night (3):
  containerd v1.6.20 (endpoint, kubelet seed): {always} failing since 2026-01-01 (2026-01-01T02:00:00Z), 30 nights: {snapshot}
  containerd v1.7.24 (endpoint, kubelet seed): {regressed} failing since 2026-01-28 (2026-01-28T02:00:00Z), 3 nights: RemoveContainer left the container on night 30
  containerd v1.7.24 (endpoint, kubelet seed): {always} failing since 2026-01-01 (2026-01-01T02:00:00Z), 30 nights: {snapshot}
flaky (4):
  containerd v1.6.20 (endpoint, kubelet seed): {intermittent} 6 of 30 nights (20.0 %)
  containerd v1.7.24 (endpoint, kubelet seed): {intermittent} 6 of 30 nights (20.0 %)
  containerd v1.6.20 (endpoint, kubelet seed): {flaky} 3 of 30 nights (10.0 %)
  containerd v1.7.24 (endpoint, kubelet seed): {flaky} 3 of 30 nights (10.0 %)
"
        )
    );
    let bench_lines: Vec<&str> = bench.lines().collect();
    assert_eq!(bench_lines[0], " (1):");
    assert!(
        bench_lines[1].starts_with(
            "  containerd v1.7.24 pod_lifecycle/run_pod_sandbox: SLOWER in 2026-01-30 (2026-01-30T02:00:00Z), p50 "
        ),
        "{bench}"
    );
    assert_eq!(bench_lines.len(), 3, "{bench}");
    // The page holds the same, and every night in order.
    let names: Vec<&str> = data["nights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    let expected_names: Vec<String> = (0..30).map(generate::night_name).collect();
    assert_eq!(names, expected_names);
    assert_eq!(
        data["failing"],
        json!([
            {"lane": "containerd v1.6.20 (endpoint, kubelet seed)", "case": always, "since": 0, "nights": 30, "message": snapshot},
            {"lane": "containerd v1.7.24 (endpoint, kubelet seed)", "case": regressed, "since": 27, "nights": 3,
             "message": "RemoveContainer left the container on night 30"},
            {"lane": "containerd v1.7.24 (endpoint, kubelet seed)", "case": always, "since": 0, "nights": 30, "message": snapshot},
        ])
    );
    assert_eq!(
        data["flakes"],
        json!([
            {"lane": "containerd v1.6.20 (endpoint, kubelet seed)", "case": intermittent, "flakes": 6, "runs": 30, "rate": 0.2},
            {"lane": "containerd v1.7.24 (endpoint, kubelet seed)", "case": intermittent, "flakes": 6, "runs": 30, "rate": 0.2},
            {"lane": "containerd v1.6.20 (endpoint, kubelet seed)", "case": flaky, "flakes": 3, "runs": 30, "rate": 0.1},
            {"lane": "containerd v1.7.24 (endpoint, kubelet seed)", "case": flaky, "flakes": 3, "runs": 30, "rate": 0.1},
        ])
    );
    assert!(data["flake_definition"]
        .as_str()
        .unwrap()
        .starts_with("A night counts as a flake"));
    assert!(data["test"]
        .as_str()
        .unwrap()
        .contains("Mann–Whitney U test"));
    assert_eq!(series(&data), expected_series(30, "slower", "steady"));
    let slow = &data["series"][8]["check"];
    assert_eq!(data["series"][8]["operation"], "run_pod_sandbox");
    assert!(slow["p"].as_f64().unwrap() < 0.001, "{slow}");
    assert!(
        slow["latest"].as_f64().unwrap() > slow["high"].as_f64().unwrap(),
        "{slow}"
    );
    // One message, stored once however many nights show it.
    assert_eq!(
        data["strings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| *s == snapshot)
            .count(),
        1
    );
    let lane = &data["lanes"][1];
    assert_eq!(lane["name"], "containerd v1.7.24 (endpoint, kubelet seed)");
    assert_eq!(lane["runtimes"], json!(["containerd v1.7.24"]));
    assert_eq!(lane["cases"].as_array().unwrap().len(), 12);
    let row = |j: usize| {
        let at = lane["cases"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| *c == case(j))
            .unwrap();
        lane["cells"][at].as_str().unwrap().to_owned()
    };
    assert_eq!(row(0), format!("{}fff", "p".repeat(27)));
    assert_eq!(row(1), "ppfppppfppppfppppfppppfppppfpp");
    assert_eq!(row(7), format!("{}p", "-".repeat(29)));
    assert_eq!(row(5), "s".repeat(30));
    assert_eq!(row(10), "ppppypppppppppypppppppppyppppp");
}

#[test]
fn a_no_change_night_drawn_with_another_seed_is_not_flagged() {
    let dir = tempfile::tempdir().unwrap();
    for last_seed in [2, 3, 4] {
        let plan = Plan {
            last_seed,
            ..Plan::new(30, 12)
        };
        let root = dir.path().join(format!("seed-{last_seed}"));
        let nights = generate::write(&root.join("nights"), &plan).unwrap();
        let (text, data) = history(&nights, &root.join("out"));
        assert!(
            text.ends_with(&format!(
                "bench changes (0):\nwrote {}\n",
                root.join("out/index.html").display()
            )),
            "{text}"
        );
        assert_eq!(series(&data), expected_series(30, "steady", "steady"));
    }
}

#[test]
fn two_nights_are_too_few_to_judge_the_bench_but_show_the_new_failure() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        slowdown: 1.4,
        ..Plan::new(2, 12)
    };
    let nights = generate::write(dir.path(), &plan).unwrap();
    let (text, data) = history(&nights, &dir.path().join("out"));
    assert!(
        text.starts_with("2 nights, 2 lanes, ordered by start time\n"),
        "{text}"
    );
    assert_eq!(
        series(&data),
        expected_series(2, "too_little_history", "too_little_history")
    );
    assert_eq!(
        data["failing"][1],
        json!({"lane": "containerd v1.7.24 (endpoint, kubelet seed)", "case": case(0), "since": 1, "nights": 1,
               "message": "RemoveContainer left the container on night 2"})
    );
    assert_eq!(data["flakes"], json!([]));
}

#[test]
fn nights_without_a_start_time_are_ordered_by_name_and_the_page_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        started: false,
        bench: false,
        ..Plan::new(3, 12)
    };
    let nights = generate::write(dir.path(), &plan).unwrap();
    let reversed: Vec<PathBuf> = nights.iter().rev().cloned().collect();
    let (text, data) = history(&reversed, &dir.path().join("out"));
    let note = "no start time recorded in 2026-01-01, 2026-01-02, 2026-01-03";
    assert!(
        text.starts_with(&format!(
            "3 nights, 2 lanes, ordered by directory name: {note}\n"
        )),
        "{text}"
    );
    assert_eq!(
        data["warnings"],
        json!([format!("nights ordered by directory name: {note}")])
    );
    assert_eq!(
        data["nights"][0],
        json!({"name": "2026-01-01", "started_at": null})
    );
    assert_eq!(data["series"], json!([]));
}
