//! Every test file that neither touches a real CRI runtime nor runs a foreign tool against the
//! mock, built as one test binary. Seventy binaries that each link the whole crate cost minutes
//! of linking on a cold build, and cargo runs binaries one after another, so a file whose tests
//! wait (on a hook's grace period, a mock's modelled latency, a child process) left a core idle
//! that another file's tests now use.
//!
//! A file whose tests need a real runtime stays a binary of its own (`[[test]]` in Cargo.toml):
//! those tests share the one runtime CI starts, and one of them kills it, so they must not run
//! beside another file's. Cargo's automatic discovery of `tests/*.rs` is off; the last test here
//! fails when a file in `tests/` is in neither place, so no file is left out of the build.

mod support;

#[path = "book_links.rs"]
mod book_links;
#[path = "cli_bench.rs"]
mod cli_bench;
#[path = "cli_clean.rs"]
mod cli_clean;
#[path = "cli_endpoints.rs"]
mod cli_endpoints;
#[path = "cli_flaky.rs"]
mod cli_flaky;
#[path = "cli_fuzz.rs"]
mod cli_fuzz;
#[path = "cli_hold.rs"]
mod cli_hold;
#[path = "cli_log_colour.rs"]
mod cli_log_colour;
#[path = "cli_mock_hold.rs"]
mod cli_mock_hold;
#[path = "cli_references.rs"]
mod cli_references;
#[path = "cli_report.rs"]
mod cli_report;
#[path = "cli_report_lanes.rs"]
mod cli_report_lanes;
#[path = "cli_run.rs"]
mod cli_run;
#[path = "cli_signals.rs"]
mod cli_signals;
#[path = "cli_version.rs"]
mod cli_version;
#[path = "conformance_containers.rs"]
mod conformance_containers;
#[path = "cri_connect.rs"]
mod cri_connect;
#[path = "critest_table.rs"]
mod critest_table;
#[path = "deploy_manifests.rs"]
mod deploy_manifests;
#[path = "fuzz.rs"]
mod fuzz;
#[path = "interrupted_mock.rs"]
mod interrupted_mock;
#[path = "kubelet_index.rs"]
mod kubelet_index;
#[path = "kubelet_profile.rs"]
mod kubelet_profile;
#[path = "kubelet_stability.rs"]
mod kubelet_stability;
#[path = "kubelet_wire.rs"]
mod kubelet_wire;
#[path = "manager_wire.rs"]
mod manager_wire;
#[path = "mock_authority.rs"]
mod mock_authority;
#[path = "mock_control.rs"]
mod mock_control;
#[path = "mock_defects.rs"]
mod mock_defects;
#[path = "mock_images.rs"]
mod mock_images;
#[path = "mock_profiles.rs"]
mod mock_profiles;
#[path = "mock_runtime.rs"]
mod mock_runtime;
#[path = "mock_socket.rs"]
mod mock_socket;
#[path = "mock_stats.rs"]
mod mock_stats;
#[path = "mock_streaming.rs"]
mod mock_streaming;
#[path = "netstats_steps.rs"]
mod netstats_steps;
#[path = "nightly_examples.rs"]
mod nightly_examples;
#[path = "pod_manifest.rs"]
mod pod_manifest;
#[path = "prop_cli.rs"]
mod prop_cli;
#[path = "prop_lifecycle.rs"]
mod prop_lifecycle;
#[path = "prop_lifecycle_gc.rs"]
mod prop_lifecycle_gc;
#[path = "prop_manager.rs"]
mod prop_manager;
#[path = "prop_suites.rs"]
mod prop_suites;
#[path = "registry_prefix.rs"]
mod registry_prefix;
#[path = "report_history.rs"]
mod report_history;
#[path = "report_history_html.rs"]
mod report_history_html;
#[path = "report_merge_html.rs"]
mod report_merge_html;
#[path = "rpc_coverage.rs"]
mod rpc_coverage;
#[path = "runner_faults.rs"]
mod runner_faults;
#[path = "runtime_features.rs"]
mod runtime_features;
#[path = "suite_load.rs"]
mod suite_load;
#[path = "suite_load_prop.rs"]
mod suite_load_prop;
#[path = "suites.rs"]
mod suites;
#[path = "targeted_faults.rs"]
mod targeted_faults;
#[path = "verdicts.rs"]
mod verdicts;

/// Every `tests/*.rs` is compiled: declared here as a module, or a `[[test]]` target of its own
/// in Cargo.toml, and not both.
#[test]
fn every_test_file_is_in_exactly_one_test_binary() {
    let here = include_str!("all.rs");
    let manifest = include_str!("../Cargo.toml");
    let mut missing = Vec::new();
    let mut twice = Vec::new();
    for entry in std::fs::read_dir("tests").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "rs") || path.ends_with("all.rs") {
            continue;
        }
        let file = path.file_name().unwrap().to_str().unwrap();
        let as_module = here.contains(&format!("#[path = \"{file}\"]"));
        let as_target = manifest.contains(&format!("path = \"tests/{file}\""));
        match (as_module, as_target) {
            (false, false) => missing.push(file.to_owned()),
            (true, true) => twice.push(file.to_owned()),
            _ => {}
        }
    }
    assert!(
        missing.is_empty(),
        "test files no binary compiles: {missing:?}"
    );
    assert!(twice.is_empty(), "test files in two binaries: {twice:?}");
}
