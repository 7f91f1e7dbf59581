//! `report history` and `report diff` over generated nights: two nights, then thirty, each
//! output checked exactly: every change the diff names, the first failing night and the flake
//! rates on the page, a planted slowdown flagged and a planted no-change night not.

use std::path::{Path, PathBuf};
use std::process::Output;

use cri_harness::report::history::generate::{self, Plan, TIMEOUT};
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
    (stdout(&output), serde_json::from_str(&page[start..end]).unwrap())
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
  containerd-1.7: {r} (passed -> failed): RemoveContainer left the container on night 2
fixed (2):
  containerd-1.6: {f} (failed -> passed)
  containerd-1.7: {f} (failed -> passed)
changed verdict (6):
  containerd-1.6: {kf} (known -> passed)
  containerd-1.6: {w} (passed -> warning): a should clause broke: ContainerStatus.reason is empty
  containerd-1.6: {nk} (passed -> known): Unimplemented
  containerd-1.7: {kf} (known -> passed)
  containerd-1.7: {w} (passed -> warning): a should clause broke: ContainerStatus.reason is empty
  containerd-1.7: {nk} (passed -> known): Unimplemented
added (2):
  containerd-1.6: {a} (passed)
  containerd-1.7: {a} (passed)
removed (2):
  containerd-1.6: {rm} (passed)
  containerd-1.7: {rm} (passed)
new known findings (2):
  containerd-1.6: {nk}: containerd/containerd#11111
  containerd-1.7: {nk}: containerd/containerd#11111
known findings gone or maybe fixed (2):
  containerd-1.6: {kf}: containerd/containerd#10520
  containerd-1.7: {kf}: containerd/containerd#10520
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
