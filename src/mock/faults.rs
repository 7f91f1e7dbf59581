//! Faults a suite injected through the control service: queued error answers and delays per
//! CRI method, each aimed at every call or at the calls naming one sandbox, container or image,
//! from the nth such call on. Matched and consumed as calls arrive, under the mock's lock.

use std::collections::HashMap;
use std::time::Duration;

use crate::cri::v1;

/// Every RuntimeService and ImageService method, by the short name the control service takes.
pub(crate) const CRI_METHODS: &[&str] = &[
    // RuntimeService
    "Version",
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "PodSandboxStatus",
    "ListPodSandbox",
    "StreamPodSandboxes",
    "CreateContainer",
    "StartContainer",
    "StopContainer",
    "RemoveContainer",
    "ListContainers",
    "StreamContainers",
    "ContainerStatus",
    "UpdateContainerResources",
    "ReopenContainerLog",
    "ExecSync",
    "Exec",
    "Attach",
    "PortForward",
    "ContainerStats",
    "ListContainerStats",
    "StreamContainerStats",
    "PodSandboxStats",
    "ListPodSandboxStats",
    "StreamPodSandboxStats",
    "UpdateRuntimeConfig",
    "Status",
    "CheckpointContainer",
    "GetContainerEvents",
    "ListMetricDescriptors",
    "ListPodSandboxMetrics",
    "StreamPodSandboxMetrics",
    "RuntimeConfig",
    "UpdatePodSandboxResources",
    // ImageService
    "ListImages",
    "StreamImages",
    "ImageStatus",
    "PullImage",
    "RemoveImage",
    "ImageFsInfo",
];

/// The canonical name for `method`, if it is a CRI method.
pub(crate) fn cri_method(method: &str) -> Option<&'static str> {
    CRI_METHODS.iter().copied().find(|m| *m == method)
}

/// What a CRI request names that a targeted fault can aim at.
pub(crate) trait FaultTarget {
    /// The sandbox id, container id or image reference the request names, as the client sent
    /// it; `None` when it names none (or sent an empty one).
    fn fault_target(&self) -> Option<&str>;
}

/// Implements [`FaultTarget`] for every CRI request and lists, per method, what it names.
macro_rules! fault_targets {
    (
        $($kind:literal { $($method:literal: $request:ident => |$r:ident| $target:expr,)* })*
        none { $($plain:literal: $plain_request:ident,)* }
    ) => {
        /// The methods whose requests name a sandbox, container or image, and which it is.
        pub(crate) const TARGETED_METHODS: &[(&str, &str)] = &[$($(($method, $kind),)*)*];

        /// Every method with its request message's name, for checking against the schema.
        #[cfg(test)]
        const REQUESTS: &[(&str, &str)] = &[
            $($(($method, stringify!($request)),)*)*
            $(($plain, stringify!($plain_request)),)*
        ];

        $($(impl FaultTarget for v1::$request {
            fn fault_target(&self) -> Option<&str> {
                let $r = self;
                let target: &str = $target;
                (!target.is_empty()).then_some(target)
            }
        })*)*

        $(impl FaultTarget for v1::$plain_request {
            fn fault_target(&self) -> Option<&str> {
                None
            }
        })*
    };
}

