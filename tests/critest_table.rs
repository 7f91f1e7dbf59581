//! `docs/critest.md` is true. Its v1.36.0 table has exactly one row for each spec critest
//! v1.36.0 registers on this machine kind (`tests/fixtures/critest/v1.36.0.txt`: 117
//! validation specs and 5 benchmarks), and its master table one row for each master spec the
//! harness mirrors (`master.txt`). Every case a row names exists and cites that spec in its
//! `about:`; every case that cites a spec is in its row; a case cites no spec that critest
//! does not have (`critest "X"` names a v1.36.0, master or SELinux spec; `critest v1.26.1 "X"`
//! one of v1.26.1); each benchmark row names a benchmark `cri-harness bench` runs.

use std::collections::{BTreeMap, BTreeSet};

use cri_harness::bench::Benchmark;
use cri_harness::suite;

const DOC: &str = "docs/critest.md";

/// The spec names of one fixture file.
fn fixture(name: &str) -> BTreeSet<String> {
    std::fs::read_to_string(format!("tests/fixtures/critest/{name}"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// A table of the doc: `spec → cases`, and its benchmark rows' names.
struct Table {
    specs: BTreeMap<String, Vec<String>>,
    benchmarks: BTreeMap<String, String>,
}

fn table(which: &str) -> Table {
    let doc = std::fs::read_to_string(DOC).unwrap();
    let start_marker = format!("<!-- critest {which} table: checked by tests/critest_table.rs -->");
    let end_marker = format!("<!-- end of critest {which} table -->");
    let start = doc.find(&start_marker).expect("the table's start marker") + start_marker.len();
    let end = doc.find(&end_marker).expect("the table's end marker");
    let mut table = Table {
        specs: BTreeMap::new(),
        benchmarks: BTreeMap::new(),
    };
    for row in doc[start..end].lines().filter(|l| l.starts_with("| ")) {
        // A `|` inside a spec's name is written `\|`, as Markdown tables need.
        let row = row.replace("\\|", "\u{0}");
        let cells: Vec<String> = row
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().replace('\u{0}', "|"))
            .collect();
        if cells.len() < 2 || cells[0].starts_with("critest ") || cells[0].starts_with("---") {
            continue;
        }
        let spec = cells[0].clone();
        if let Some(bench) = cells[1].strip_prefix("`cri-harness bench` ") {
            table
                .benchmarks
                .insert(spec, bench.trim_matches('`').to_owned());
            continue;
        }
        let cases = cells[1]
            .split(", ")
            .filter(|c| *c != "-")
            .map(|c| c.trim_matches('`').to_owned())
            .collect();
        assert!(
            table.specs.insert(spec.clone(), cases).is_none(),
            "{spec} has two rows"
        );
    }
    table
}

fn normal(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every embedded case's `suite/case` and its `about:`, whitespace folded.
fn abouts() -> BTreeMap<String, String> {
    suite::load_embedded()
        .suites
        .iter()
        .flat_map(|s| {
            s.cases.iter().map(move |c| {
                (
                    c.full_name(s),
                    normal(c.about.as_deref().unwrap_or_default()),
                )
            })
        })
        .collect()
}

/// The specs `about` cites with `marker` (`critest "` or `critest v1.26.1 "`).
fn citations<'a>(about: &'a str, marker: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    about
        .match_indices(marker)
        .filter(move |(at, _)| marker != "critest \"" || !about[..*at].ends_with("v1.26.1 "))
        .filter_map(move |(at, _)| {
            let rest = &about[at + marker.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
}

fn check_rows(which: &str, table: &Table, abouts: &BTreeMap<String, String>) {
    for (spec, cases) in &table.specs {
        assert!(!cases.is_empty(), "{which}: {spec} has no case");
        for case in cases {
            let about = abouts
                .get(case)
                .unwrap_or_else(|| panic!("{which}: {spec}: no case {case}"));
            assert!(
                citations(about, "critest \"").any(|cited| cited == spec),
                "{case} does not cite critest \"{spec}\" in its about: {about}"
            );
        }
    }
}

#[test]
fn every_v1_36_spec_has_a_row_with_cases_that_cite_it() {
    let table = table("v1.36.0");
    let rows: BTreeSet<String> = table
        .specs
        .keys()
        .chain(table.benchmarks.keys())
        .cloned()
        .collect();
    let specs = fixture("v1.36.0.txt");
    assert_eq!(
        specs.len(),
        122,
        "117 validation specs and 5 benchmarks register here"
    );
    let missing: Vec<_> = specs.difference(&rows).collect();
    let extra: Vec<_> = rows.difference(&specs).collect();
    assert!(missing.is_empty(), "specs with no row: {missing:#?}");
    assert!(
        extra.is_empty(),
        "rows that are no v1.36.0 spec: {extra:#?}"
    );
    check_rows("v1.36.0", &table, &abouts());
    let known: BTreeSet<String> = Benchmark::ALL.iter().map(ToString::to_string).collect();
    let named: BTreeSet<String> = table.benchmarks.values().cloned().collect();
    assert_eq!(
        named, known,
        "each of bench's benchmarks has exactly one row"
    );
}

#[test]
fn every_master_spec_the_harness_mirrors_has_a_row_with_cases_that_cite_it() {
    let table = table("master");
    let rows: BTreeSet<String> = table.specs.keys().cloned().collect();
    assert_eq!(rows, fixture("master.txt"));
    check_rows("master", &table, &abouts());
}

#[test]
fn every_cited_spec_exists_and_its_row_names_the_case() {
    let current: BTreeSet<String> = fixture("v1.36.0.txt")
        .into_iter()
        .chain(fixture("master.txt"))
        .chain(fixture("selinux.txt"))
        .collect();
    let older = fixture("v1.26.1.txt");
    let tables = [table("v1.36.0"), table("master")];
    let mut cited = 0;
    for (case, about) in abouts() {
        for spec in citations(&about, "critest \"") {
            cited += 1;
            // `"... tail"` refers back to a spec the about cited in full.
            if let Some(tail) = spec.strip_prefix("... ") {
                assert!(
                    current.iter().any(|s| s.ends_with(tail)),
                    "{case} cites no spec's tail: {spec}"
                );
                continue;
            }
            assert!(
                current.contains(spec),
                "{case} cites critest \"{spec}\", which v1.36.0 and master do not have (cite an older name as critest v1.26.1 \"...\")"
            );
            for table in &tables {
                if let Some(cases) = table.specs.get(spec) {
                    assert!(
                        cases.contains(&case),
                        "{case} mirrors \"{spec}\" but its row omits it"
                    );
                }
            }
        }
        for spec in citations(&about, "critest v1.26.1 \"") {
            assert!(older.contains(spec), "{case} cites no v1.26.1 spec: {spec}");
        }
    }
    assert!(cited > 100, "only {cited} citations found");
}

/// A stand-in critest for `ci/conformance-speed.sh`: it writes the JUnit report ginkgo would,
/// holding `mode`'s specs of the set the script asked for (its rows.tsv, beside the report).
fn stand_in_critest(dir: &std::path::Path, mode: &str) -> std::path::PathBuf {
    let path = dir.join("critest");
    let script = format!(
        r#"#!/usr/bin/env bash
mode={mode}
junit=""
while [ $# -gt 0 ]; do
  [ "$1" = --ginkgo.junit-report ] && junit="$2"
  shift
done
if [ "$mode" = crash ]; then echo 'exec: "ginkgo": executable file not found in $PATH'; exit 1; fi
{{
  echo '<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="CRI validation">'
  n=0
  while IFS=$'\t' read -r spec _; do
    n=$((n + 1))
    case "$mode" in none) continue ;; all-but-one) [ "$n" = 1 ] && continue ;; esac
    printf '<testcase name="[It] [k8s.io] %s" status="passed"></testcase>\n' "${{spec//&/&amp;}}"
  done <"$(dirname "$junit")/rows.tsv"
  echo '</testsuite></testsuites>'
}} >"$junit"
echo "Ran $n of 122 Specs"
"#
    );
    std::fs::write(&path, script).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .unwrap();
    path
}

/// `ci/conformance-speed.sh` times critest only when critest ran the set's specs, all of them
/// and no other, as its JUnit report says: a critest that ran none, one too few, or none at all
/// fails the script before a ratio is printed. With a stand-in that ran exactly the set, the
/// script goes on to the harness, here a stand-in that fails, so it stops there: the control
/// that the check passes what it should.
#[rstest::rstest]
#[case::that_runs_no_spec("none", "critest run 1 ran 0 specs where the set has")]
#[case::that_exits_before_any_report("crash", "critest run 1 wrote no JUnit report")]
#[case::that_runs_one_spec_too_few("all-but-one", "1 of the set's specs did not run")]
#[case::that_runs_the_sets_specs_exactly("all", "conformance-speed: run 1 had failures")]
fn the_speed_script_fails_on_a_critest_that_did_not_run_the_sets_specs(
    #[case] mode: &str,
    #[case] says: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("bash")
        .args(["ci/conformance-speed.sh", "1", "core"])
        .env("CRITEST", stand_in_critest(dir.path(), mode))
        .env("CRIH_BIN", "false")
        .env(
            "CONTAINER_RUNTIME_ENDPOINT",
            "unix:///nonexistent/stand-in.sock",
        )
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(says),
        "wanted {says:?} in:\n{stdout}\n{stderr}"
    );
    assert!(!stdout.contains("ratio"), "{stdout}");
}

/// `ci/critest-check.py failures`: a spec critest failed is accepted only when the harness's
/// run reports its mirror as a listed finding or a skip, or when the lab's images cannot pass
/// it (MaskedPaths alone); any other failure is unexplained, and the check fails.
#[rstest::rstest]
#[case::whose_mirror_passed("passed", "a spec", false)]
#[case::whose_mirror_is_a_listed_finding("known", "a spec", true)]
#[case::whose_mirror_cannot_run_here("skipped", "a spec", true)]
#[case::that_the_lab_images_cannot_pass(
    "passed",
    "Security Context bucket runtime should support MaskedPaths",
    true
)]
fn a_failed_critest_spec_is_accepted_only_for_a_reason(
    #[case] mirror: &str,
    #[case] spec: &str,
    #[case] accepted: bool,
) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    std::fs::write(out.join("rows.tsv"), format!("{spec}\tsuite/mirror\n")).unwrap();
    std::fs::write(
        out.join("critest1.xml"),
        format!(
            r#"<testsuites><testsuite><testcase name="[It] [k8s.io] {spec}" status="failed"><failure message="boom"/></testcase></testsuite></testsuites>"#
        ),
    )
    .unwrap();
    std::fs::write(out.join("critest1.status"), "1\n").unwrap();
    std::fs::create_dir(out.join("run1")).unwrap();
    std::fs::write(
        out.join("run1/results.json"),
        format!(r#"{{"cases": [{{"suite": "suite", "case": "mirror", "outcome": "{mirror}"}}]}}"#),
    )
    .unwrap();
    let output = std::process::Command::new("python3")
        .arg("ci/critest-check.py")
        .arg("failures")
        .arg(out)
        .arg("1")
        .output()
        .unwrap();
    let said = crate::support::printed(&output);
    assert_eq!(output.status.success(), accepted, "{said}");
    if accepted {
        assert!(said.contains("accepted"), "{said}");
    } else {
        assert!(said.contains("no listed finding"), "{said}");
    }
}
