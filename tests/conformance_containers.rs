//! The conformance steps' failure paths on the mock: a wrong expectation fails its case with a
//! message that names the field, the expected value and the observed one; a suite that asks
//! for something these steps cannot mean is refused when it loads.

use crate::support;

use cri_harness::runner::{self, CaseOutcome, Interrupt, Target};
use cri_harness::suite;
use rstest::rstest;

/// Runs one case (its steps given as YAML) on a fresh mock; its outcome.
async fn outcome(steps: &str) -> CaseOutcome {
    let text = format!(
        "suite: wrong\nabout: wrong expectations\ncases:\n  - name: c\n    steps:\n{steps}"
    );
    let suite = suite::parse("suites/wrong.yaml", &text).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, vec![suite], "wrong", scratch.path());
    config.parallel = 1;
    let report = runner::run(config, Interrupt::new(), None).await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    assert_eq!(report.cases.len(), 1);
    report.cases[0].outcome.clone()
}

#[rstest]
#[case::runtime_condition(
    "      - runtime_status: {expect: {conditions: {NetworkReady: false}}}\n",
    r#"conditions.NetworkReady: expected false, got true (reason "", message "")"#
)]
#[case::missing_condition(
    "      - runtime_status: {expect: {conditions: {DiskReady: true}}}\n",
    "conditions.DiskReady: expected true, got not reported (reported: [RuntimeReady, NetworkReady])"
)]
#[case::runtime_name(
    "      - runtime_version: {expect: {runtime_name: {equals: containerd}}}\n",
    r#"runtime_name: expected "containerd", got "cri-harness-mock""#
)]
#[case::sandbox_state(
    "      - run_sandbox: {as: sb, pod: web}\n      - stop_sandbox: sb\n      - sandbox_status: {sandbox: sb, expect: {state: ready}}\n",
    "state: expected ready, got not_ready"
)]
#[case::sandbox_ip(
    "      - run_sandbox: {as: sb, pod: web}\n      - stop_sandbox: sb\n      - sandbox_status: {sandbox: sb, expect: {ip: present}}\n",
    r#"ip: expected present, got absent ("")"#
)]
#[case::sandbox_labels(
    "      - run_sandbox: {as: sb, pod: web, labels: {tier: web}}\n      - sandbox_status: {sandbox: sb, expect: {labels: {tier: db}}}\n",
    "labels: expected at least {tier: db}, got {tier: web}"
)]
#[case::sandbox_annotations(
    "      - run_sandbox: {as: sb, pod: web, annotations: {a: b}}\n      - sandbox_status: {sandbox: sb, expect: {annotations: {a: c}}}\n",
    "annotations: expected at least {a: c}, got {a: b}"
)]
#[case::sandbox_still_there(
    "      - run_sandbox: {as: sb, pod: web}\n      - sandbox_status: {sandbox: sb, expect: {error: {code: NotFound}}}\n",
    "error: expected an error (code NotFound), got success"
)]
#[case::sandbox_gone(
    "      - run_sandbox: {as: sb, pod: web}\n      - remove_sandbox: sb\n      - sandbox_status: {sandbox: sb}\n",
    r#"step 3 `sandbox_status`: CRI PodSandboxStatus on <endpoint>: NotFound: an error occurred when try to find sandbox "<sandbox:sb>": not found"#
)]
#[case::container_killed_not_completed(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - start_container: app\n      - stop_container: {container: app}\n      - container_status: {container: app, expect: {exit_code: 0}}\n",
    "exit_code: expected 0, got 137"
)]
#[case::container_reason(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - start_container: app\n      - stop_container: {container: app}\n      - container_status: {container: app, expect: {reason: {equals: Completed}}}\n",
    r#"reason: expected "Completed", got "Error""#
)]
#[case::container_not_started(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - container_status: {container: app, expect: {started: true}}\n",
    "started_at: expected set, got 0"
)]
#[case::container_state(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - container_status: {container: app, expect: {state: running}}\n",
    "state: expected running, got created"
)]
#[case::container_labels(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb, labels: {x: y}}\n      - container_status: {container: app, expect: {labels: {x: z}}}\n",
    "labels: expected at least {x: z}, got {x: y}"
)]
#[case::listed_sandboxes(
    "      - run_sandbox: {as: a, pod: web}\n      - run_sandbox: {as: b, pod: db}\n      - list_sandboxes: {state: ready, expect: {sandboxes: [a]}}\n",
    "sandboxes: expected [a], got [a, b]"
)]
#[case::sandbox_id_prefix(
    "      - run_sandbox: {as: a, pod: web}\n      - run_sandbox: {as: b, pod: db}\n      - list_sandboxes: {id: b, id_prefix: 12, expect: {sandboxes: [a]}}\n",
    "sandboxes: expected [a], got [b]"
)]
#[case::listed_sandbox_state(
    "      - run_sandbox: {as: a, pod: web}\n      - list_sandboxes: {expect: {states: {a: not_ready}}}\n",
    "states.a: expected not_ready, got ready"
)]
#[case::container_id_prefix(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: one, sandbox: sb}\n      - create_container: {as: two, sandbox: sb}\n      - list_containers: {id: one, id_prefix: 12, expect: {containers: [two]}}\n",
    "containers: expected [two], got [one]"
)]
#[case::unknown_remove_succeeds(
    "      - call_unknown_id: {method: RemoveContainer, expect: {error: {code: NotFound}}}\n",
    "error: expected an error (code NotFound), got success"
)]
#[case::unknown_status_is_not_found(
    "      - call_unknown_id: {method: PodSandboxStatus, expect: {error: {code: Unknown}}}\n",
    "error.code: expected Unknown, got NotFound"
)]
#[case::wait_bounded(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - wait_container: {container: app, state: exited, within_ms: 30}\n",
    "wait_container app: expected exited within 30 ms, got still created"
)]
#[case::reopen_created(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - reopen_container_log: {container: app, rotate: false}\n",
    "step 3 `reopen_container_log`: CRI ReopenContainerLog on <endpoint>: Unknown: container is not running"
)]
#[case::malformed_log_line(
    concat!(
        "      - run_sandbox: {as: sb, pod: web, log_directory: true}\n",
        "      - create_container: {as: app, sandbox: sb}\n",
        "      - make_host_path: {path: logs/sb/app/0.log, kind: file, content: \"not a log line\\n\"}\n",
        "      - check_log: {container: app, expect: {lines: [{stream: stdout, equals: x}]}}\n",
    ),
    r#"log of app: expected CRI log lines, got line 1 "not a log line": timestamp "not" is not an RFC 3339 time"#
)]
#[case::log_line_before_the_container(
    concat!(
        "      - run_sandbox: {as: sb, pod: web, log_directory: true}\n",
        "      - create_container: {as: app, sandbox: sb}\n",
        "      - make_host_path: {path: logs/sb/app/0.log, kind: file, content: \"2016-10-06T00:17:09Z stdout F x\\n\"}\n",
        "      - check_log: {container: app, expect: {lines: [{stream: stdout, equals: x}]}}\n",
    ),
    "log of app: expected CRI log timestamps, got line 1: timestamp 1475713029000000000 is outside the container's life so far"
)]
#[case::log_line_never_finished(
    concat!(
        "      - run_sandbox: {as: sb, pod: web, log_directory: true}\n",
        "      - create_container: {as: app, sandbox: sb}\n",
        "      - make_host_path: {path: logs/sb/app/0.log, kind: file, content: \"2016-10-06T00:17:09Z stdout F x\"}\n",
        "      - check_log: {container: app, within_ms: 30, expect: {lines: [{stream: stdout, equals: x}]}}\n",
    ),
    r#"log of app: expected in order per stream [stdout equal to "x"] within 30 ms, got []"#
)]
#[case::no_log_file(
    concat!(
        "      - run_sandbox: {as: sb, pod: web, log_directory: true}\n",
        "      - create_container: {as: app, sandbox: sb}\n",
        "      - check_log: {container: app, within_ms: 30, expect: {lines: [{stream: stderr, contains: x}]}}\n",
    ),
    "got no current log file"
)]
#[case::reopen_makes_no_new_file(
    concat!(
        "      - run_sandbox: {as: sb, pod: web, log_directory: true}\n",
        "      - create_container: {as: app, sandbox: sb}\n",
        "      - make_host_path: {path: logs/sb/app/0.log, kind: file}\n",
        "      - start_container: app\n",
        "      - reopen_container_log: {container: app}\n",
    ),
    "reopen_container_log app: expected a new log file at the log path once the call returns, got none"
)]
#[case::log_path_not_echoed(
    "      - run_sandbox: {as: sb, pod: web, log_directory: true}\n      - create_container: {as: app, sandbox: sb}\n      - container_status: {container: app, expect: {log_path: empty}}\n",
    r#"log_path: expected "", got "/"#
)]
#[tokio::test]
async fn a_wrong_expectation_fails_naming_the_field(#[case] steps: &str, #[case] message: &str) {
    match outcome(steps).await {
        CaseOutcome::Failed(reason) => {
            assert!(reason.contains(message), "{reason:?} lacks {message:?}")
        }
        other => panic!("expected a failure containing {message:?}, got {other:?}"),
    }
}

