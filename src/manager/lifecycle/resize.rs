//! In-place resize (`InPlacePodVerticalScaling`): the decision a sync makes for a running
//! container whose spec resources differ from what the runtime reports (resize it, or restart it
//! where its resize policy says so), and the container half of carrying it out through
//! UpdateContainerResources. The pod-level cgroup half of the kubelet's `doPodResizeAction` has
//! no counterpart: the harness is not on the runtime's node and drives no cgroups.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{k8s, ContainerKind, ContainerToKill, KillReason, PodActions};
use crate::cri::v1;
use crate::manager::{ContainerState, ContainerStatus, FeatureGate, FeatureGates};

/// The kernel's smallest `cpu.shares` (the kubelet's `cm.MinShares`).
pub const MIN_SHARES: i64 = 2;
/// `cpu.shares` of one CPU.
const SHARES_PER_CPU: i64 = 1024;
/// The CFS period the kubelet sets, in microseconds (`cm.QuotaPeriod`).
pub const QUOTA_PERIOD: i64 = 100_000;
/// The smallest CFS quota the kubelet sets, in microseconds (`cm.MinQuotaPeriod`).
const MIN_QUOTA_PERIOD: i64 = 1000;
/// The smallest CPU limit that takes effect, in millicores (`cm.MinMilliCPULimit`).
const MIN_MILLI_CPU_LIMIT: i64 = MIN_QUOTA_PERIOD * 1000 / QUOTA_PERIOD;

/// A resource a resize acts on, in the order a sync applies them: memory first, then CPU
/// (the kubelet's `doPodResizeAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceName {
    /// `memory`.
    Memory,
    /// `cpu`.
    Cpu,
}

/// The resources of one container as the kubelet compares them (its `containerResources`):
/// bytes for memory, millicores for CPU, 0 for unset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ContainerResources {
    /// Memory limit, bytes.
    pub memory_limit: i64,
    /// Memory request, bytes (no cgroup carries it; it travels with updates).
    pub memory_request: i64,
    /// CPU limit, millicores.
    pub cpu_limit: i64,
    /// CPU request, millicores.
    pub cpu_request: i64,
}

/// What the runtime reports of a container's resources (the kubelet's
/// `kubecontainer.ContainerResources`, read from `ContainerStatus.resources.linux`); each field
/// is absent where the runtime reports nothing or zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RuntimeResources {
    /// CPU request from `cpu_shares`, millicores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_request: Option<i64>,
    /// CPU limit from `cpu_quota` over `cpu_period`, millicores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_limit: Option<i64>,
    /// Memory limit, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<i64>,
}

/// One running container a sync resizes for one resource (the kubelet's
/// `containerToUpdateInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerToUpdate {
    /// The container's name in the spec.
    pub name: String,
    /// Which list of the spec it belongs to.
    pub kind: ContainerKind,
    /// The runtime's container id.
    pub id: String,
    /// What the spec asks for.
    pub desired: ContainerResources,
    /// What the runtime last reported (memory request: the desired one, as no runtime reports it).
    pub current: ContainerResources,
}

/// The container's resources from the runtime's status, or none when it reports none. Ports
/// the resources part of `toKubeContainerStatus` (kuberuntime_container.go).
pub fn runtime_resources(resources: Option<&v1::ContainerResources>) -> Option<RuntimeResources> {
    let linux = resources?.linux.as_ref()?;
    let positive = |v: i64| (v > 0).then_some(v);
    let converted = RuntimeResources {
        cpu_limit: (linux.cpu_period > 0)
            .then(|| quota_to_milli_cpu(linux.cpu_quota, linux.cpu_period))
            .and_then(positive),
        cpu_request: positive(linux.cpu_shares)
            .map(shares_to_milli_cpu)
            .and_then(positive),
        memory_limit: positive(linux.memory_limit_in_bytes),
    };
    (converted != RuntimeResources::default()).then_some(converted)
}

/// The kubelet's `sharesToMilliCPU`: rounds up, and anything below the minimum shares is 0.
fn shares_to_milli_cpu(shares: i64) -> i64 {
    if shares < MIN_SHARES {
        return 0;
    }
    (shares * 1000 + SHARES_PER_CPU - 1) / SHARES_PER_CPU
}

/// The kubelet's `quotaToMilliCPU`: -1 (no quota) is 0.
fn quota_to_milli_cpu(quota: i64, period: i64) -> i64 {
    if quota == -1 {
        return 0;
    }
    quota * 1000 / period
}

/// The kubelet's `milliCPUToShares`: at least the minimum shares.
pub(crate) fn milli_cpu_to_shares(milli: i64) -> i64 {
    if milli == 0 {
        return MIN_SHARES;
    }
    (milli * SHARES_PER_CPU / 1000).max(MIN_SHARES)
}

