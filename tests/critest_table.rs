//! The README's critest-spec → case table is true: it has a row for each of critest v1.26.1's
//! specs of the first conformance part (36), of the second (the 35 Security Context and 3
//! Mount Propagation specs), of streaming (the 5 Streaming specs and multiple containers'
//! exec) and its five benchmarks; every case a row names exists and cites
//! that spec in its `about:`, every case that cites a spec is in its row, and each benchmark
//! row names a benchmark `cri-harness bench` runs.

use std::collections::{BTreeMap, BTreeSet};

use cri_harness::bench::Benchmark;
use cri_harness::suite;

const START: &str = "<!-- critest table: checked by tests/critest_table.rs -->";
const END: &str = "<!-- end of critest table -->";
/// The areas of the second part: the security contract.
const PART_TWO: &[&str] = &["Security Context ", "Container Mount Propagation "];
/// The streaming part: the five Streaming specs and this one.
const MULTIPLE_EXEC: &str =
    "Multiple Containers [Conformance] when running multiple containers in a pod should support container exec";

/// `spec → cases` from the README, and the benchmark rows' names.
fn table() -> (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, String>) {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let start = readme.find(START).expect("the table's start marker") + START.len();
    let end = readme.find(END).expect("the table's end marker");
    let mut specs = BTreeMap::new();
    let mut benchmarks = BTreeMap::new();
    for row in readme[start..end].lines().filter(|l| l.starts_with("| ")) {
        // A `|` inside a spec's name is written `\|`, as Markdown tables need.
        let row = row.replace("\\|", "\u{0}");
        let cells: Vec<String> = row
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().replace('\u{0}', "|"))
            .collect();
        if cells.len() < 2 || cells[0] == "critest v1.26.1 spec" || cells[0].starts_with("---") {
            continue;
        }
        let spec = cells[0].clone();
        if let Some(bench) = cells[1].strip_prefix("`cri-harness bench` ") {
            benchmarks.insert(spec, bench.trim_matches('`').to_owned());
            continue;
        }
        let cases = cells[1]
            .split(", ")
            .map(|c| c.trim_matches('`').to_owned())
            .collect();
        assert!(
            specs.insert(spec.clone(), cases).is_none(),
            "{spec} has two rows"
        );
    }
    (specs, benchmarks)
}

fn normal(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_spec_of_both_parts_has_its_cases_and_every_cited_case_is_in_the_table() {
    let (specs, benchmarks) = table();
    let (streaming, rest): (Vec<&String>, Vec<&String>) = specs
        .keys()
        .partition(|spec| spec.starts_with("Streaming ") || spec.as_str() == MULTIPLE_EXEC);
    let (part_two, part_one): (Vec<&String>, Vec<&String>) = rest
        .into_iter()
        .partition(|spec| PART_TWO.iter().any(|area| spec.starts_with(area)));
    assert_eq!(part_one.len(), 36, "{part_one:#?}");
    assert_eq!(part_two.len(), 38, "{part_two:#?}");
    assert_eq!(streaming.len(), 6, "{streaming:#?}");
    assert_eq!(benchmarks.len(), 5, "{benchmarks:#?}");
    let loaded = suite::load_embedded();
    let abouts: BTreeMap<String, String> = loaded
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
        .collect();
    for (spec, cases) in &specs {
        assert!(!cases.is_empty(), "{spec} has no case");
        for case in cases {
            let about = abouts
                .get(case)
                .unwrap_or_else(|| panic!("{spec}: no case {case}"));
            assert!(
                about.contains(&format!("\"{spec}\"")),
                "{case} does not cite \"{spec}\" in its about: {about}"
            );
        }
    }
    for (case, about) in &abouts {
        for (spec, cases) in &specs {
            if about.starts_with(&format!("critest \"{spec}\"")) {
                assert!(
                    cases.contains(case),
                    "{case} mirrors \"{spec}\" but its row omits it"
                );
            }
        }
    }
    let known: BTreeSet<String> = Benchmark::ALL.iter().map(ToString::to_string).collect();
    let named: BTreeSet<String> = benchmarks.values().cloned().collect();
    assert_eq!(
        named, known,
        "each of bench's benchmarks has exactly one row"
    );
}
