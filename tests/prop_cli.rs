//! `cri-harness prop` as a user runs it: seeded runs against the in-process mock print the seed
//! and the rate, the same seed gives the same cases, and unknown property names are refused
//! with the valid ones.

use crate::support;

fn prop(args: &[&str]) -> (bool, String) {
    let output = support::harness()
        .args(["prop", "--mock"])
        .args(args)
        .output()
        .unwrap();
    let text = support::printed(&output);
    (output.status.success(), text)
}

#[test]
fn a_seeded_run_on_the_mock_passes_and_prints_the_seed_and_the_rate() {
    let (ok, text) = prop(&["--cases", "30", "--seed", "11"]);
    assert!(ok, "{text}");
    assert!(text.contains("seed: 11"), "{text}");
    for property in [
        "get_pods_puts_every_object_in_exactly_one_pod",
        "pod_status_ip_comes_from_the_newest_ready_pod_network_sandbox",
        "kill_pod_tears_down_once_unless_host_network_and_stops_everything",
        "version_gating_accepts_exactly_0_1_0",
    ] {
        assert!(
            text.contains(&format!("{property}: ok, 30 cases")),
            "{text}"
        );
    }
    assert!(text.contains("cases/s"), "{text}");
}

#[test]
fn one_property_runs_alone() {
    let (ok, text) = prop(&[
        "--cases",
        "10",
        "--seed",
        "3",
        "--property",
        "version_gating_accepts_exactly_0_1_0",
    ]);
    assert!(ok, "{text}");
    assert!(
        text.contains("version_gating_accepts_exactly_0_1_0: ok"),
        "{text}"
    );
    assert!(!text.contains("get_pods_puts"), "{text}");
}

#[test]
fn an_unknown_property_is_refused_with_the_valid_names() {
    let (ok, text) = prop(&["--property", "no_such_property"]);
    assert!(!ok);
    assert!(
        text.contains("kill_pod_tears_down_once_unless_host_network_and_stops_everything"),
        "{text}"
    );
}

#[test]
fn differential_needs_a_runtime_endpoint() {
    let (ok, text) = prop(&["--differential"]);
    assert!(!ok);
    assert!(text.contains("-r/--runtime-endpoint"), "{text}");
    assert!(text.contains("not --mock"), "{text}");
}