fault_targets! {
    "sandbox" {
        "StopPodSandbox": StopPodSandboxRequest => |r| &r.pod_sandbox_id,
        "RemovePodSandbox": RemovePodSandboxRequest => |r| &r.pod_sandbox_id,
        "PodSandboxStatus": PodSandboxStatusRequest => |r| &r.pod_sandbox_id,
        "CreateContainer": CreateContainerRequest => |r| &r.pod_sandbox_id,
        "PortForward": PortForwardRequest => |r| &r.pod_sandbox_id,
        "PodSandboxStats": PodSandboxStatsRequest => |r| &r.pod_sandbox_id,
        "UpdatePodSandboxResources": UpdatePodSandboxResourcesRequest => |r| &r.pod_sandbox_id,
    }
    "container" {
        "StartContainer": StartContainerRequest => |r| &r.container_id,
        "StopContainer": StopContainerRequest => |r| &r.container_id,
        "RemoveContainer": RemoveContainerRequest => |r| &r.container_id,
        "ContainerStatus": ContainerStatusRequest => |r| &r.container_id,
        "UpdateContainerResources": UpdateContainerResourcesRequest => |r| &r.container_id,
        "ReopenContainerLog": ReopenContainerLogRequest => |r| &r.container_id,
        "ExecSync": ExecSyncRequest => |r| &r.container_id,
        "Exec": ExecRequest => |r| &r.container_id,
        "Attach": AttachRequest => |r| &r.container_id,
        "ContainerStats": ContainerStatsRequest => |r| &r.container_id,
        "CheckpointContainer": CheckpointContainerRequest => |r| &r.container_id,
    }
    "image" {
        "ImageStatus": ImageStatusRequest => |r| image_reference(&r.image),
        "PullImage": PullImageRequest => |r| image_reference(&r.image),
        "RemoveImage": RemoveImageRequest => |r| image_reference(&r.image),
    }
    none {
        "Version": VersionRequest,
        "RunPodSandbox": RunPodSandboxRequest,
        "ListPodSandbox": ListPodSandboxRequest,
        "StreamPodSandboxes": StreamPodSandboxesRequest,
        "ListContainers": ListContainersRequest,
        "StreamContainers": StreamContainersRequest,
        "ListContainerStats": ListContainerStatsRequest,
        "StreamContainerStats": StreamContainerStatsRequest,
        "ListPodSandboxStats": ListPodSandboxStatsRequest,
        "StreamPodSandboxStats": StreamPodSandboxStatsRequest,
        "UpdateRuntimeConfig": UpdateRuntimeConfigRequest,
        "Status": StatusRequest,
        "GetContainerEvents": GetEventsRequest,
        "ListMetricDescriptors": ListMetricDescriptorsRequest,
        "ListPodSandboxMetrics": ListPodSandboxMetricsRequest,
        "StreamPodSandboxMetrics": StreamPodSandboxMetricsRequest,
        "RuntimeConfig": RuntimeConfigRequest,
        "ListImages": ListImagesRequest,
        "StreamImages": StreamImagesRequest,
        "ImageFsInfo": ImageFsInfoRequest,
    }
}

fn image_reference(spec: &Option<v1::ImageSpec>) -> &str {
    spec.as_ref().map_or("", |spec| spec.image.as_str())
}

/// What `method`'s requests name ("sandbox", "container" or "image"), if anything.
pub(crate) fn target_kind(method: &str) -> Option<&'static str> {
    TARGETED_METHODS
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, kind)| *kind)
}

/// Which calls of a method an injection hits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Aim {
    /// Only calls whose request names exactly this sandbox id, container id or image
    /// reference; every call of the method when `None`.
    pub(crate) target: Option<String>,
    /// The first call hit is the nth matching call from the injection on (0 and 1: the next).
    pub(crate) nth: u32,
}

/// The matching state one injection keeps: which calls it hits and how many are left.
#[derive(Debug)]
struct Rule<T> {
    target: Option<String>,
    /// Matching calls still to let through before the nth.
    skip: u32,
    /// Calls still to hit; `None` for every call until Reset.
    remaining: Option<u32>,
    what: T,
}

impl<T> Rule<T> {
    fn new(aim: Aim, remaining: Option<u32>, what: T) -> Self {
        Self {
            target: aim.target,
            skip: aim.nth.saturating_sub(1),
            remaining,
            what,
        }
    }

    fn matches(&self, target: Option<&str>) -> bool {
        self.target
            .as_deref()
            .is_none_or(|wanted| Some(wanted) == target)
    }
}

