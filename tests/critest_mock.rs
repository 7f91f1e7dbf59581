//! critest v1.36.0, the real binary, against `cri-harness mock` over its unix socket: every
//! spec passes but those `docs/critest-mock.md` lists, each with why the mock cannot pass it.
//!
//! critest is found in `CRITEST`, else at `../shared/bin/critest-v1.36.0` beside the
//! repository, with the `ginkgo-*` beside it put on `PATH` as `ginkgo` for `--parallel`.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// The page that lists the failing specs and the counts.
const PAGE: &str = include_str!("../docs/critest-mock.md");
/// Where the page's list starts and ends.
const START: &str = "<!-- critest v1.36.0 specs that fail on the mock -->";
const END: &str = "<!-- end of critest v1.36.0 specs that fail on the mock -->";
/// ginkgo's name of a spec's test case: `[It] ` and the spec's full text, from `[k8s.io] `.
const PREFIX: &str = "[It] [k8s.io] ";
/// critest's workers: the mock answers at once, so more than the cores.
const WORKERS: &str = "8";

/// The specs the page lists as failing on the mock.
fn listed() -> Vec<String> {
    let start = PAGE.find(START).expect("the page's list starts");
    let end = PAGE.find(END).expect("the page's list ends");
    PAGE[start..end]
        .lines()
        .filter(|line| {
            line.starts_with("| ") && !line.starts_with("| spec ") && !line.contains("|---")
        })
        .map(|line| {
            let cells = line.trim_start_matches("| ").replace("\\|", "\u{1}");
            let spec = cells.split(" | ").next().unwrap_or_default();
            spec.replace('\u{1}', "|")
        })
        .collect()
}

/// The passed count the page's "now" row gives.
fn passed_on_page() -> usize {
    let row = PAGE
        .lines()
        .find(|line| line.starts_with("| now |"))
        .expect("the page's counts have a `now` row");
    row.split('|').nth(2).unwrap().trim().parse().unwrap()
}

/// critest and a directory holding its ginkgo as `ginkgo`, or a failure naming what is missing.
fn critest(scratch: &Path) -> (PathBuf, PathBuf) {
    let critest = std::env::var_os("CRITEST").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bin/critest-v1.36.0"),
        PathBuf::from,
    );
    if !critest.is_file() {
        support::need::unmet(
            "critest v1.36.0",
            &format!("no file at {} (set CRITEST)", critest.display()),
        );
    }
    let beside = critest.parent().unwrap();
    let ginkgo = std::fs::read_dir(beside)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("ginkgo"))
        })
        .max()
        .unwrap_or_else(|| {
            support::need::unmet(
                "ginkgo v1.36.0",
                &format!("none beside {} for --parallel", critest.display()),
            )
        });
    let bin = scratch.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&ginkgo, bin.join("ginkgo")).unwrap();
    (critest, bin)
}

/// The mock, served from the built binary on a socket in `scratch`; killed when dropped.
struct Mock {
    child: Child,
    socket: PathBuf,
}

