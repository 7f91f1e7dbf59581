//! Every test file that neither touches a real CRI runtime nor runs a foreign tool against the
//! mock, built as one test binary. Seventy binaries that each link the whole crate cost over a
//! minute of linking on a cold build, and cargo runs binaries one after another, so a file whose
//! tests wait (on a hook's grace period, a mock's modelled latency, a child process) left a core
//! idle that another file's tests now use.
//!
//! A file whose tests need a real runtime stays a binary of its own (`[[test]]` in Cargo.toml):
//! those tests share the one runtime CI starts, and one of them kills it, so they must not run
//! beside another file's. Cargo's automatic discovery of `tests/*.rs` is off; the last test here
//! fails when a file in `tests/` is in neither place, so no file is left out of the build.

mod support;

mod book_links;
mod cli_bench;
mod cli_clean;
mod cli_endpoints;
mod cli_flaky;
mod cli_fuzz;
mod cli_hold;
mod cli_log_colour;
mod cli_mock_hold;
mod cli_references;
mod cli_report;
mod cli_report_lanes;
mod cli_run;
mod cli_signals;
mod cli_version;
mod conformance_containers;
mod cri_connect;
mod critest_table;
mod deploy_manifests;
mod fuzz;
mod interrupted_mock;
mod kubelet_index;
mod kubelet_profile;
mod kubelet_stability;
mod kubelet_wire;
mod manager_wire;
mod mock_authority;
mod mock_control;
mod mock_defects;
mod mock_images;
mod mock_profiles;
mod mock_runtime;
mod mock_socket;
mod mock_stats;
mod mock_streaming;
mod netstats_steps;
mod nightly_examples;
mod pod_manifest;
mod prop_cli;
mod prop_lifecycle;
mod prop_lifecycle_gc;
mod prop_manager;
mod prop_suites;
mod registry_prefix;
mod report_history;
mod report_history_html;
mod report_merge_html;
mod rpc_coverage;
mod runner_faults;
mod runtime_features;
mod shared_sandboxes;
mod suite_load;
mod suite_load_prop;
mod suites;
mod targeted_faults;
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
        let stem = file.trim_end_matches(".rs");
        let as_module = here.contains(&format!("\nmod {stem};\n"));
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
