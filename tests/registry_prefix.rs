//! `--registry-prefix` on the real wire: a mock served on unix sockets that pulls only from
//! `127.0.0.1:PORT` (`--mock-allow-registry`), as a runtime that reaches nothing but its
//! mirror. With the prefix every embedded suite gives the verdicts it gives without one, and
//! the same references; without it, that runtime refuses the public names.

use crate::support;

use std::collections::BTreeMap;

use cri_harness::cri::{self, ConnectOptions};
use cri_harness::images::ImageNames;
use cri_harness::mock::{MockRuntime, RegistryAllowList};
use cri_harness::runner::{self, snapshot, CaseOutcome, Filter, Interrupt, SkipWhy, Target};
use cri_harness::suite::{self, Need};

/// The mirror: no registry answers here, the mock only admits its host.
const MIRROR: &str = "127.0.0.1:5000";

/// A case's verdict without its words: the outcome, and for a skip its kind.
fn verdict(outcome: &CaseOutcome) -> String {
    match outcome {
        CaseOutcome::Skipped(skip) => format!("skipped ({:?})", skip.why),
        other => format!("{:?}", other.verdict()).to_lowercase(),
    }
}

/// Every embedded case's verdict on the mock, by `suite/case`, with `names` and `allowed`;
/// with `snapshots`, every manager case must also have matched its compiled-in reference.
async fn verdicts(
    names: ImageNames,
    allowed: RegistryAllowList,
    filter: Filter,
    snapshots: bool,
) -> BTreeMap<String, CaseOutcome> {
    let loaded = suite::load_embedded();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, loaded.suites, "prefix", scratch.path());
    let references = tempfile::tempdir().unwrap();
    config.snapshot_dir = references.path().to_owned();
    config.images = names;
    config.mock_registries = allowed;
    config.filter = filter;
    let report = runner::run(config, Interrupt::new(), None).await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    if snapshots {
        for case in &report.cases {
            if let Some(checked) = &case.snapshot {
                assert_eq!(
                    checked.status,
                    snapshot::SnapshotStatus::Unchanged,
                    "{}",
                    case.full_name()
                );
            }
        }
        assert!(report.cases.iter().any(|c| c.snapshot.is_some()));
    }
    report
        .cases
        .into_iter()
        .map(|c| (format!("{}/{}", c.suite, c.case), c.outcome))
        .collect()
}

/// The embedded cases that declare a need, by `suite/case`.
fn cases_needing(need: Need) -> Vec<String> {
    suite::load_embedded()
        .suites
        .iter()
        .flat_map(|s| {
            s.cases
                .iter()
                .filter(move |c| c.needs(need))
                .map(move |c| format!("{}/{}", s.name, c.name))
        })
        .collect()
}

/// Counts of each verdict.
fn counts(verdicts: &BTreeMap<String, CaseOutcome>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for outcome in verdicts.values() {
        *counts.entry(verdict(outcome)).or_default() += 1;
    }
    counts
}