/// The kubelet's `milliCPUToQuota`: 0 (no limit) for no limit, else at least the minimum quota.
pub(crate) fn milli_cpu_to_quota(milli: i64, period: i64) -> i64 {
    if milli == 0 {
        return 0;
    }
    (milli * period / 1000).max(MIN_QUOTA_PERIOD)
}

/// What the spec asks of `container` (limits and requests of CPU and memory).
pub fn desired_resources(container: &k8s::Container) -> ContainerResources {
    let resources = container.resources.as_ref();
    let get = |list: Option<
        &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >,
               name: &str,
               milli: bool| {
        list.and_then(|l| l.get(name))
            .and_then(|q| quantity(&q.0, milli))
            .unwrap_or(0)
    };
    let limits = resources.and_then(|r| r.limits.as_ref());
    let requests = resources.and_then(|r| r.requests.as_ref());
    ContainerResources {
        memory_limit: get(limits, "memory", false),
        memory_request: get(requests, "memory", false),
        cpu_limit: get(limits, "cpu", true),
        cpu_request: get(requests, "cpu", true),
    }
}

/// The CRI resources for `resources`, as the kubelet's `calculateLinuxResources` makes them
/// (shares from the request, quota and period from the limit, the memory limit as is).
pub fn linux_resources(resources: &ContainerResources) -> v1::LinuxContainerResources {
    v1::LinuxContainerResources {
        cpu_shares: milli_cpu_to_shares(resources.cpu_request),
        cpu_quota: milli_cpu_to_quota(resources.cpu_limit, QUOTA_PERIOD),
        cpu_period: QUOTA_PERIOD,
        memory_limit_in_bytes: resources.memory_limit,
        ..Default::default()
    }
}

/// The CRI resources a container is created with when its spec states CPU or memory; none
/// otherwise, so a pod without resources is created as before (the kubelet always sends them,
/// but a best-effort container's are the runtime's defaults).
pub fn linux_resources_for_spec(container: &k8s::Container) -> Option<v1::LinuxContainerResources> {
    let desired = desired_resources(container);
    (desired != ContainerResources::default()).then(|| linux_resources(&desired))
}

/// A Kubernetes quantity (`100m`, `1.5`, `200Mi`, `1e3`, `2G`) in base units (`milli`: false,
/// rounded up as `Value()` does) or thousandths (`milli`: true, as `MilliValue()`).
pub fn quantity(text: &str, milli: bool) -> Option<i64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let (negative, number) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let mut mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let mut exponent10 = -(fraction.len() as i32);
    let mut multiplier: i128 = 1;
    match suffix {
        "" => {}
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|s| *s == suffix)?
                + 1;
            multiplier = 1i128 << (10 * power);
        }
        "n" => exponent10 -= 9,
        "u" => exponent10 -= 6,
        "m" => exponent10 -= 3,
        "k" => exponent10 += 3,
        "M" => exponent10 += 6,
        "G" => exponent10 += 9,
        "T" => exponent10 += 12,
        "P" => exponent10 += 15,
        "E" => exponent10 += 18,
        s if s.starts_with(['e', 'E']) => exponent10 += s[1..].parse::<i32>().ok()?,
        _ => return None,
    }
    if milli {
        exponent10 += 3;
    }
    mantissa *= multiplier;
    let value = if exponent10 >= 0 {
        mantissa.checked_mul(10i128.checked_pow(exponent10.unsigned_abs())?)?
    } else {
        let divisor = 10i128.checked_pow(exponent10.unsigned_abs())?;
        // Rounded away from zero, as the Go quantity rounds up.
        (mantissa + divisor - 1) / divisor
    };
    let value = if negative { -value } else { value };
    i64::try_from(value).ok()
}

/// Whether a resize may be done in place for `pod` (the kubelet's
/// `IsInPlacePodVerticalScalingAllowed`): the gate is on and the pod is not a static pod (one
/// whose `kubernetes.io/config.source` is set and is not `api`).
pub fn in_place_resize_allowed(pod: &k8s::Pod, gates: &FeatureGates) -> bool {
    let source = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/config.source"));
    gates.enabled(FeatureGate::InPlacePodVerticalScaling) && source.is_none_or(|s| s == "api")
}

