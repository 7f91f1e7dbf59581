//! ListMetricDescriptors and ListPodSandboxMetrics on the mock: a fixed set of descriptors in
//! cAdvisor's names, and for each READY sandbox (as containerd lists them) a pod-level network
//! metric and per-container CPU and memory metrics, each naming a declared descriptor with one
//! label value per label key. CPU time is the stats' own; the other figures are plain ones
//! derived from the clock (no real process or network is there to measure).

use super::error::RpcError;
use super::state::{Container, Sandbox};
use super::{stats, Defect, Inner, MockRuntime};
use crate::cri::v1;

use v1::MetricType::{Counter, Gauge};

/// The label keys of every container metric, sorted as the contract asks.
const CONTAINER_LABELS: &[&str] = &["container", "namespace", "pod"];
/// The label keys of every pod-level metric, sorted.
const POD_LABELS: &[&str] = &["interface", "namespace", "pod"];

/// Name, help, label keys of each descriptor the mock declares.
const DESCRIPTORS: &[(&str, &str, &[&str])] = &[
    (
        "container_cpu_usage_seconds_total",
        "Cumulative cpu time consumed in seconds.",
        CONTAINER_LABELS,
    ),
    (
        "container_memory_working_set_bytes",
        "Current working set in bytes.",
        CONTAINER_LABELS,
    ),
    (
        "container_network_receive_bytes_total",
        "Cumulative count of bytes received.",
        POD_LABELS,
    ),
];

/// The working set of a running container, in bytes.
const WORKING_SET: u64 = 8 << 20;

/// Bytes a pod has received by `now`: a kibibyte per second since it was created.
fn received_bytes(sandbox: &Sandbox, now: i64) -> u64 {
    u64::try_from(now.saturating_sub(sandbox.status.created_at) / 1_000_000_000).unwrap_or(0) * 1024
}

/// The name a metric carries when the mock is made with [`Defect::UndeclaredMetric`].
const UNDECLARED: &str = "container_undeclared_total";

pub(crate) fn list_metric_descriptors(
    _inner: &mut Inner,
    _request: v1::ListMetricDescriptorsRequest,
) -> Result<v1::ListMetricDescriptorsResponse, RpcError> {
    let descriptors = DESCRIPTORS
        .iter()
        .map(|&(name, help, keys)| v1::MetricDescriptor {
            name: name.to_owned(),
            help: help.to_owned(),
            label_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        })
        .collect();
    Ok(v1::ListMetricDescriptorsResponse { descriptors })
}

fn metric(name: &str, kind: v1::MetricType, labels: [&str; 3], value: u64) -> v1::Metric {
    v1::Metric {
        name: name.to_owned(),
        // Gathered live, which the contract marks with a zero timestamp.
        timestamp: 0,
        metric_type: kind as i32,
        label_values: labels.iter().map(|l| (*l).to_owned()).collect(),
        value: Some(v1::UInt64Value { value }),
    }
}

fn container_metrics(
    container: &Container,
    pod: &str,
    namespace: &str,
    now: i64,
    undeclared: bool,
) -> v1::ContainerMetrics {
    let name = container
        .status
        .metadata
        .as_ref()
        .map_or("", |m| m.name.as_str());
    let labels = [name, namespace, pod];
    let cpu_nanos = stats::cpu_nanos(container, now);
    let running = container.status.state == v1::ContainerState::ContainerRunning as i32;
    let working_set = if running { WORKING_SET } else { 0 };
    let mut metrics = vec![
        metric(
            "container_cpu_usage_seconds_total",
            Counter,
            labels,
            cpu_nanos / 1_000_000_000,
        ),
        metric(
            "container_memory_working_set_bytes",
            Gauge,
            labels,
            working_set,
        ),
    ];
    if undeclared {
        metrics.push(metric(UNDECLARED, Counter, labels, 1));
    }
    v1::ContainerMetrics {
        container_id: container.status.id.clone(),
        metrics,
    }
}

fn sandbox_metrics(
    inner: &Inner,
    sandbox: &Sandbox,
    now: i64,
    undeclared: bool,
) -> v1::PodSandboxMetrics {
    let metadata = sandbox.status.metadata.clone().unwrap_or_default();
    let (pod, namespace) = (metadata.name.as_str(), metadata.namespace.as_str());
    let container_metrics = inner
        .state
        .containers
        .in_group(&sandbox.status.id)
        .map(|(_, c)| container_metrics(c, pod, namespace, now, undeclared))
        .collect();
    v1::PodSandboxMetrics {
        pod_sandbox_id: sandbox.status.id.clone(),
        metrics: vec![metric(
            "container_network_receive_bytes_total",
            Counter,
            ["eth0", namespace, pod],
            received_bytes(sandbox, now),
        )],
        container_metrics,
    }
}

pub(crate) fn list_pod_sandbox_metrics(
    inner: &mut Inner,
    _request: v1::ListPodSandboxMetricsRequest,
) -> Result<v1::ListPodSandboxMetricsResponse, RpcError> {
    let undeclared = MockRuntime::has(inner, Defect::UndeclaredMetric);
    let now = inner.clock.now();
    let pod_metrics = inner
        .state
        .sandboxes
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.status.state == v1::PodSandboxState::SandboxReady as i32)
        .map(|s| sandbox_metrics(inner, s, now, undeclared))
        .collect();
    Ok(v1::ListPodSandboxMetricsResponse { pod_metrics })
}