/// Counts an arriving call (naming `target`) against every rule it matches, and consumes the
/// first rule it is due for. A due rule that loses the call to an earlier one stays due, so
/// rules on one method queue in order as they always have.
fn hit<T: Clone>(rules: &mut Vec<Rule<T>>, target: Option<&str>) -> Option<T> {
    let mut due = None;
    for (index, rule) in rules.iter_mut().enumerate() {
        if !rule.matches(target) {
            continue;
        }
        if rule.skip > 0 {
            rule.skip -= 1;
        } else if due.is_none() {
            due = Some(index);
        }
    }
    let index = due?;
    let rule = &mut rules[index];
    let what = rule.what.clone();
    if let Some(remaining) = &mut rule.remaining {
        *remaining = remaining.saturating_sub(1);
        if *remaining == 0 {
            rules.remove(index);
        }
    }
    Some(what)
}

/// An error answer, cloned into the status of every call it hits.
#[derive(Debug, Clone)]
struct InjectedError {
    code: tonic::Code,
    message: String,
}

/// An injected delay and what the delayed call does if its client leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Latency {
    /// How long the call waits before it takes effect and answers.
    pub(crate) delay: Duration,
    /// It takes effect even if its client went away meanwhile.
    pub(crate) finish_if_abandoned: bool,
}

/// Injected errors (per method, in injection order) and delays (per method, one per target,
/// targeted ones first so a call takes its own target's delay over the method-wide one).
#[derive(Debug, Default)]
pub(crate) struct Faults {
    errors: HashMap<&'static str, Vec<Rule<InjectedError>>>,
    latency: HashMap<&'static str, Vec<Rule<Latency>>>,
}

impl Faults {
    /// Makes `count` calls of `method` that `aim` selects fail (at least one; a call already
    /// failing for an earlier injection is not counted as one of them).
    pub(crate) fn inject_error(
        &mut self,
        method: &'static str,
        aim: Aim,
        code: tonic::Code,
        message: String,
        count: u32,
    ) {
        let error = InjectedError { code, message };
        let rule = Rule::new(aim, Some(count.max(1)), error);
        self.errors.entry(method).or_default().push(rule);
    }

    /// Delays `count` calls of `method` that `aim` selects (every one when `count` is 0).
    /// Replaces an earlier delay of the method for the same target; a zero delay removes it.
    #[cfg(test)]
    pub(crate) fn inject_latency(
        &mut self,
        method: &'static str,
        aim: Aim,
        delay: Duration,
        count: u32,
    ) {
        let latency = Latency {
            delay,
            finish_if_abandoned: false,
        };
        self.inject(method, aim, latency, count);
    }

    /// Delays `count` calls of `method` that `aim` selects (every one when `count` is 0), as
    /// `latency` says. Replaces an earlier delay of the method for the same target; a zero
    /// delay removes it.
    pub(crate) fn inject(&mut self, method: &'static str, aim: Aim, latency: Latency, count: u32) {
        let rules = self.latency.entry(method).or_default();
        rules.retain(|rule| rule.target != aim.target);
        if !latency.delay.is_zero() {
            let targeted = aim.target.is_some();
            let rule = Rule::new(aim, (count > 0).then_some(count), latency);
            if targeted {
                rules.insert(0, rule);
            } else {
                rules.push(rule);
            }
        }
        if rules.is_empty() {
            self.latency.remove(method);
        }
    }

    /// The error the arriving call of `method`, naming `target`, must answer, if one is due.
    pub(crate) fn take_error(
        &mut self,
        method: &str,
        target: Option<&str>,
    ) -> Option<tonic::Status> {
        let rules = self.errors.get_mut(method)?;
        let error = hit(rules, target);
        if rules.is_empty() {
            self.errors.remove(method);
        }
        error.map(|error| tonic::Status::new(error.code, error.message))
    }

    /// The delay the arriving call of `method`, naming `target`, must wait, if one is due.
    #[cfg(test)]
    pub(crate) fn take_delay(&mut self, method: &str, target: Option<&str>) -> Option<Duration> {
        self.take_latency(method, target)
            .map(|latency| latency.delay)
    }