impl Mock {
    fn start(scratch: &Path) -> Mock {
        let socket = scratch.join("mock.sock");
        let (child, line) =
            support::spawn_mock(support::harness().arg("mock").arg("--listen").arg(&socket));
        assert!(line.contains("listening"), "the mock said {line:?}");
        Mock { child, socket }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every spec critest reported, by its text, with its state and failure message.
fn report(junit: &Path) -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(junit).unwrap_or_else(|err| {
        panic!(
            "critest wrote no JUnit report at {}: {err}",
            junit.display()
        )
    });
    let document = roxmltree::Document::parse(&text).unwrap();
    document
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .filter_map(|case| {
            let name = case.attribute("name")?.strip_prefix(PREFIX)?;
            let message = case
                .children()
                .find(|child| child.has_tag_name("failure") || child.has_tag_name("skipped"))
                .and_then(|child| child.attribute("message"))
                .unwrap_or_default();
            Some((
                name.to_owned(),
                (
                    case.attribute("status").unwrap_or_default().to_owned(),
                    message.to_owned(),
                ),
            ))
        })
        .collect()
}

/// critest's focus or skip for `specs`: each regex-quoted, anchored at `[k8s.io] ` and the end.
fn anchored(specs: &[String]) -> String {
    // Go's RE2 reads a backslash before any punctuation as that character, as regex escapes it.
    let quoted: Vec<String> = specs.iter().map(|spec| regex::escape(spec)).collect();
    format!("\\[k8s\\.io\\] ({})$", quoted.join("|"))
}

/// Runs critest against a fresh mock with `filter` (`--ginkgo.skip` or `--ginkgo.focus`) and
/// answers its report.
fn run_critest(filter: (&str, String)) -> BTreeMap<String, (String, String)> {
    let scratch = tempfile::tempdir().unwrap();
    let (critest, bin) = critest(scratch.path());
    let mock = Mock::start(scratch.path());
    let junit = scratch.path().join("critest.xml");
    let endpoint = format!("unix://{}", mock.socket.display());
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let output = Command::new(&critest)
        .current_dir(scratch.path())
        .env("PATH", path)
        .args([
            "--runtime-endpoint",
            &endpoint,
            "--image-endpoint",
            &endpoint,
        ])
        .args(["--parallel", WORKERS, "--ginkgo.no-color"])
        .arg(format!("--ginkgo.junit-report={}", junit.display()))
        .arg(format!("{}={}", filter.0, filter.1))
        .output()
        .unwrap();
    let report = report(&junit);
    assert!(
        !report.is_empty(),
        "critest ran nothing; it exited {}:\n{}",
        output.status,
        support::printed(&output)
    );
    drop(mock);
    report
}

#[test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs critest v1.36.0 (../shared/bin/critest-v1.36.0, or CRITEST)"
)]
fn critest_passes_every_spec_on_the_mock_but_the_listed_ones() {
    let listed = listed();
    assert!(!listed.is_empty());
    let report = run_critest(("--ginkgo.skip", anchored(&listed)));

    // Every listed spec is one of critest's, and the skip left it out.
    let stale: Vec<&String> = listed
        .iter()
        .filter(|spec| !report.contains_key(*spec))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/critest-mock.md lists specs critest does not have: {stale:#?}"
    );

    let mut failed = Vec::new();
    let mut passed = 0;
    for (spec, (state, message)) in &report {
        match state.as_str() {
            "passed" => passed += 1,
            // Skipped by the filter, or by the spec itself (no AppArmor, a feature the mock's
            // handlers do not report).
            "skipped" => assert!(
                !listed.contains(spec) || message == "skipped",
                "{spec} ran though listed"
            ),
            _ => failed.push(format!("{spec}: {state}: {}", message.trim())),
        }
    }
    assert!(
        failed.is_empty(),
        "critest specs the page does not list fail on the mock:\n{}",
        failed.join("\n")
    );
    assert_eq!(
        passed,
        passed_on_page(),
        "docs/critest-mock.md's passed count is not what critest passed"
    );
}

#[test]
#[ignore = "about two minutes: the listed specs wait out critest's 60 s timeouts"]
fn listed_specs_still_fail_on_the_mock() {
    let listed = listed();
    let report = run_critest(("--ginkgo.focus", anchored(&listed)));
    let passing: Vec<&String> = listed
        .iter()
        .filter(|spec| {
            report
                .get(*spec)
                .is_some_and(|(state, _)| state == "passed")
        })
        .collect();
    assert!(
        passing.is_empty(),
        "docs/critest-mock.md lists specs that now pass on the mock: {passing:#?}"
    );
    // A spec may skip itself where the host lacks what it needs (the idmap mount spec): it
    // did not pass, and is listed for hosts where it runs.
    let not_failed: Vec<&String> = listed
        .iter()
        .filter(|spec| {
            !report.get(*spec).is_some_and(|(state, message)| {
                state == "failed"
                    || state == "timedout"
                    || (state == "skipped" && message != "skipped")
            })
        })
        .collect();
    assert!(
        not_failed.is_empty(),
        "listed specs that did not fail: {not_failed:#?}"
    );
}
