//! Which optional CRI features the target has, read from what it reports rather than from its
//! name: `Status.features` for the runtime as a whole, and `Status.runtime_handlers[]` for the
//! handler the run's sandboxes ask for (`--runtime-handler`, or the default handler, whose
//! name is empty). A runtime that reports no such field lacks the feature: that is how CRI
//! lets an older runtime say nothing about it.

use crate::cri::v1;
use crate::suite::Need;

/// Why the runtime whose `Status` answer is `status` lacks `need` for sandboxes run with
/// `handler`, or `None` when it has it, or when `need` is not answered in `Status`.
pub fn status_lacks(status: &v1::StatusResponse, handler: &str, need: Need) -> Option<String> {
    let handler_feature = |name: &str, has: fn(&v1::RuntimeHandlerFeatures) -> bool| {
        let shown = if handler.is_empty() {
            "the default runtime handler".to_owned()
        } else {
            format!("runtime handler {handler:?}")
        };
        match status.runtime_handlers.iter().find(|h| h.name == handler) {
            None if status.runtime_handlers.is_empty() => Some(format!(
                "Status reports no runtime_handlers, so {shown} has no {name}"
            )),
            None => Some(format!("Status.runtime_handlers lists no {shown}")),
            Some(h) if h.features.as_ref().is_some_and(has) => None,
            Some(_) => Some(format!(
                "Status.runtime_handlers[{handler:?}].features.{name} is false"
            )),
        }
    };
    match need {
        Need::UserNamespaces => handler_feature("user_namespaces", |f| f.user_namespaces),
        Need::RecursiveReadOnlyMounts => handler_feature("recursive_read_only_mounts", |f| {
            f.recursive_read_only_mounts
        }),
        Need::SupplementalGroupsPolicy => (!status
            .features
            .as_ref()
            .is_some_and(|f| f.supplemental_groups_policy))
        .then(|| "Status.features.supplemental_groups_policy is false".to_owned()),
        _ => None,
    }
}

/// The first of `needs` the runtime lacks, with why.
pub fn first_status_lack(
    status: &v1::StatusResponse,
    handler: &str,
    needs: &[Need],
) -> Option<(Need, String)> {
    needs
        .iter()
        .find_map(|&need| status_lacks(status, handler, need).map(|why| (need, why)))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn status(handlers: &[(&str, bool, bool)], groups_policy: Option<bool>) -> v1::StatusResponse {
        v1::StatusResponse {
            runtime_handlers: handlers
                .iter()
                .map(|&(name, rro, userns)| v1::RuntimeHandler {
                    name: name.to_owned(),
                    features: Some(v1::RuntimeHandlerFeatures {
                        recursive_read_only_mounts: rro,
                        user_namespaces: userns,
                    }),
                })
                .collect(),
            features: groups_policy.map(|on| v1::RuntimeFeatures {
                supplemental_groups_policy: on,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::an_older_runtime_reports_no_handlers(&[], "", Need::UserNamespaces, Some("reports no runtime_handlers"))]
    #[case::the_default_handler_has_it(&[("", false, true)], "", Need::UserNamespaces, None)]
    #[case::the_default_handler_lacks_it(&[("", true, false)], "", Need::UserNamespaces, Some("features.user_namespaces is false"))]
    #[case::the_runs_handler_counts_not_the_default(&[("", true, true), ("kata", false, false)], "kata", Need::RecursiveReadOnlyMounts, Some("[\"kata\"].features.recursive_read_only_mounts is false"))]
    #[case::a_handler_it_does_not_list(&[("", true, true)], "kata", Need::UserNamespaces, Some("lists no runtime handler \"kata\""))]
    #[case::the_named_handler_has_it(&[("", false, false), ("kata", true, false)], "kata", Need::RecursiveReadOnlyMounts, None)]
    #[case::not_a_status_need(&[], "", Need::Process, None)]
    fn handler_features_are_read_for_the_runs_handler(
        #[case] handlers: &[(&str, bool, bool)],
        #[case] handler: &str,
        #[case] need: Need,
        #[case] lack: Option<&str>,
    ) {
        let got = status_lacks(&status(handlers, None), handler, need);
        match lack {
            None => assert_eq!(got, None),
            Some(part) => assert!(
                got.as_deref().is_some_and(|why| why.contains(part)),
                "{got:?}"
            ),
        }
        assert_eq!(need.in_status(), need != Need::Process);
    }

    #[rstest]
    #[case::absent(None, true)]
    #[case::false_(Some(false), true)]
    #[case::true_(Some(true), false)]
    fn the_groups_policy_is_a_runtime_wide_feature(#[case] on: Option<bool>, #[case] lacks: bool) {
        let got = status_lacks(&status(&[], on), "", Need::SupplementalGroupsPolicy);
        assert_eq!(got.is_some(), lacks, "{got:?}");
    }
}
