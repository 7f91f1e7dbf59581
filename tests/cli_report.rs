//! The fleet path as a user drives it: `run --report-line` ends stdout with the whole report
//! on one line, and `report merge` reads such logs (and report files) into one report, naming
//! inputs that held none and node names that came twice.

use crate::support;

use std::path::PathBuf;

use support::harness;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn run_report_line_prints_the_whole_report_last_and_merge_reads_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let output = harness()
        .args([
            "run",
            "--mock",
            "--report-line",
            "--focus",
            "^latest-sandbox-ip/",
        ])
        .arg("--snapshot-dir")
        .arg(root().join("snapshots"))
        .arg("--report-dir")
        .arg(dir.path().join("reports"))
        .env("NODE_NAME", "node-from-downward-api")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    let last = stdout.lines().last().unwrap();
    let line: serde_json::Value = serde_json::from_str(last).unwrap();
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(line, file);
    assert_eq!(line["node"]["name"], "node-from-downward-api");
    assert_eq!(line["node"]["runtime_name"], "cri-harness-mock");
    assert_eq!(line["node"]["runtime_version"], env!("CARGO_PKG_VERSION"));
    // What ran, as `report diff` pairs lanes by it: the default profile is left out.
    assert_eq!(line["kubelet"], "seed");
    assert_eq!(line["target"], "mock");
    assert!(line.get("mock_profile").is_none());
    assert!(line["node"]["kernel"]
        .as_str()
        .is_some_and(|k| !k.is_empty()));
    assert!(line["cases"].as_array().is_some_and(|c| !c.is_empty()));
    // The summary line is still there, just before it.
    assert!(stdout
        .lines()
        .any(|l| l.ends_with(" skipped") && l.contains(" passed, ")));

    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("a.log"), &stdout).unwrap();
    // The same node again, as a restarted pod would report, and a pod that crashed.
    std::fs::write(logs.join("b.log"), &stdout).unwrap();
    std::fs::write(logs.join("crashed.log"), "thread 'main' panicked\n").unwrap();
    let out = dir.path().join("merged");
    let merge = harness()
        .args(["report", "merge"])
        .arg(&logs)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&merge.stderr);
    assert_eq!(merge.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with("warning: ")
            && l.contains("crashed.log")
            && l.contains("no cri-harness report")),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(|l| l.contains("node-from-downward-api") && l.contains("node-from-downward-api#2")),
        "{stderr}"
    );
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("merged.json")).unwrap()).unwrap();
    assert_eq!(merged["totals"]["nodes"], 2);
    assert_eq!(merged["unread"].as_array().unwrap().len(), 1);
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let suites: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert_eq!(
        suites,
        ["node-from-downward-api", "node-from-downward-api#2"]
    );
    assert!(std::fs::metadata(out.join("index.html")).unwrap().len() > 0);

    // Without the crashed pod's log, the merge succeeds.
    std::fs::remove_file(logs.join("crashed.log")).unwrap();
    let merge = harness()
        .args(["report", "merge"])
        .arg(logs.join("a.log"))
        .arg(dir.path().join("reports/results.json"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        merge.status.success(),
        "{}",
        String::from_utf8_lossy(&merge.stderr)
    );
}

#[test]
fn merge_of_nothing_fails_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let merge = harness()
        .args(["report", "merge"])
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(merge.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&merge.stderr).contains("no report found"));
}

/// Runs the mock on one suite into `dir/<lane>/results.json`.
fn night(dir: &std::path::Path, lane: &str) {
    let output = harness()
        .args(["run", "--mock", "--focus", "^latest-sandbox-ip/"])
        .arg("--snapshot-dir")
        .arg(root().join("snapshots"))
        .arg("--report-dir")
        .arg(dir.join(lane))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

/// Rewrites the first passed case of a report as failed, and returns its `suite/case`.
fn break_first_pass(results: &std::path::Path) -> String {
    let mut report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
    let case = report["cases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["outcome"] == "passed")
        .unwrap();
    case["outcome"] = "failed".into();
    case["reason"] = "the pod IP was wrong".into();
    let name = format!(
        "{}/{}",
        case["suite"].as_str().unwrap(),
        case["case"].as_str().unwrap()
    );
    std::fs::write(results, report.to_string()).unwrap();
    name
}

#[test]
fn report_diff_gates_on_a_new_failure_and_names_the_fix_the_other_way() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    night(&old, "mock");
    night(&new, "mock");
    // Not a report: passed over inside a directory.
    std::fs::write(new.join("bench.json"), "{\"iterations\": 10}").unwrap();
    let broken = break_first_pass(&new.join("mock/results.json"));

    let diff = |a: &std::path::Path, b: &std::path::Path, json: &std::path::Path| {
        let output = harness()
            .args(["report", "diff"])
            .args([a, b])
            .arg("--json")
            .arg(json)
            .output()
            .unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        (output.status.code(), stdout, json)
    };

    // The lane is what ran, whatever the directories are named.
    let lane = format!(
        "cri-harness-mock {} (mock, kubelet seed)",
        env!("CARGO_PKG_VERSION")
    );
    let (code, stdout, json) = diff(&old, &new, &dir.path().join("forward.json"));
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "new failures (1):\n  {lane}: {broken} (passed -> failed): the pod IP was wrong\n"
        )),
        "{stdout}"
    );
    assert_eq!(json["new_failures"][0]["key"]["case"], broken.as_str());
    assert_eq!(json["new_failures"][0]["key"]["lane"], lane.as_str());

    let (code, stdout, json) = diff(&new, &old, &dir.path().join("back.json"));
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        stdout,
        format!("fixed (1):\n  {lane}: {broken} (failed -> passed)\n")
    );
    assert_eq!(json["fixes"].as_array().unwrap().len(), 1);

    let (code, stdout, _) = diff(&old, &old, &dir.path().join("same.json"));
    assert_eq!((code, stdout.as_str()), (Some(0), "no change\n"));

    // The merged page of the new night, with last night as its baseline, shows the same.
    let out = dir.path().join("merged");
    let output = harness()
        .args(["report", "merge"])
        .arg(new.join("mock"))
        .arg("--baseline")
        .arg(&old)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    // A merge gates on unreadable inputs, not on failures: `report diff` is the gate.
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let data = page
        .split("<script type=\"application/json\" id=\"data\">")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .unwrap();
    let data: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(
        data["changes"],
        serde_json::json!([[
            "new failures",
            [format!(
                "{lane}: {broken} (passed -> failed): the pod IP was wrong"
            )]
        ]])
    );
}