#[rstest]
#[case::prefix_without_id("      - list_sandboxes: {id_prefix: 12}\n", "`id_prefix` needs `id`")]
#[case::whole_id_as_prefix(
    "      - run_sandbox: {as: sb, pod: web}\n      - sandbox_status: {sandbox: sb, id_prefix: 64}\n",
    "id_prefix: 64 characters is the whole id"
)]
#[case::rotating_reopen_expected_to_fail(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - reopen_container_log: {container: app, expect: {error: {code: Unknown}}}\n",
    "say `rotate: false`"
)]
#[case::log_check_without_lines(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - check_log: {container: app, expect: {lines: []}}\n",
    "`expect.lines` is empty: name at least one line"
)]
#[case::unbounded_wait(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - wait_container: {container: app, state: exited, within_ms: 0}\n",
    "within_ms: 0 is not in 1-120000 milliseconds"
)]
#[case::unknown_container_alias(
    "      - container_status: {container: nobody}\n",
    "unknown container alias `nobody`"
)]
#[case::unknown_method(
    "      - call_unknown_id: {method: ExecSync}\n",
    "`method`: unknown value `ExecSync`, expected one of `PodSandboxStatus`"
)]
#[case::bad_log_pattern(
    "      - run_sandbox: {as: sb, pod: web}\n      - create_container: {as: app, sandbox: sb}\n      - check_log: {container: app, expect: {lines: [{stream: stdout, matches: '('}]}}\n",
    "expect.lines[0]: `matches` is not a valid regular expression"
)]
fn a_step_that_cannot_mean_anything_is_refused_when_loading(
    #[case] steps: &str,
    #[case] message: &str,
) {
    let text = format!("suite: bad\nabout: x\ncases:\n  - name: c\n    steps:\n{steps}");
    let err = suite::parse("suites/bad.yaml", &text)
        .unwrap_err()
        .to_string();
    assert!(err.contains(message), "{err:?} lacks {message:?}");
}
