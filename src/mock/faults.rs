//! Faults a suite injected through the control service: queued error answers and delays per
//! CRI method, consumed as calls arrive.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

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

/// An error answer waiting for the next calls of a method.
#[derive(Debug)]
struct InjectedError {
    code: tonic::Code,
    message: String,
    remaining: u32,
}

/// A delay applied to the next calls of a method (`remaining: None` until Reset).
#[derive(Debug)]
struct Latency {
    delay: Duration,
    remaining: Option<u32>,
}

/// Injected errors (queued per method, in injection order) and delays (one per method).
#[derive(Debug, Default)]
pub(crate) struct Faults {
    errors: HashMap<&'static str, VecDeque<InjectedError>>,
    latency: HashMap<&'static str, Latency>,
}

impl Faults {
    /// Makes the next `count` calls of `method` (not yet failing for an earlier injection) fail.
    pub(crate) fn inject_error(
        &mut self,
        method: &'static str,
        code: tonic::Code,
        message: String,
        count: u32,
    ) {
        self.errors
            .entry(method)
            .or_default()
            .push_back(InjectedError {
                code,
                message,
                remaining: count.max(1),
            });
    }

    /// Delays the next `count` calls of `method` (every call when `count` is 0); a zero delay
    /// removes the method's delay. Replaces an earlier delay of the method.
    pub(crate) fn inject_latency(&mut self, method: &'static str, delay: Duration, count: u32) {
        if delay.is_zero() {
            self.latency.remove(method);
            return;
        }
        let remaining = (count > 0).then_some(count);
        self.latency.insert(method, Latency { delay, remaining });
    }

    /// The error the arriving call of `method` must answer, if one is queued.
    pub(crate) fn take_error(&mut self, method: &str) -> Option<tonic::Status> {
        let queue = self.errors.get_mut(method)?;
        let front = queue.front_mut()?;
        let status = tonic::Status::new(front.code, front.message.clone());
        front.remaining -= 1;
        if front.remaining == 0 {
            queue.pop_front();
        }
        Some(status)
    }

    /// The delay the arriving call of `method` must wait, if any.
    pub(crate) fn take_delay(&mut self, method: &str) -> Option<Duration> {
        let latency = self.latency.get_mut(method)?;
        let delay = latency.delay;
        if let Some(remaining) = &mut latency.remaining {
            *remaining -= 1;
            if *remaining == 0 {
                self.latency.remove(method);
            }
        }
        Some(delay)
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
    fn injected_errors_answer_in_injection_order_then_stop() {
        let mut faults = Faults::default();
        faults.inject_error("Version", tonic::Code::NotFound, "a".into(), 1);
        faults.inject_error("Version", tonic::Code::Unavailable, "b".into(), 2);
        let codes: Vec<Option<tonic::Code>> = (0..4)
            .map(|_| faults.take_error("Version").map(|s| s.code()))
            .collect();
        use tonic::Code::{NotFound, Unavailable};
        assert_eq!(
            codes,
            [Some(NotFound), Some(Unavailable), Some(Unavailable), None]
        );
    }

    #[test]
    fn errors_of_one_method_leave_others_alone() {
        let mut faults = Faults::default();
        faults.inject_error("StopPodSandbox", tonic::Code::Internal, String::new(), 0);
        assert!(faults.take_error("RemovePodSandbox").is_none());
        assert!(faults.take_error("StopPodSandbox").is_some());
        assert!(faults.take_error("StopPodSandbox").is_none());
    }

    #[test]
    fn counted_latency_expires_and_uncounted_latency_stays() {
        let mut faults = Faults::default();
        let delay = Duration::from_millis(5);
        faults.inject_latency("Version", delay, 2);
        faults.inject_latency("Status", delay, 0);
        let version: Vec<bool> = (0..3)
            .map(|_| faults.take_delay("Version").is_some())
            .collect();
        let status: Vec<bool> = (0..3)
            .map(|_| faults.take_delay("Status").is_some())
            .collect();
        assert_eq!((version, status), (vec![true, true, false], vec![true; 3]));
    }

    #[test]
    fn a_zero_delay_removes_the_latency() {
        let mut faults = Faults::default();
        faults.inject_latency("Version", Duration::from_millis(5), 0);
        faults.inject_latency("Version", Duration::ZERO, 0);
        assert!(faults.take_delay("Version").is_none());
    }
}
