//! The pod-level resources today's kubelet (v1.35 on) sends in UpdatePodSandboxResources after
//! an in-place resize: the pod cgroup's configuration (`cm.ResourceConfigForPod`) in CRI form
//! (`convertResourceConfigToLinuxContainerResources`). api.proto calls them "the sum of container
//! resources for this sandbox"; the kubelet sums them as the pod's requests and limits, then
//! keeps what the pod's QoS class bounds.

use super::k8s;
use super::resize::{self, ContainerResources, MIN_SHARES, QUOTA_PERIOD};
use crate::cri::v1;

/// A pod's QoS class (`v1qos.GetPodQOS`), over its CPU and memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    /// Every container has CPU and memory limits, and requests equal to them.
    Guaranteed,
    /// Some container has a request or a limit, and the pod is not Guaranteed.
    Burstable,
    /// No container has any CPU or memory request or limit.
    BestEffort,
}

/// A container's resources with the API server's defaulting applied: a request left unset is
/// its limit (the kubelet only ever sees pods so defaulted).
fn defaulted(container: &k8s::Container) -> ContainerResources {
    let mut resources = resize::desired_resources(container);
    if resources.cpu_request == 0 {
        resources.cpu_request = resources.cpu_limit;
    }
    if resources.memory_request == 0 {
        resources.memory_request = resources.memory_limit;
    }
    resources
}