/// The whole embedded suite, once with the public names on a mock that reaches every
/// registry and once from the mirror alone: case by case the same verdict, and the same
/// references. The one exception is a case that names Docker Hub's short names (no mirror's
/// name is one): from the mirror it skips, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_embedded_suite_gives_the_same_verdicts_from_a_mirror_alone() {
    let public = verdicts(
        ImageNames::public(),
        RegistryAllowList::every(),
        Filter::default(),
        true,
    )
    .await;
    let mirrored = verdicts(
        ImageNames::with_prefix(MIRROR).unwrap(),
        RegistryAllowList::only([MIRROR]),
        Filter::default(),
        true,
    )
    .await;
    let embedded: usize = suite::load_embedded()
        .suites
        .iter()
        .map(|s| s.cases.len())
        .sum();
    assert_eq!(public.len(), embedded);
    assert_eq!(
        public.keys().collect::<Vec<_>>(),
        mirrored.keys().collect::<Vec<_>>()
    );
    let hub = cases_needing(Need::DockerHubNames);
    assert!(!hub.is_empty(), "no case names a Docker Hub short name");
    let mut differ = Vec::new();
    for (case, outcome) in &public {
        let from_mirror = &mirrored[case];
        if hub.contains(case) {
            assert_eq!(verdict(outcome), "passed", "{case}: {outcome:?}");
            let CaseOutcome::Skipped(skip) = from_mirror else {
                panic!("{case} from the mirror: {from_mirror:?}");
            };
            assert_eq!(skip.why, SkipWhy::Environment, "{case}");
            assert!(skip.reason.contains(MIRROR), "{}", skip.reason);
        } else if verdict(outcome) != verdict(from_mirror) {
            differ.push(format!(
                "{case}: {outcome:?} with public names, {from_mirror:?} from the mirror"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    let mut expected = counts(&public);
    *expected.get_mut("passed").unwrap() -= hub.len();
    *expected
        .entry("skipped (Environment)".to_owned())
        .or_default() += hub.len();
    assert_eq!(counts(&mirrored), expected);
}

/// The same mock without the prefix: the cases that pull lose their images, so the
/// allow-list is what the test above passed through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_prefix_a_mirror_only_runtime_fails_the_cases_that_pull() {
    let images_only = || Filter {
        focus: Some(regex::Regex::new("^conformance-images/").unwrap()),
        ..Filter::default()
    };
    let mirrored = verdicts(
        ImageNames::with_prefix(MIRROR).unwrap(),
        RegistryAllowList::only([MIRROR]),
        images_only(),
        false,
    )
    .await;
    let public = verdicts(
        ImageNames::public(),
        RegistryAllowList::only([MIRROR]),
        images_only(),
        false,
    )
    .await;
    for case in [
        "conformance-images/one-image-has-one-id-in-every-api",
        "conformance-images/an-image-is-listed-and-answers-as-soon-as-it-is-pulled",
        "conformance-images/one-image-from-two-registries-is-one-id",
    ] {
        assert_eq!(
            verdict(&mirrored[case]),
            "passed",
            "{case}: {:?}",
            mirrored[case]
        );
        let refused = &public[case];
        assert!(
            matches!(refused, CaseOutcome::Error(why) | CaseOutcome::Failed(why) if why.contains("NotFound")),
            "{case}: {refused:?}"
        );
    }
    let passed = |v: &BTreeMap<String, CaseOutcome>| {
        v.values()
            .filter(|o| matches!(o, CaseOutcome::Passed))
            .count()
    };
    assert!(passed(&public) < passed(&mirrored));
}

/// On the wire: the allow-listed mock pulls the mirror's names and refuses every other
/// registry's with NotFound, a reference in the catalogue or not.
#[tokio::test]
async fn a_mirror_only_mock_pulls_its_mirrors_names_and_no_others() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::new()
        .with_registries(RegistryAllowList::only([MIRROR]))
        .serve_unix(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    let endpoint = server.endpoint();
    let client = cri::connect(&endpoint, &endpoint, &ConnectOptions::default())
        .await
        .unwrap();
    let names = ImageNames::with_prefix(MIRROR).unwrap();
    for symbol in ["pause", "busybox", "harness-two-registries"] {
        let public = ImageNames::public().resolve(symbol);
        let err = client.pull_image(&public).await.unwrap_err();
        assert_eq!(err.code, tonic::Code::NotFound, "{public}");
        let mirrored = names.resolve(symbol);
        assert!(mirrored.starts_with("127.0.0.1:5000/"), "{mirrored}");
        client.pull_image(&mirrored).await.unwrap();
    }
    for other in ["busybox", "127.0.0.1:5001/cri-harness/digest:1"] {
        let err = client.pull_image(other).await.unwrap_err();
        assert_eq!(err.code, tonic::Code::NotFound, "{other}");
    }
    server.shutdown().await;
}

/// A case that asks for an image by a short name declares `docker_hub_names`, so a run from
/// a mirror skips it rather than failing on a name the mirror cannot have.
#[test]
fn every_case_that_names_a_short_name_declares_docker_hub_names() {
    for suite in suite::load_embedded().suites {
        for case in &suite.cases {
            let uses_short_names = case.steps.iter().any(|step| {
                serde_json::to_string(step).is_ok_and(|text| text.contains("\"short_name\""))
            });
            assert_eq!(
                uses_short_names,
                case.needs(Need::DockerHubNames),
                "{}/{}",
                suite.name,
                case.name
            );
        }
    }
}

/// `run --mock --mock-allow-registry` as typed: the image-manager case that pulls by a
/// harness name fails NotFound without the prefix and passes with it; a prefix no reference
/// can start with, and an allow-list without the mock, are refused before anything runs.
#[test]
fn the_flags_as_a_user_types_them() {
    let snapshots = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        support::harness()
            .args(["run", "--mock", "--snapshot-dir"])
            .arg(snapshots.path())
            .args([
                "--focus",
                "^conformance-images/one-image-has-one-id-in-every-api$",
                "--mock-allow-registry",
                MIRROR,
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = run(&[]);
    let printed = support::printed(&refused);
    assert!(!refused.status.success(), "{printed}");
    assert!(printed.contains("NotFound"), "{printed}");
    let mirrored = run(&["--registry-prefix", MIRROR]);
    let printed = support::printed(&mirrored);
    assert!(mirrored.status.success(), "{printed}");
    assert!(printed.contains("images from: 127.0.0.1:5000"), "{printed}");
    assert!(printed.contains("1 passed, 0 failed"), "{printed}");

    let bad = run(&["--registry-prefix", "http://127.0.0.1:5000"]);
    assert!(!bad.status.success());
    assert!(support::printed(&bad).contains("has a scheme"));
    let endpoint = support::harness()
        .args([
            "run",
            "-r",
            "unix:///nonexistent.sock",
            "--mock-allow-registry",
            MIRROR,
        ])
        .output()
        .unwrap();
    assert!(!endpoint.status.success());
    assert!(support::printed(&endpoint).contains("--mock-allow-registry needs --mock"));
}

/// `bench` on a mirror-only mock: with the prefix every benchmark's iterations succeed, the
/// image benchmarks pulling the mirror's names; without it their pulls are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_pulls_its_images_from_the_mirror() {
    use cri_harness::bench::{self, Benchmark};

    let failures = |names: ImageNames| async move {
        let dir = tempfile::tempdir().unwrap();
        let server = MockRuntime::new()
            .with_registries(RegistryAllowList::only([MIRROR]))
            .serve_unix(&dir.path().join("cri.sock"))
            .await
            .unwrap();
        let endpoint = server.endpoint();
        let client = cri::connect(&endpoint, &endpoint, &ConnectOptions::default())
            .await
            .unwrap();
        let config = bench::Config {
            run_id: "benchprefix".to_owned(),
            iterations: 2,
            parallel: 1,
            runtime_handler: String::new(),
            benchmarks: Benchmark::ALL.to_vec(),
            images: names,
        };
        let stop = tokio_util::sync::CancellationToken::new();
        let report = bench::run(&client, &config, &stop, |_| {}).await.unwrap();
        server.shutdown().await;
        assert!(report.image.starts_with(MIRROR) == config.images.prefix().is_some());
        report
            .benchmarks
            .into_iter()
            .map(|b| (b.name, b.failures))
            .collect::<BTreeMap<_, _>>()
    };
    let mirrored = failures(ImageNames::with_prefix(MIRROR).unwrap()).await;
    assert!(mirrored.values().all(|&f| f == 0), "{mirrored:?}");
    let public = failures(ImageNames::public()).await;
    assert!(public.values().any(|&f| f > 0), "{public:?}");
}