/// Decides the resize of one running container and records it in `changes`: nothing when its
/// resources match (or the runtime reports none), a kill plus `update_pod_resources` when a
/// resource that changed has the `RestartContainer` policy, else an update per resource,
/// decreases before increases. Answers whether the container is kept (false: the caller
/// starts it again). Ports `computePodResizeAction` (kuberuntime_manager.go).
pub(crate) fn compute_pod_resize_action(
    container: &k8s::Container,
    kind: ContainerKind,
    status: &ContainerStatus,
    changes: &mut PodActions,
) -> bool {
    if status.state != ContainerState::Running {
        return true;
    }
    let Some(reported) = status.resources else {
        // Not enough information to resize.
        return true;
    };
    let mut desired = desired_resources(container);
    let current = ContainerResources {
        // No runtime reports a memory request: take the desired one.
        memory_request: desired.memory_request,
        memory_limit: reported.memory_limit.unwrap_or(0),
        cpu_limit: reported.cpu_limit.unwrap_or(0),
        cpu_request: reported.cpu_request.unwrap_or(0),
    };
    // At or below the effective minimum, any two values mean the same cgroup setting.
    if desired.cpu_request <= MIN_SHARES && current.cpu_request <= MIN_SHARES {
        desired.cpu_request = current.cpu_request;
    }
    if desired.cpu_limit <= MIN_MILLI_CPU_LIMIT && current.cpu_limit <= MIN_MILLI_CPU_LIMIT {
        desired.cpu_limit = current.cpu_limit;
    }
    if desired == current {
        return true;
    }

    let restart_required = |name: &str| {
        container
            .resize_policy
            .iter()
            .flatten()
            .find(|p| p.resource_name == name)
            .is_some_and(|p| p.restart_policy == "RestartContainer")
    };
    let memory_limit = desired.memory_limit != current.memory_limit;
    let cpu_limit = desired.cpu_limit != current.cpu_limit;
    let cpu_request = desired.cpu_request != current.cpu_request;
    if (memory_limit && restart_required("memory"))
        || ((cpu_limit || cpu_request) && restart_required("cpu"))
    {
        changes.containers_to_kill.insert(
            status.id.id.clone(),
            ContainerToKill {
                name: status.name.clone(),
                kind,
                reason: KillReason::Unknown,
                message: format!("Container {} resize requires restart", container.name),
            },
        );
        changes.update_pod_resources = true;
        return false;
    }
    let mut mark = |resource: ResourceName, spec: i64, reported: i64| {
        let update = ContainerToUpdate {
            name: container.name.clone(),
            kind,
            id: status.id.id.clone(),
            desired,
            current,
        };
        let list = changes.containers_to_update.entry(resource).or_default();
        if spec > reported {
            list.push(update);
        } else {
            list.insert(0, update);
        }
    };
    if memory_limit {
        mark(
            ResourceName::Memory,
            desired.memory_limit,
            current.memory_limit,
        );
    }
    if cpu_limit {
        mark(ResourceName::Cpu, desired.cpu_limit, current.cpu_limit);
    } else if cpu_request {
        mark(ResourceName::Cpu, desired.cpu_request, current.cpu_request);
    }
    true
}

/// The resources one UpdateContainerResources of `resource` sends: that resource's desired
/// values, the other's most recently applied ones (the kubelet's `updatePodContainerResources`).
pub fn update_request(resource: ResourceName, update: &ContainerToUpdate) -> ContainerResources {
    let (desired, current) = (update.desired, update.current);
    match resource {
        ResourceName::Memory => ContainerResources {
            memory_limit: desired.memory_limit,
            memory_request: desired.memory_request,
            cpu_limit: current.cpu_limit,
            cpu_request: current.cpu_request,
        },
        ResourceName::Cpu => ContainerResources {
            memory_limit: current.memory_limit,
            memory_request: current.memory_request,
            cpu_limit: desired.cpu_limit,
            cpu_request: desired.cpu_request,
        },
    }
}