    /// The delay the arriving call of `method`, naming `target`, must wait, if one is due,
    /// with what the call does if its client leaves.
    pub(crate) fn take_latency(&mut self, method: &str, target: Option<&str>) -> Option<Latency> {
        let rules = self.latency.get_mut(method)?;
        let latency = hit(rules, target);
        if rules.is_empty() {
            self.latency.remove(method);
        }
        latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_list_matches_the_cri_schema() {
        let schema = include_str!("../../proto/runtime/v1/api.proto");
        let mut in_schema: Vec<&str> = schema
            .lines()
            .filter_map(|line| line.trim().strip_prefix("rpc "))
            .filter_map(|rest| rest.split('(').next())
            .collect();
        let mut listed = CRI_METHODS.to_vec();
        in_schema.sort_unstable();
        listed.sort_unstable();
        assert_eq!(listed, in_schema);
    }

    #[test]
    fn every_method_is_listed_once_with_its_request_message() {
        let schema = include_str!("../../proto/runtime/v1/api.proto");
        let mut in_schema: Vec<(&str, &str)> = schema
            .lines()
            .filter_map(|line| line.trim().strip_prefix("rpc "))
            .filter_map(|rest| {
                let (method, rest) = rest.split_once('(')?;
                Some((method, rest.split(')').next()?))
            })
            .collect();
        let mut listed = REQUESTS.to_vec();
        in_schema.sort_unstable();
        listed.sort_unstable();
        assert_eq!(listed, in_schema);
    }

    fn everywhere() -> Aim {
        Aim::default()
    }

    fn at(target: &str, nth: u32) -> Aim {
        Aim {
            target: Some(target.to_owned()),
            nth,
        }
    }

    fn codes(
        faults: &mut Faults,
        method: &str,
        targets: &[Option<&str>],
    ) -> Vec<Option<tonic::Code>> {
        targets
            .iter()
            .map(|target| faults.take_error(method, *target).map(|s| s.code()))
            .collect()
    }

    use tonic::Code::{Internal, NotFound, Unavailable};

    #[test]
    fn injected_errors_answer_in_injection_order_then_stop() {
        let mut faults = Faults::default();
        faults.inject_error("Version", everywhere(), NotFound, "a".into(), 1);
        faults.inject_error("Version", everywhere(), Unavailable, "b".into(), 2);
        assert_eq!(
            codes(&mut faults, "Version", &[None; 4]),
            [Some(NotFound), Some(Unavailable), Some(Unavailable), None]
        );
    }

    #[test]
    fn errors_of_one_method_leave_others_alone() {
        let mut faults = Faults::default();
        faults.inject_error("StopPodSandbox", everywhere(), Internal, String::new(), 0);
        assert!(faults.take_error("RemovePodSandbox", None).is_none());
        assert!(faults.take_error("StopPodSandbox", None).is_some());
        assert!(faults.take_error("StopPodSandbox", None).is_none());
    }

    #[test]
    fn a_targeted_error_lets_other_targets_through_whatever_their_order() {
        let mut faults = Faults::default();
        faults.inject_error("StopContainer", at("b", 0), Internal, "stuck".into(), 1);
        let calls = [Some("a"), Some("c"), None, Some("b"), Some("b")];
        assert_eq!(
            codes(&mut faults, "StopContainer", &calls),
            [None, None, None, Some(Internal), None]
        );
    }

    #[test]
    fn an_id_that_only_shares_a_prefix_with_the_target_is_not_hit() {
        let mut faults = Faults::default();
        faults.inject_error("StopContainer", at("abcdef", 0), Internal, String::new(), 1);
        let calls = [Some("abc"), Some("abcdef0"), Some("abcdef")];
        assert_eq!(
            codes(&mut faults, "StopContainer", &calls),
            [None, None, Some(Internal)]
        );
    }

    #[test]
    fn the_nth_call_of_a_target_fails_counting_only_that_targets_calls() {
        let mut faults = Faults::default();
        faults.inject_error("StopContainer", at("b", 3), Internal, String::new(), 2);
        let calls = [
            Some("b"),
            Some("a"),
            Some("b"),
            Some("a"),
            Some("b"),
            Some("b"),
            Some("b"),
        ];
        assert_eq!(
            codes(&mut faults, "StopContainer", &calls),
            [None, None, None, None, Some(Internal), Some(Internal), None]
        );
    }

    #[test]
    fn the_nth_call_of_a_method_fails_without_a_target() {
        let mut faults = Faults::default();
        let aim = Aim {
            target: None,
            nth: 2,
        };
        faults.inject_error("Version", aim, Unavailable, String::new(), 1);
        assert_eq!(
            codes(&mut faults, "Version", &[None; 3]),
            [None, Some(Unavailable), None]
        );
    }

    #[test]
    fn a_due_error_that_loses_its_call_to_an_earlier_one_takes_the_next() {
        let mut faults = Faults::default();
        faults.inject_error("StopContainer", everywhere(), NotFound, String::new(), 1);
        faults.inject_error("StopContainer", at("b", 0), Internal, String::new(), 1);
        let calls = [Some("b"), Some("a"), Some("b")];
        assert_eq!(
            codes(&mut faults, "StopContainer", &calls),
            [Some(NotFound), None, Some(Internal)]
        );
    }

    #[test]
    fn counted_latency_expires_and_uncounted_latency_stays() {
        let mut faults = Faults::default();
        let delay = Duration::from_millis(5);
        faults.inject_latency("Version", everywhere(), delay, 2);
        faults.inject_latency("Status", everywhere(), delay, 0);
        let version: Vec<bool> = (0..3)
            .map(|_| faults.take_delay("Version", None).is_some())
            .collect();
        let status: Vec<bool> = (0..3)
            .map(|_| faults.take_delay("Status", None).is_some())
            .collect();
        assert_eq!((version, status), (vec![true, true, false], vec![true; 3]));
    }

    #[test]
    fn a_zero_delay_removes_the_latency_of_its_target_only() {
        let mut faults = Faults::default();
        let delay = Duration::from_millis(5);
        faults.inject_latency("Version", everywhere(), delay, 0);
        faults.inject_latency("StopContainer", at("a", 0), delay, 0);
        faults.inject_latency("StopContainer", at("b", 0), delay, 0);
        faults.inject_latency("Version", everywhere(), Duration::ZERO, 0);
        faults.inject_latency("StopContainer", at("a", 0), Duration::ZERO, 0);
        assert_eq!(
            (
                faults.take_delay("Version", None),
                faults.take_delay("StopContainer", Some("a")),
                faults.take_delay("StopContainer", Some("b")),
            ),
            (None, None, Some(delay))
        );
    }

    #[test]
    fn a_targets_own_delay_wins_over_the_methods_delay() {
        let mut faults = Faults::default();
        let (slow, slower) = (Duration::from_millis(5), Duration::from_millis(50));
        faults.inject_latency("StopContainer", everywhere(), slow, 0);
        faults.inject_latency("StopContainer", at("b", 2), slower, 1);
        let delays: Vec<Option<Duration>> = [Some("b"), Some("a"), Some("b"), Some("b")]
            .iter()
            .map(|target| faults.take_delay("StopContainer", *target))
            .collect();
        assert_eq!(delays, [Some(slow), Some(slow), Some(slower), Some(slow)]);
    }

    #[test]
    fn requests_name_their_sandbox_container_or_image_and_empty_names_nothing() {
        let stop = v1::StopContainerRequest {
            container_id: "c1".into(),
            timeout: 2,
        };
        let create = v1::CreateContainerRequest {
            pod_sandbox_id: "s1".into(),
            ..Default::default()
        };
        let pull = v1::PullImageRequest {
            image: Some(v1::ImageSpec {
                image: "busybox".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            (
                stop.fault_target(),
                create.fault_target(),
                pull.fault_target(),
                v1::RemoveImageRequest::default().fault_target(),
                v1::ListContainersRequest::default().fault_target(),
            ),
            (Some("c1"), Some("s1"), Some("busybox"), None, None)
        );
        assert_eq!(
            (target_kind("StopContainer"), target_kind("Version")),
            (Some("container"), None)
        );
    }
}