/// True for an init container that keeps running beside the app containers (a sidecar).
fn is_sidecar(container: &k8s::Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// The pod's QoS class, over its app and init containers (`v1qos.GetPodQOS`).
pub fn qos_class(pod: &k8s::Pod) -> QosClass {
    let containers = all_containers(pod);
    let mut any = false;
    let mut guaranteed = true;
    for container in containers {
        let r = defaulted(container);
        any |= r.cpu_request > 0 || r.cpu_limit > 0 || r.memory_request > 0 || r.memory_limit > 0;
        guaranteed &= r.cpu_limit > 0
            && r.memory_limit > 0
            && r.cpu_request == r.cpu_limit
            && r.memory_request == r.memory_limit;
    }
    match (any, guaranteed) {
        (false, _) => QosClass::BestEffort,
        (true, true) => QosClass::Guaranteed,
        (true, false) => QosClass::Burstable,
    }
}

/// The app containers, then the init containers.
fn all_containers(pod: &k8s::Pod) -> impl Iterator<Item = &k8s::Container> {
    let spec = pod.spec.as_ref();
    let apps = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
    let inits = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    apps.iter().chain(inits)
}

/// The pod's effective requests or limits (`resource.PodRequests` / `PodLimits` without pod-level
/// resources or overhead): the app containers and sidecars summed, or, where larger, an init
/// container's own with the sidecars started before it.
fn pod_total(pod: &k8s::Pod, of: impl Fn(&ContainerResources) -> (i64, i64)) -> (i64, i64) {
    let spec = pod.spec.as_ref();
    let add = |a: (i64, i64), b: (i64, i64)| (a.0 + b.0, a.1 + b.1);
    let apps = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
    let mut total = apps.iter().map(|c| of(&defaulted(c))).fold((0, 0), add);
    let mut sidecars = (0, 0);
    let mut init_peak = (0, 0);
    let inits = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    for init in inits {
        let own = of(&defaulted(init));
        if is_sidecar(init) {
            sidecars = add(sidecars, own);
            total = add(total, own);
            init_peak = (init_peak.0.max(sidecars.0), init_peak.1.max(sidecars.1));
        } else {
            let during = add(own, sidecars);
            init_peak = (init_peak.0.max(during.0), init_peak.1.max(during.1));
        }
    }
    (total.0.max(init_peak.0), total.1.max(init_peak.1))
}

/// The pod-level resources of `pod` in CRI form, as the kubelet sends them in
/// UpdatePodSandboxResources (CPU quota enforced, the default CFS period): shares from the
/// summed CPU requests; for a Guaranteed pod also quota, period and memory limit; for a
/// Burstable one quota and period only when every container limits CPU, and the memory limit
/// only when every container limits memory; a BestEffort pod gets the minimum shares alone.
pub fn pod_linux_resources(pod: &k8s::Pod) -> v1::LinuxContainerResources {
    let (cpu_request, _) = pod_total(pod, |r| (r.cpu_request, r.memory_request));
    let (cpu_limit, memory_limit) = pod_total(pod, |r| (r.cpu_limit, r.memory_limit));
    let cpu_limits_declared = all_containers(pod).all(|c| defaulted(c).cpu_limit > 0);
    let memory_limits_declared = all_containers(pod).all(|c| defaulted(c).memory_limit > 0);
    let shares = resize::milli_cpu_to_shares(cpu_request);
    let quota = resize::milli_cpu_to_quota(cpu_limit, QUOTA_PERIOD);
    let mut out = v1::LinuxContainerResources::default();
    match qos_class(pod) {
        QosClass::Guaranteed => {
            out.cpu_shares = shares;
            out.cpu_quota = quota;
            out.cpu_period = QUOTA_PERIOD;
            out.memory_limit_in_bytes = memory_limit;
        }
        QosClass::Burstable => {
            out.cpu_shares = shares;
            if cpu_limits_declared {
                out.cpu_quota = quota;
                out.cpu_period = QUOTA_PERIOD;
            }
            if memory_limits_declared {
                out.memory_limit_in_bytes = memory_limit;
            }
        }
        QosClass::BestEffort => out.cpu_shares = MIN_SHARES,
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    /// A container with the given `requests` and `limits` (`cpu`, `memory` as the API writes them).
    fn container(
        name: &str,
        requests: &[(&str, &str)],
        limits: &[(&str, &str)],
    ) -> serde_json::Value {
        let list = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
                .collect::<serde_json::Map<_, _>>()
        };
        serde_json::json!({
            "name": name,
            "image": "busybox",
            "resources": {"requests": list(requests), "limits": list(limits)},
        })
    }

    fn pod(containers: Vec<serde_json::Value>, inits: Vec<serde_json::Value>) -> k8s::Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u"},
            "spec": {"containers": containers, "initContainers": inits},
        }))
        .unwrap()
    }

    fn linux(shares: i64, quota: i64, period: i64, memory: i64) -> v1::LinuxContainerResources {
        v1::LinuxContainerResources {
            cpu_shares: shares,
            cpu_quota: quota,
            cpu_period: period,
            memory_limit_in_bytes: memory,
            ..Default::default()
        }
    }

    const MI: i64 = 1 << 20;

    #[rstest]
    #[case::guaranteed_one(
        pod(vec![container("a", &[], &[("cpu", "300m"), ("memory", "128Mi")])], vec![]),
        QosClass::Guaranteed,
        linux(307, 30_000, 100_000, 128 * MI)
    )]
    #[case::guaranteed_summed(
        pod(vec![
            container("a", &[], &[("cpu", "200m"), ("memory", "64Mi")]),
            container("b", &[], &[("cpu", "100m"), ("memory", "64Mi")]),
        ], vec![]),
        QosClass::Guaranteed,
        linux(307, 30_000, 100_000, 128 * MI)
    )]
    #[case::burstable_memory_limit_only(
        pod(vec![container("a", &[], &[("memory", "64Mi")])], vec![]),
        QosClass::Burstable,
        linux(2, 0, 0, 64 * MI)
    )]
    #[case::burstable_requests_only(
        pod(vec![container("a", &[("cpu", "500m"), ("memory", "64Mi")], &[])], vec![]),
        QosClass::Burstable,
        linux(512, 0, 0, 0)
    )]
    #[case::burstable_one_container_without_limits(
        pod(vec![
            container("a", &[], &[("cpu", "200m"), ("memory", "64Mi")]),
            container("b", &[("cpu", "100m")], &[]),
        ], vec![]),
        QosClass::Burstable,
        linux(307, 0, 0, 0)
    )]
    #[case::best_effort(
        pod(vec![container("a", &[], &[])], vec![]),
        QosClass::BestEffort,
        linux(2, 0, 0, 0)
    )]
    #[case::a_larger_init_container_sets_the_peak(
        pod(
            vec![container("a", &[], &[("cpu", "100m"), ("memory", "64Mi")])],
            vec![container("init", &[], &[("cpu", "500m"), ("memory", "32Mi")])],
        ),
        QosClass::Guaranteed,
        linux(512, 50_000, 100_000, 64 * MI)
    )]
    fn pod_resources_follow_the_qos_class(
        #[case] pod: k8s::Pod,
        #[case] qos: QosClass,
        #[case] expected: v1::LinuxContainerResources,
    ) {
        assert_eq!(qos_class(&pod), qos);
        assert_eq!(pod_linux_resources(&pod), expected);
    }

    #[test]
    fn a_sidecar_adds_to_the_app_containers_and_to_later_init_containers() {
        let mut sidecar = container("side", &[], &[("cpu", "100m"), ("memory", "16Mi")]);
        sidecar["restartPolicy"] = "Always".into();
        let pod = pod(
            vec![container("a", &[], &[("cpu", "100m"), ("memory", "16Mi")])],
            vec![
                sidecar,
                container("init", &[], &[("cpu", "150m"), ("memory", "16Mi")]),
            ],
        );
        // Apps and sidecar: 200m; the init container beside the sidecar: 250m.
        assert_eq!(
            pod_linux_resources(&pod),
            linux(256, 25_000, 100_000, 32 * MI)
        );
    }
}
