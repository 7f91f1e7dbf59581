//! A case that needs an optional feature reads it from the runtime, for the run's handler:
//! the mock's default handler reports every feature, its `featureless` handler none, so the
//! same case runs on one and skips as `runtime_lacks` on the other, naming the feature and
//! where the runtime said so.

use crate::support;

use cri_harness::runner::{self, CaseOutcome, Interrupt, SkipWhy, Target};
use cri_harness::suite;
use rstest::rstest;

async fn outcome(need: &str, handler: &str) -> CaseOutcome {
    let text = format!(
        "suite: features\nabout: a feature read from the runtime\ncases:\n  - name: c\n    needs: [{need}]\n    steps:\n      - run_sandbox: {{as: sb, pod: web}}\n      - sandbox_status: {{sandbox: sb, expect: {{state: ready}}}}\n"
    );
    let suite = suite::parse("suites/features.yaml", &text).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, vec![suite], "features", scratch.path());
    config.runtime_handler = handler.to_owned();
    let report = runner::run(config, Interrupt::new(), None).await;
    assert_eq!(report.cases.len(), 1);
    report.cases[0].outcome.clone()
}

#[rstest]
#[case::user_namespaces(
    "user_namespaces",
    "runtime_handlers[\"featureless\"].features.user_namespaces is false"
)]
#[case::recursive_read_only_mounts(
    "recursive_read_only_mounts",
    "features.recursive_read_only_mounts is false"
)]
#[tokio::test]
async fn a_handler_feature_counts_for_the_runs_handler(#[case] need: &str, #[case] why: &str) {
    assert_eq!(outcome(need, "").await, CaseOutcome::Passed);
    match outcome(need, "featureless").await {
        CaseOutcome::Skipped(skip) => {
            assert_eq!(skip.why, SkipWhy::RuntimeLacks);
            assert!(
                skip.reason.contains(&format!("lacks {need}")),
                "{}",
                skip.reason
            );
            assert!(skip.reason.contains(why), "{}", skip.reason);
        }
        other => panic!("{need} on the featureless handler: {other:?}"),
    }
}

#[tokio::test]
async fn a_handler_the_runtime_does_not_list_has_no_features() {
    match outcome("user_namespaces", "kata").await {
        CaseOutcome::Skipped(skip) => {
            assert_eq!(skip.why, SkipWhy::RuntimeLacks);
            assert!(
                skip.reason.contains("lists no runtime handler \"kata\""),
                "{}",
                skip.reason
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_groups_policy_is_the_runtimes_whatever_the_handler() {
    assert_eq!(
        outcome("supplemental_groups_policy", "featureless").await,
        CaseOutcome::Passed
    );
}
