//! Generated node reports for the merge's tests and benchmark: N nodes over several runtime
//! versions and kernels, with a failure one runtime version shares (a snapshot diff), rare
//! scattered failures and skips. Deterministic, so a test can count what it expects.

use std::path::PathBuf;
use std::time::Duration;

use super::model::Merged;
use super::read;
use crate::report::model::{
    CaseOutcome, CaseReport, RunReport, SkipWhy, SnapshotReport, SnapshotStatus,
};
use crate::report::node::Node;

/// `(runtime name, runtime version)` the generated nodes run, the first most often.
pub const RUNTIMES: [(&str, &str); 3] = [
    ("containerd", "v1.7.24"),
    ("containerd", "v1.6.38"),
    ("cri-o", "1.30.4"),
];

/// `(kernel, OS image)` of the generated nodes.
pub const KERNELS: [(&str, &str); 3] = [
    ("6.1.0-28-amd64", "Debian GNU/Linux 12 (bookworm)"),
    ("5.15.0-126-generic", "Ubuntu 22.04.5 LTS"),
    ("6.8.0-49-generic", "Ubuntu 24.04.1 LTS"),
];

/// The first `n` `(suite, case)` names of the embedded suites, made-up ones after them if the
/// suites have fewer.
pub fn case_names(n: usize) -> Vec<(String, String)> {
    let loaded = crate::suite::load_embedded();
    let mut names: Vec<(String, String)> = loaded
        .suites
        .iter()
        .flat_map(|s| s.cases.iter().map(|c| (s.name.clone(), c.name.clone())))
        .take(n)
        .collect();
    let real = names.len();
    names.extend((real..n).map(|i| ("generated".to_owned(), format!("case-{i}"))));
    names
}

fn mix(a: u64, b: u64) -> u64 {
    // splitmix64 of the pair: cheap, stable across platforms and versions.
    let mut z = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_add(0x632b_e59b_d9b7_e9c3);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The runtime of generated node `i`: 60 % the first, 30 % the second, 10 % the third.
fn runtime_of(i: usize) -> (&'static str, &'static str) {
    match i % 10 {
        0..=5 => RUNTIMES[0],
        6..=8 => RUNTIMES[1],
        _ => RUNTIMES[2],
    }
}

/// `n` node reports over `cases`: node names `node-0000`..., the second runtime fails the
/// sixth case with a snapshot diff, about one cell in 400 fails elsewhere with a timeout,
/// every 29th case is skipped everywhere and every 17th on the third runtime.
pub fn node_reports(n: usize, cases: &[(String, String)]) -> Vec<RunReport> {
    (0..n)
        .map(|i| {
            let (runtime_name, runtime_version) = runtime_of(i);
            let (kernel, os_image) = KERNELS[(i / 3) % KERNELS.len()];
            let cases = cases
                .iter()
                .enumerate()
                .map(|(j, (suite, case))| {
                    let mut snapshot = None;
                    let outcome = if j % 29 == 0 {
                        CaseOutcome::skipped(SkipWhy::MockOnly, "needs the mock's control service")
                    } else if j % 17 == 3 && runtime_name == "cri-o" {
                        CaseOutcome::skipped(SkipWhy::RuntimeLacks, "the runtime lacks user namespaces")
                    } else if j == 5 && runtime_version == RUNTIMES[1].1 {
                        snapshot = Some(SnapshotReport {
                            path: format!("snapshots/{suite}__{case}.snap").into(),
                            status: SnapshotStatus::Changed {
                                diff: "@@ -3,2 +3,2 @@\n-  state: SANDBOX_READY\n+  state: SANDBOX_NOTREADY\n   network: <ip:1>\n".into(),
                                new_path: None,
                            },
                        });
                        CaseOutcome::Failed("snapshot changed: PodSandboxStatus differs from the stored snapshot".into())
                    } else if mix(i as u64, j as u64).is_multiple_of(400) {
                        CaseOutcome::Failed(format!(
                            "step 3 (create_container): CreateContainer timed out after 60s on node-{i:04}"
                        ))
                    } else {
                        CaseOutcome::Passed
                    };
                    CaseReport {
                        suite: suite.clone(),
                        case: case.clone(),
                        source: format!("suites/{suite}.yaml"),
                        line: 10 + j,
                        number: j + 1,
                        outcome,
                        duration: Duration::from_micros(500 + mix(j as u64, i as u64) % 200_000),
                        snapshot,
                        clause: None,
                        notes: Vec::new(),
                        finding_fixed: None,
                        environment: None,
                        timing: Default::default(),
                        unreachable: false,
                        feature_gates: Default::default(),
                        attempts: 1,
                        failures: Vec::new(),
                        stopped: None,
                        rpcs: Vec::new(),
                    }
                })
                .collect();
            RunReport {
                run_id: format!("gen{i:04}"),
                target: "unix:///run/containerd/containerd.sock".into(),
                target_kind: runtime_name.into(),
                runtime_handler: String::new(),
                mock_profile: String::new(),
                kubelet: Some("seed".into()),
                cases,
                errors: Vec::new(),
                aborted: None,
                interrupted: false,
                duration: Duration::from_millis(40_000 + (mix(i as u64, 7) % 20_000)),
                started_at: None,
                node: Node {
                    name: format!("node-{i:04}"),
                    kernel: kernel.into(),
                    os_image: Some(os_image.into()),
                    runtime_name: Some(runtime_name.into()),
                    runtime_version: Some(runtime_version.into()),
                },
                strict: false,
                known_findings: None,
                feature_gates: Default::default(),
            }
        })
        .collect()
}

/// The merge of `reports` as `report merge` would see them: each rendered as its JSON line and
/// read back, named `<node>.log`.
pub fn merged(reports: &[RunReport]) -> Merged {
    let read: Vec<(PathBuf, RunReport)> = reports
        .iter()
        .filter_map(|r| {
            let line = crate::report::line(r).ok()?;
            let report = read::parse(&line).ok()?;
            Some((PathBuf::from(format!("{}.log", r.node.name)), report))
        })
        .collect();
    Merged::new(read, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::Verdict;

    #[test]
    fn generated_reports_vary_in_runtime_and_kernel_and_some_fail() {
        let reports = node_reports(30, &case_names(40));
        let merged = merged(&reports);
        assert_eq!(merged.nodes.len(), 30);
        assert_eq!(merged.cases.len(), 40);
        assert!(merged.groups.len() >= 6, "{:?}", merged.groups.len());
        let failed: usize = reports.iter().map(RunReport::failed).sum();
        assert!(failed >= 9, "{failed}");
        assert_eq!(merged.count(Verdict::Failed), failed);
        assert_eq!(
            merged.count(Verdict::Skipped),
            reports.iter().map(RunReport::skipped).sum::<usize>()
        );
        assert!(merged
            .nodes
            .iter()
            .flat_map(|n| n.cells.iter().flatten())
            .any(|c| c.diff.is_some()));
    }

    #[test]
    fn the_case_names_are_the_embedded_suites_then_made_up_ones() {
        let names = case_names(1_000);
        assert_eq!(names.len(), 1_000);
        assert_ne!(names[0].0, "generated");
        assert_eq!(names[999], ("generated".to_owned(), "case-999".to_owned()));
    }
}
