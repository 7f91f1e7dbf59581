//! The failure paths of the stats, connect and host-path steps, run on the mock through the
//! runner as a suite would run them: each case below must fail, and its message must name the
//! field and what was seen. The passing paths run in the embedded suites.

use crate::support;

use cri_harness::runner::{self, CaseOutcome, Interrupt, Target};
use cri_harness::suite;
use tokio::io::AsyncWriteExt;

/// Runs one suite's cases on fresh mocks and returns each case's outcome, by case order.
async fn outcomes(text: &str) -> Vec<CaseOutcome> {
    let suite = suite::parse("netstats.yaml", text).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let config = support::run_config(Target::Mock, vec![suite], "netstats", scratch.path());
    let mut report = runner::run(config, Interrupt::new(), None).await;
    report.cases.sort_by_key(|c| c.number);
    report.cases.into_iter().map(|c| c.outcome).collect()
}

fn assert_fails_with(outcome: &CaseOutcome, parts: &[&str]) {
    let CaseOutcome::Failed(message) = outcome else {
        panic!("expected a failure naming {parts:?}, got {outcome:?}");
    };
    for part in parts {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}

const STATS: &str = r#"
suite: stats-failures
about: Stats expectations that do not hold on the mock.
cases:
  - name: a-created-container-has-no-stats-of-its-own
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - container_stats: {container: app, expect: {cpu: nonzero}}
  - name: a-running-container-has-memory
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - start_container: app
      - container_stats: {container: app, expect: {memory: absent}}
  - name: a-frozen-clock-stops-cpu-time
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - start_container: app
      - mock_set_clock: {unix_seconds: 1700000000}
      - container_stats: {container: app, expect: {cpu_grows_within_ms: 150}}
  - name: the-wrong-containers-answer
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: a, sandbox: sb}
      - create_container: {as: b, sandbox: sb}
      - list_container_stats: {expect: {containers: [a]}}
  - name: a-figure-of-a-container-not-in-the-answer
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: a, sandbox: sb}
      - create_container: {as: b, sandbox: sb}
      - list_container_stats: {filter: {id: a}, expect: {writable_layer: {b: present}}}
  - name: a-created-container-has-no-cpu-in-the-list
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: a, sandbox: sb}
      - list_container_stats: {expect: {cpu: {a: present}}}
  - name: an-expected-error-that-does-not-come
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: a, sandbox: sb}
      - start_container: a
      - container_stats: {container: a, expect: {error: {code: NotFound}}}
  - name: a-stopped-sandbox-has-no-pod-stats
    steps:
      - run_sandbox: {as: sb, pod: web}
      - stop_sandbox: sb
      - pod_sandbox_stats: {sandbox: sb, expect: {cpu: present}}
  - name: pod-stats-list-the-wrong-containers
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: a, sandbox: sb}
      - create_container: {as: b, sandbox: sb}
      - pod_sandbox_stats: {sandbox: sb, expect: {containers: [a]}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_expectations_that_do_not_hold_fail_naming_the_field() {
    let outcomes = outcomes(STATS).await;
    let expected: [&[&str]; 9] = [
        &[
            "step 3 `container_stats`",
            "CRI ContainerStats on <endpoint>: Unknown: unexpected metrics response",
        ],
        &["memory: expected absent, got "],
        &[
            "cpu_grows_within_ms: expected cpu.usage_core_nano_seconds above ",
            "within 150 ms",
        ],
        &["containers: expected [a], got [a, b]"],
        &["stats.b: expected in the answer, got absent; answered [a]"],
        &["stats.a.cpu: expected present, got absent"],
        &["error: expected an error (code NotFound), got success"],
        &[
            "CRI PodSandboxStats on <endpoint>: Unavailable",
            "not in ready state",
        ],
        &["containers: expected [a], got [a, b]"],
    ];
    assert_eq!(outcomes.len(), expected.len());
    for (outcome, parts) in outcomes.iter().zip(expected) {
        assert_fails_with(outcome, parts);
    }
}

/// A server on 127.0.0.1 that answers every connection with `answer` and closes.
async fn server(answer: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    port
}

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_checks_the_answer_and_the_refusal() {
    // The mock serves from this process, so its node is this network namespace.
    let open = server("hello\n").await;
    let closed = closed_port();
    let text = format!(
        r#"
suite: connect-failures
about: Connections on 127.0.0.1 of this process, where the mock's node is.
cases:
  - name: the-answer-holds
    steps:
      - connect: {{to: {{host_port: {open}}}, expect: {{answer: {{equals: "hello\n"}}}}}}
  - name: the-answer-differs
    steps:
      - connect: {{to: {{host_port: {open}}}, within_ms: 200, expect: {{answer: {{contains: bye}}}}}}
  - name: a-refusal-expected-but-it-answers
    steps:
      - connect: {{to: {{host_port: {open}}}, within_ms: 200, expect: {{refused: true}}}}
  - name: an-answer-expected-but-refused
    steps:
      - connect: {{to: {{host_port: {closed}}}, within_ms: 200}}
  - name: the-refusal-holds
    steps:
      - connect: {{to: {{host_port: {closed}}}, expect: {{refused: true}}}}
"#
    );
    let outcomes = outcomes(&text).await;
    assert_eq!(outcomes.len(), 5);
    assert_eq!(outcomes[0], CaseOutcome::Passed);
    assert_fails_with(
        &outcomes[1],
        &[
            &format!("connect host port {open} from the node"),
            "expected an answer containing \"bye\"",
            "got an answer \"hello\\n\"",
            "tries in",
        ],
    );
    assert_fails_with(
        &outcomes[2],
        &[
            "expected the connection refused",
            "got an answer \"hello\\n\"",
        ],
    );
    assert_fails_with(
        &outcomes[3],
        &[
            "expected an accepted connection",
            &format!("got refused at <ip>:{closed}"),
        ],
    );
    assert_eq!(outcomes[4], CaseOutcome::Passed);
}

const HOST_PATHS: &str = r#"
suite: host-path-failures
about: Host-path and namespace expectations that do not hold on the mock.
cases:
  - name: the-content-differs
    steps:
      - make_host_path: {path: f, kind: file, content: "one\n"}
      - check_host_path: {path: f, expect: {content: {equals: "two\n"}}}
  - name: a-path-that-should-not-be-there
    steps:
      - make_host_path: {path: d, kind: dir}
      - check_host_path: {path: d, expect: {exists: false}}
  - name: a-path-that-should-be-there
    steps:
      - check_host_path: {path: missing}
  - name: a-pod-namespace-the-harness-cannot-open
    steps:
      - run_sandbox: {as: sb, pod: web}
      - run_sandbox: {as: client, pod: api}
      - connect: {to: {sandbox: sb, port: 80}, from: {sandbox: client}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_path_and_origin_failures_name_the_path() {
    let outcomes = outcomes(HOST_PATHS).await;
    assert_eq!(outcomes.len(), 4);
    assert_fails_with(
        &outcomes[0],
        &["check_host_path f.content: expected \"two\\n\", got \"one\\n\""],
    );
    assert_fails_with(
        &outcomes[1],
        &["check_host_path d: expected absent, got exists"],
    );
    assert_fails_with(
        &outcomes[2],
        &["check_host_path missing: expected exists, got absent"],
    );
    // The mock's pods have made-up namespace paths: the step says it cannot read them rather
    // than connecting from somewhere else.
    assert_fails_with(
        &outcomes[3],
        &["connect from client: cannot read the network namespace"],
    );
}
