//! The contract fuzzer on the mock: with each of four mutants it finds the break and
//! shrinks it to at most 4 calls, and the suite case it prints replays with the runner, failing
//! on that mutant and passing on a sound mock; a break only some runs show is flaky and does
//! not end the run; a sound mock, fuzzed longer, shows nothing.

use crate::support;

use std::time::{Duration, Instant};

use cri_harness::cri::Endpoint;
use cri_harness::fuzz::{self, print, Options, Report, Where};
use cri_harness::mock::{Defect, MockRuntime};
use cri_harness::runner::{CaseOutcome, Target};
use cri_harness::suite;

/// Each mutant and the clause its shrunk sequence must name.
const MUTANTS: &[(Defect, &str)] = &[
    (
        Defect::StopUnknownContainerNotFound,
        "container.stop.idempotent",
    ),
    (Defect::RemoveAbsentImageNotFound, "image.remove.idempotent"),
    (
        Defect::ListContainerStatsIgnoresLabelFilter,
        "stats.list.filters",
    ),
    (Defect::ListSandboxDropsStateFilter, "sandbox.list.filters"),
];

fn options(defects: Vec<Defect>, seed: u64, duration: Duration, sequences: Option<u64>) -> Options {
    Options {
        seed,
        parallel: 4,
        max_calls: 12,
        duration,
        max_sequences: sequences,
        run_id: "fuzztest".to_owned(),
        target: Where::Mock(defects),
        known: None,
        images: Default::default(),
    }
}

/// The outcome of the printed case on a mock with `defects`, served on a unix socket and run
/// as a real runtime would be.
async fn replay(text: &str, defects: &[Defect]) -> Vec<(String, CaseOutcome)> {
    let suite = suite::parse("fuzz-replay.yaml", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::with_defects(defects.iter().copied())
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .unwrap();
    let endpoint = Endpoint::Unix(server.path().to_path_buf());
    let target = Target::Endpoint {
        runtime: endpoint.clone(),
        image: endpoint,
    };
    let scratch = tempfile::tempdir().unwrap();
    let config = support::run_config(target, vec![suite], "fuzzreplay", scratch.path());
    support::run_outcomes(config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_mutant_is_found_shrunk_to_at_most_four_calls_and_replays() {
    for (defect, clause) in MUTANTS {
        let started = Instant::now();
        let report: Report = fuzz::fuzz(options(vec![*defect], 11, Duration::from_secs(120), None))
            .await
            .unwrap();
        let Some(shrunk) = &report.failure else {
            panic!(
                "{defect:?}: nothing found in {} sequences",
                report.sequences
            );
        };
        assert_eq!(
            shrunk.failure.clause, *clause,
            "{defect:?}: {}",
            shrunk.failure
        );
        assert!(
            shrunk.calls.len() <= 4,
            "{defect:?}: shrunk to {} calls: {:?}",
            shrunk.calls.len(),
            shrunk.calls
        );
        assert!(shrunk.seed_line.starts_with("cc ") && shrunk.seed_line.len() == 3 + 64);
        eprintln!(
            "{defect:?}: found after {:.2} s, shrunk to {} calls, {:.1} s in all",
            shrunk.found_after.as_secs_f64(),
            shrunk.calls.len(),
            started.elapsed().as_secs_f64()
        );
        let case = print::suite_case(shrunk, "test");
        assert_eq!(case.clause, *clause);
        let text = print::suite_file("fuzz-replay", "replayed", &[case]).unwrap();
        let on_mutant = replay(&text, &[*defect]).await;
        assert_eq!(on_mutant.len(), 1, "{on_mutant:?}");
        assert!(
            matches!(&on_mutant[0].1, CaseOutcome::Failed(_)),
            "{defect:?}: the printed case should fail on the mutant, got {on_mutant:?}\n{text}"
        );
        let on_sound = replay(&text, &[]).await;
        assert!(
            matches!(&on_sound[0].1, CaseOutcome::Passed),
            "{defect:?}: the printed case should pass on a sound mock, got {on_sound:?}\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sound_mock_fuzzed_longer_breaks_no_clause() {
    let report = fuzz::fuzz(options(Vec::new(), 5, Duration::from_secs(60), Some(1500)))
        .await
        .unwrap();
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert!(report.flaky.is_empty(), "{:?}", report.flaky);
    assert!(report.known.is_empty());
    assert!(
        report.sequences >= 300,
        "only {} sequences",
        report.sequences
    );
    assert!(
        report.calls > report.sequences * 5,
        "{} calls",
        report.calls
    );
}

/// A break that only some runs of the same calls show is a race: counted as flaky with how many
/// runs broke it, kept as found, and the run goes on to its bound without a failure. The
/// mutant fails in every other mock made with it, so with one worker the first run and 5 of
/// its 10 replays break the clause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_break_only_some_runs_show_is_flaky_and_the_run_goes_on() {
    let mut options = options(
        vec![Defect::RacyStopOfExitedContainer],
        2,
        Duration::from_secs(300),
        Some(150),
    );
    options.parallel = 1;
    let report = fuzz::fuzz(options).await.unwrap();
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert!(report.sequences >= 150, "{} sequences", report.sequences);
    let clauses: Vec<&str> = report.flaky.keys().copied().collect();
    assert_eq!(clauses, ["container.stop.exited"]);
    let flaky = &report.flaky["container.stop.exited"];
    assert_eq!((flaky.failed_runs, flaky.runs), (6, 11));
    assert_eq!(
        flaky.example.shrink_runs, 0,
        "a flaky break is kept as found"
    );
    assert!(
        flaky.example.failure.actual.contains("not yet recorded"),
        "{}",
        flaky.example.failure
    );
    let case = print::suite_case(&flaky.example, "flaky");
    let text = print::suite_file("fuzz-flaky", "flaky", &[case]).unwrap();
    let on_sound = replay(&text, &[]).await;
    assert!(
        matches!(&on_sound[0].1, CaseOutcome::Passed),
        "the case as found should pass on a sound mock, got {on_sound:?}\n{text}"
    );
}

#[test]
fn a_sequence_seed_regenerates_its_sequence() {
    let seed = fuzz::run::sequence_seed(42, 1, 7);
    let again = fuzz::run::sequence_seed(42, 1, 7);
    assert_eq!(seed, again);
    let ops = fuzz::run::ops_of_seed(&seed, 12).unwrap();
    assert_eq!(ops, fuzz::run::ops_of_seed(&seed, 12).unwrap());
    assert!(!ops.is_empty() && ops.len() <= 12);
    assert_ne!(
        ops,
        fuzz::run::ops_of_seed(&fuzz::run::sequence_seed(42, 1, 8), 12).unwrap()
    );
}