/// Marks `resource` of `current` as applied (the kubelet updates its view once the runtime
/// accepted the values, as a status read may lag).
pub fn applied(
    resource: ResourceName,
    current: &mut ContainerResources,
    desired: &ContainerResources,
) {
    match resource {
        ResourceName::Memory => {
            current.memory_limit = desired.memory_limit;
            current.memory_request = desired.memory_request;
        }
        ResourceName::Cpu => {
            current.cpu_limit = desired.cpu_limit;
            current.cpu_request = desired.cpu_request;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::millicores("100m", true, 100)]
    #[case::cores("2", true, 2000)]
    #[case::fraction("0.5", true, 500)]
    #[case::tiny_rounds_up("1u", true, 1)]
    #[case::mebibytes("200Mi", false, 200 * 1024 * 1024)]
    #[case::megabytes("100M", false, 100_000_000)]
    #[case::exponent("1e3", false, 1000)]
    #[case::bytes("128974848", false, 128_974_848)]
    #[case::fractional_gibibytes("1.5Gi", false, 1_610_612_736)]
    fn quantities_read_as_the_go_quantity_reads_them(
        #[case] text: &str,
        #[case] milli: bool,
        #[case] expected: i64,
    ) {
        assert_eq!(quantity(text, milli), Some(expected));
    }

    #[rstest]
    #[case::empty("")]
    #[case::bad_suffix("5Qi")]
    fn bad_quantities_are_none(#[case] text: &str) {
        assert_eq!(quantity(text, false), None);
    }

    #[rstest]
    #[case::nothing_reported(v1::LinuxContainerResources::default(), None)]
    #[case::limits(
        v1::LinuxContainerResources { cpu_period: 100_000, cpu_quota: 20_000, cpu_shares: 102, memory_limit_in_bytes: 1 << 20, ..Default::default() },
        Some(RuntimeResources { cpu_limit: Some(200), cpu_request: Some(100), memory_limit: Some(1 << 20) })
    )]
    #[case::cpu_only(
        v1::LinuxContainerResources { cpu_period: 100_000, cpu_quota: 50_000, cpu_shares: 512, ..Default::default() },
        Some(RuntimeResources { cpu_limit: Some(500), cpu_request: Some(500), memory_limit: None })
    )]
    #[case::memory_only(
        v1::LinuxContainerResources { memory_limit_in_bytes: 64 << 20, ..Default::default() },
        Some(RuntimeResources { cpu_limit: None, cpu_request: None, memory_limit: Some(64 << 20) })
    )]
    #[case::no_quota(
        v1::LinuxContainerResources { cpu_period: 100_000, cpu_quota: -1, cpu_shares: 2, ..Default::default() },
        Some(RuntimeResources { cpu_limit: None, cpu_request: Some(2), memory_limit: None })
    )]
    fn runtime_resources_convert_as_the_kubelet_converts_them(
        #[case] linux: v1::LinuxContainerResources,
        #[case] expected: Option<RuntimeResources>,
    ) {
        let status = v1::ContainerResources {
            linux: Some(linux),
            windows: None,
        };
        assert_eq!(runtime_resources(Some(&status)), expected);
    }

    /// Guaranteed resources: equal requests and limits of `cpu` millicores and `mem` MiB.
    fn guaranteed(cpu: i64, mem: i64) -> ContainerResources {
        ContainerResources {
            memory_limit: mem << 20,
            memory_request: mem << 20,
            cpu_limit: cpu,
            cpu_request: cpu,
        }
    }

    /// Ports TestUpdatePodContainerResources (kuberuntime_manager_test.go): three containers,
    /// regular or sidecars, each asked for more CPU and memory; updating one resource sends its
    /// desired values with the other's current ones, and leaves the other current afterwards.
    #[rstest]
    #[case::guaranteed_qos_pod_cpu_and_memory_resize_requested_update_cpu(
        ResourceName::Cpu,
        [(150, 100), (250, 200), (350, 300)]
    )]
    #[case::guaranteed_qos_pod_cpu_and_memory_resize_requested_update_memory(
        ResourceName::Memory,
        [(100, 150), (200, 250), (300, 350)]
    )]
    fn updates_match_test_update_pod_container_resources(
        #[case] resource: ResourceName,
        #[case] expected: [(i64, i64); 3],
        #[values(ContainerKind::Regular, ContainerKind::Init)] kind: ContainerKind,
    ) {
        let spec = [
            guaranteed(150, 150),
            guaranteed(250, 250),
            guaranteed(350, 350),
        ];
        let status = [
            guaranteed(100, 100),
            guaranteed(200, 200),
            guaranteed(300, 300),
        ];
        for (i, want) in expected.into_iter().enumerate() {
            let update = ContainerToUpdate {
                name: format!("c{i}"),
                kind,
                id: format!("id{i}"),
                desired: spec[i],
                current: status[i],
            };
            let sent = update_request(resource, &update);
            assert_eq!(sent, guaranteed(want.0, want.1), "request of container {i}");
            let mut current = update.current;
            applied(resource, &mut current, &update.desired);
            assert_eq!(
                current,
                guaranteed(want.0, want.1),
                "current of container {i}"
            );
        }
    }

    #[test]
    fn resources_round_trip_through_the_cri_form() {
        let desired = ContainerResources {
            memory_limit: 200 << 20,
            memory_request: 0,
            cpu_limit: 250,
            cpu_request: 150,
        };
        let linux = linux_resources(&desired);
        assert_eq!(
            (linux.cpu_quota, linux.cpu_period, linux.cpu_shares),
            (25_000, 100_000, 153)
        );
        let back = runtime_resources(Some(&v1::ContainerResources {
            linux: Some(linux),
            windows: None,
        }))
        .unwrap_or_default();
        assert_eq!(back.cpu_limit, Some(250));
        assert_eq!(back.cpu_request, Some(150));
        assert_eq!(back.memory_limit, Some(200 << 20));
    }
}
