//! The RuntimeService calls the mock answers without a real process, across the wire
//! (in-memory duplex): verbose Status (crictl info), container and pod sandbox stats (crictl
//! stats, statsp), UpdateContainerResources, ReopenContainerLog and UpdateRuntimeConfig, each
//! as containerd 1.6 answers it.

use crate::support;

use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::control::{AdvanceClockRequest, SetClockRequest};
use cri_harness::cri::{v1, CriClient};
use rstest::rstest;
use serde_json::Value;
use support::{container_config, create_container, host_network, labels, mock, sandbox_config};
use tonic::transport::Channel;
use tonic::Code;

/// 2023-11-14, where the tests freeze the mock's clock.
const T0: i64 = 1_700_000_000_000_000_000;
const SECOND: i64 = 1_000_000_000;

async fn freeze(control: &mut MockControlClient<Channel>, unix_nanos: i64) {
    control
        .set_clock(SetClockRequest { unix_nanos })
        .await
        .unwrap();
}

async fn advance(control: &mut MockControlClient<Channel>, nanos: i64) {
    control
        .advance_clock(AdvanceClockRequest { nanos })
        .await
        .unwrap();
}

async fn list_stats(
    client: &CriClient,
    filter: Option<v1::ContainerStatsFilter>,
) -> Vec<v1::ContainerStats> {
    client
        .runtime_service()
        .list_container_stats(v1::ListContainerStatsRequest { filter })
        .await
        .unwrap()
        .into_inner()
        .stats
}

async fn stats_of(client: &CriClient, id: &str) -> Result<v1::ContainerStats, tonic::Status> {
    client
        .runtime_service()
        .container_stats(v1::ContainerStatsRequest {
            container_id: id.to_owned(),
        })
        .await
        .map(|r| r.into_inner().stats.unwrap_or_default())
}

async fn sandbox_stats_of(
    client: &CriClient,
    id: &str,
) -> Result<v1::PodSandboxStats, tonic::Status> {
    client
        .runtime_service()
        .pod_sandbox_stats(v1::PodSandboxStatsRequest {
            pod_sandbox_id: id.to_owned(),
        })
        .await
        .map(|r| r.into_inner().stats.unwrap_or_default())
}

async fn list_sandbox_stats(
    client: &CriClient,
    filter: Option<v1::PodSandboxStatsFilter>,
) -> Vec<v1::PodSandboxStats> {
    client
        .runtime_service()
        .list_pod_sandbox_stats(v1::ListPodSandboxStatsRequest { filter })
        .await
        .unwrap()
        .into_inner()
        .stats
}

fn id_of(stats: &v1::ContainerStats) -> &str {
    stats.attributes.as_ref().map_or("", |a| a.id.as_str())
}

fn cpu(stats: &v1::ContainerStats) -> (i64, u64, u64) {
    let cpu = stats.cpu.unwrap_or_default();
    (
        cpu.timestamp,
        cpu.usage_core_nano_seconds.map_or(0, |v| v.value),
        cpu.usage_nano_cores.map_or(0, |v| v.value),
    )
}

fn working_set(memory: &Option<v1::MemoryUsage>) -> u64 {
    memory
        .as_ref()
        .and_then(|m| m.working_set_bytes)
        .map_or(0, |v| v.value)
}

/// A READY pod `default/<pod>` with a running container `app` and a created one `idle`.
async fn pod_with_running_and_created(client: &CriClient, pod: &str) -> (String, String, String) {
    let mut config = sandbox_config(pod, "default", &format!("uid-{pod}"), 0);
    config.labels = labels(&[("pod", pod)]);
    let sandbox = client.run_pod_sandbox(config, "").await.unwrap();
    let running = create_container(client, &sandbox, pod, "app").await;
    client.start_container(&running).await.unwrap();
    let created = create_container(client, &sandbox, pod, "idle").await;
    (sandbox, running, created)
}

#[tokio::test]
async fn verbose_status_answers_containerds_info_keys_as_json() {
    let (_mock, client, _control) = mock().await;
    let info = client.status(true).await.unwrap().info;
    let keys: Vec<&str> = info.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "cniconfig",
            "config",
            "golang",
            "lastCNILoadStatus",
            "lastCNILoadStatus.default"
        ]
    );
    let config: Value = serde_json::from_str(&info["config"]).unwrap();
    assert_eq!(config["containerd"]["defaultRuntimeName"], "runc");
    assert_eq!(
        config["containerd"]["runtimes"]["runc"]["runtimeType"],
        "io.containerd.runc.v2"
    );
    assert_eq!(config["cni"]["confDir"], "/etc/cni/net.d");
    let cni: Value = serde_json::from_str(&info["cniconfig"]).unwrap();
    assert_eq!(cni["Networks"][1]["Config"]["Name"], "containerd-net");
    let golang: Value = serde_json::from_str(&info["golang"]).unwrap();
    assert!(
        golang.as_str().is_some_and(|v| v.starts_with("go1.")),
        "{golang}"
    );
    assert_eq!(info["lastCNILoadStatus"], "OK");
    assert!(client.status(false).await.unwrap().info.is_empty());
}

#[tokio::test]
async fn list_container_stats_gives_running_containers_cpu_and_memory_and_others_attributes() {
    let (_mock, client, mut control) = mock().await;
    freeze(&mut control, T0).await;
    let (_, running, created) = pod_with_running_and_created(&client, "a").await;
    advance(&mut control, 2 * SECOND).await;
    let stats = list_stats(&client, None).await;
    let ids: Vec<&str> = stats.iter().map(id_of).collect();
    assert_eq!(ids, [running.as_str(), created.as_str()], "oldest first");
    let (timestamp, used, rate) = cpu(&stats[0]);
    assert_eq!(timestamp, T0 + 2 * SECOND);
    // Two seconds at `rate` nano-cores.
    assert_eq!(used, 2 * rate);
    assert!(working_set(&stats[0].memory) >= 8 << 20);
    assert_eq!(
        stats[0].memory.as_ref().map(|m| m.timestamp),
        Some(T0 + 2 * SECOND)
    );
    assert_eq!((&stats[1].cpu, &stats[1].memory), (&None, &None));
    for s in &stats {
        let layer = s.writable_layer.clone().unwrap_or_default();
        assert_eq!(
            layer.fs_id.map(|f| f.mountpoint),
            Some("/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs".to_owned())
        );
        // Two seconds old: like containerd's, the layer is not measured yet.
        assert_eq!(layer.used_bytes.map(|b| b.value), Some(0));
        assert_eq!(layer.timestamp, 0);
    }
    advance(&mut control, 10 * SECOND).await;
    for s in list_stats(&client, None).await {
        let layer = s.writable_layer.unwrap_or_default();
        assert!(layer.used_bytes.is_some_and(|b| b.value > 0));
        assert_eq!(layer.timestamp, T0 + 10 * SECOND);
    }
    let attributes = stats[0].attributes.clone().unwrap_or_default();
    assert_eq!(attributes.metadata.map(|m| m.name), Some("app".to_owned()));
}

#[tokio::test]
async fn cpu_counts_up_with_running_time_while_memory_stays() {
    let (_mock, client, mut control) = mock().await;
    freeze(&mut control, T0).await;
    let (_, running, _) = pod_with_running_and_created(&client, "a").await;
    advance(&mut control, 2 * SECOND).await;
    let first = stats_of(&client, &running).await.unwrap();
    advance(&mut control, 3 * SECOND).await;
    let second = stats_of(&client, &running).await.unwrap();
    let ((t1, used1, _), (t2, used2, rate)) = (cpu(&first), cpu(&second));
    assert_eq!((t1, t2), (T0 + 2 * SECOND, T0 + 5 * SECOND));
    assert_eq!(
        used1 * 5,
        used2 * 2,
        "usage is proportional to running time"
    );
    // What crictl stats computes from two samples is the rate the mock reports.
    let seconds = u64::try_from((t2 - t1) / SECOND).unwrap();
    assert_eq!((used2 - used1) / seconds, rate);
    assert_eq!(working_set(&first.memory), working_set(&second.memory));
    assert!(
        (1_000_000..=100_000_000).contains(&rate),
        "1 to 100 milli-cores: {rate}"
    );
}

#[tokio::test]
async fn an_exited_container_is_listed_without_cpu_or_memory() {
    let (_mock, client, mut control) = mock().await;
    freeze(&mut control, T0).await;
    let (_, running, _) = pod_with_running_and_created(&client, "a").await;
    advance(&mut control, SECOND).await;
    client.stop_container(&running, 0).await.unwrap();
    let stats = list_stats(
        &client,
        Some(v1::ContainerStatsFilter {
            id: running.clone(),
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(stats.len(), 1);
    assert_eq!((&stats[0].cpu, &stats[0].memory), (&None, &None));
}

#[rstest]
#[case::full_id("running", "", &[], &["a/app"])]
#[case::id_prefix("running12", "", &[], &["a/app"])]
#[case::unknown_id("0000", "", &[], &[])]
#[case::sandbox("", "sandbox", &[], &["a/app", "a/idle"])]
#[case::sandbox_prefix("", "sandbox12", &[], &["a/app", "a/idle"])]
#[case::unknown_sandbox("", "0000", &[], &[])]
#[case::label("", "", &[("io.kubernetes.container.name", "idle")], &["a/idle", "b/idle"])]
#[case::sandbox_and_label("", "sandbox", &[("io.kubernetes.container.name", "idle")], &["a/idle"])]
#[case::no_filter("", "", &[], &["a/app", "a/idle", "b/app", "b/idle"])]
#[tokio::test]
async fn list_container_stats_filters_as_containerd_does(
    #[case] id: &str,
    #[case] sandbox: &str,
    #[case] selector: &[(&str, &str)],
    #[case] expected: &[&str],
) {
    let (_mock, client, _control) = mock().await;
    let mut names = std::collections::BTreeMap::new();
    let mut first = None;
    for pod in ["a", "b"] {
        let sandbox_id = client
            .run_pod_sandbox(sandbox_config(pod, "default", &format!("uid-{pod}"), 0), "")
            .await
            .unwrap();
        client.pull_image("busybox").await.unwrap();
        for name in ["app", "idle"] {
            let mut config = container_config(name, "busybox");
            config.labels = labels(&[("io.kubernetes.container.name", name)]);
            let container = client
                .create_container(
                    &sandbox_id,
                    config,
                    sandbox_config(pod, "default", &format!("uid-{pod}"), 0),
                )
                .await
                .unwrap();
            names.insert(container.clone(), format!("{pod}/{name}"));
            first.get_or_insert((sandbox_id.clone(), container));
        }
    }
    let (sandbox_a, app_a) = first.unwrap();
    let resolve = |given: &str| match given {
        "running" => app_a.clone(),
        "running12" => app_a[..12].to_owned(),
        "sandbox" => sandbox_a.clone(),
        "sandbox12" => sandbox_a[..12].to_owned(),
        other => other.to_owned(),
    };
    let filter = v1::ContainerStatsFilter {
        id: resolve(id),
        pod_sandbox_id: resolve(sandbox),
        label_selector: labels(selector),
    };
    let listed: Vec<String> = list_stats(&client, Some(filter))
        .await
        .iter()
        .map(|s| names[id_of(s)].clone())
        .collect();
    assert_eq!(listed, expected);
}

#[tokio::test]
async fn container_stats_of_an_unknown_or_stopped_container_fails_as_containerd_does() {
    let (_mock, client, _control) = mock().await;
    let (_, _, created) = pod_with_running_and_created(&client, "a").await;
    let unknown = stats_of(&client, "feed").await.unwrap_err();
    assert_eq!(
        (unknown.code(), unknown.message()),
        (Code::NotFound, "failed to find container: not found")
    );
    let idle = stats_of(&client, &created).await.unwrap_err();
    assert_eq!(
        (idle.code(), idle.message()),
        (Code::Unknown, "unexpected metrics response: []")
    );
}

#[tokio::test]
async fn pod_sandbox_stats_add_the_pause_process_to_the_containers() {
    let (_mock, client, mut control) = mock().await;
    freeze(&mut control, T0).await;
    let (sandbox, running, created) = pod_with_running_and_created(&client, "a").await;
    advance(&mut control, 10 * SECOND).await;
    let stats = sandbox_stats_of(&client, &sandbox).await.unwrap();
    let attributes = stats.attributes.clone().unwrap_or_default();
    assert_eq!(attributes.id, sandbox);
    assert_eq!(attributes.labels, labels(&[("pod", "a")]));
    let linux = stats.linux.clone().unwrap_or_default();
    let containers: Vec<&str> = linux.containers.iter().map(id_of).collect();
    assert_eq!(containers, [running.as_str(), created.as_str()]);
    let app = &linux.containers[0];
    let pod_cpu = linux.cpu.unwrap_or_default();
    assert_eq!(pod_cpu.timestamp, T0 + 10 * SECOND);
    assert!(pod_cpu.usage_core_nano_seconds.map_or(0, |v| v.value) > cpu(app).1);
    assert!(pod_cpu.usage_nano_cores.map_or(0, |v| v.value) > cpu(app).2);
    assert!(working_set(&linux.memory) > working_set(&app.memory));
    let process = linux.process.unwrap_or_default();
    assert_eq!(process.process_count.map(|v| v.value), Some(1));
    let network = linux.network.clone().unwrap_or_default();
    let eth0 = network.default_interface.unwrap_or_default();
    assert_eq!(eth0.name, "eth0");
    assert!(eth0.rx_bytes.is_some_and(|b| b.value > 0));
    assert_eq!(
        linux.containers,
        list_stats(
            &client,
            Some(v1::ContainerStatsFilter {
                pod_sandbox_id: sandbox.clone(),
                ..Default::default()
            })
        )
        .await
    );
}

#[tokio::test]
async fn a_host_network_pod_reports_no_network_stats() {
    let (_mock, client, _control) = mock().await;
    let config = host_network(sandbox_config("h", "default", "uid-h", 0));
    let sandbox = client.run_pod_sandbox(config, "").await.unwrap();
    let stats = sandbox_stats_of(&client, &sandbox).await.unwrap();
    let linux = stats.linux.unwrap_or_default();
    assert_eq!(linux.network, None);
    assert_eq!(
        linux.process.and_then(|p| p.process_count).map(|v| v.value),
        Some(0)
    );
}

#[tokio::test]
async fn a_pods_cpu_time_keeps_what_a_removed_container_used() {
    let (_mock, client, mut control) = mock().await;
    freeze(&mut control, T0).await;
    let (sandbox, running, _) = pod_with_running_and_created(&client, "a").await;
    advance(&mut control, 5 * SECOND).await;
    let pod_cpu = |stats: v1::PodSandboxStats| {
        stats
            .linux
            .and_then(|l| l.cpu)
            .and_then(|c| c.usage_core_nano_seconds)
            .map_or(0, |v| v.value)
    };
    let before = pod_cpu(sandbox_stats_of(&client, &sandbox).await.unwrap());
    client.stop_container(&running, 0).await.unwrap();
    client.remove_container(&running).await.unwrap();
    let after = pod_cpu(sandbox_stats_of(&client, &sandbox).await.unwrap());
    assert_eq!(
        after, before,
        "the clock did not move, so neither does the count"
    );
}

#[tokio::test]
async fn pod_sandbox_stats_of_an_unknown_or_stopped_sandbox_fails_as_containerd_does() {
    let (_mock, client, _control) = mock().await;
    let (sandbox, _, _) = pod_with_running_and_created(&client, "a").await;
    let unknown = sandbox_stats_of(&client, "feed").await.unwrap_err();
    assert_eq!(
        (unknown.code(), unknown.message()),
        (
            Code::NotFound,
            "an error occurred when trying to find sandbox feed: not found"
        )
    );
    client.stop_pod_sandbox(&sandbox).await.unwrap();
    let prefix = &sandbox[..12];
    let stopped = sandbox_stats_of(&client, prefix).await.unwrap_err();
    assert_eq!(
        (stopped.code(), stopped.message().to_owned()),
        (
            Code::Unavailable,
            format!(
                "failed to decode pod sandbox metrics {prefix}: failed to get pod sandbox stats \
                 since sandbox container \"{sandbox}\" is not in ready state: unavailable"
            )
        )
    );
}

#[tokio::test]
async fn list_pod_sandbox_stats_lists_ready_sandboxes_by_id_and_label() {
    let (_mock, client, _control) = mock().await;
    let (a, _, _) = pod_with_running_and_created(&client, "a").await;
    let (b, _, _) = pod_with_running_and_created(&client, "b").await;
    let (c, _, _) = pod_with_running_and_created(&client, "c").await;
    client.stop_pod_sandbox(&b).await.unwrap();
    let ids = |stats: Vec<v1::PodSandboxStats>| -> Vec<String> {
        stats
            .into_iter()
            .map(|s| s.attributes.unwrap_or_default().id)
            .collect()
    };
    assert_eq!(
        ids(list_sandbox_stats(&client, None).await),
        [a.clone(), c.clone()]
    );
    let by_label = v1::PodSandboxStatsFilter {
        label_selector: labels(&[("pod", "c")]),
        ..Default::default()
    };
    assert_eq!(ids(list_sandbox_stats(&client, Some(by_label)).await), [c]);
    let by_prefix = v1::PodSandboxStatsFilter {
        id: a[..12].to_owned(),
        ..Default::default()
    };
    assert_eq!(ids(list_sandbox_stats(&client, Some(by_prefix)).await), [a]);
    let stopped = v1::PodSandboxStatsFilter {
        id: b,
        ..Default::default()
    };
    assert!(list_sandbox_stats(&client, Some(stopped)).await.is_empty());
}

async fn update_memory(client: &CriClient, id: &str, limit: i64) -> Result<(), tonic::Status> {
    client
        .runtime_service()
        .update_container_resources(v1::UpdateContainerResourcesRequest {
            container_id: id.to_owned(),
            linux: Some(v1::LinuxContainerResources {
                memory_limit_in_bytes: limit,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .map(|_| ())
}

#[tokio::test]
async fn update_container_resources_sets_the_limit_available_memory_counts_from() {
    let (_mock, client, _control) = mock().await;
    let (_, running, created) = pod_with_running_and_created(&client, "a").await;
    let available = |stats: &v1::ContainerStats| {
        stats
            .memory
            .as_ref()
            .and_then(|m| m.available_bytes)
            .map_or(u64::MAX, |v| v.value)
    };
    let before = stats_of(&client, &running).await.unwrap();
    assert_eq!(available(&before), 0, "unlimited, as containerd reports it");
    update_memory(&client, &running, 256 << 20).await.unwrap();
    let after = stats_of(&client, &running).await.unwrap();
    assert_eq!(available(&after), (256 << 20) - working_set(&after.memory));
    // A container that has not started takes its limits when it does.
    update_memory(&client, &created, 128 << 20).await.unwrap();
    let unknown = update_memory(&client, "feed", 1 << 20).await.unwrap_err();
    assert_eq!(
        (unknown.code(), unknown.message()),
        (Code::NotFound, "failed to find container: not found")
    );
}

async fn reopen_log(client: &CriClient, id: &str) -> Result<(), tonic::Status> {
    client
        .runtime_service()
        .reopen_container_log(v1::ReopenContainerLogRequest {
            container_id: id.to_owned(),
        })
        .await
        .map(|_| ())
}

#[tokio::test]
async fn reopen_container_log_needs_a_running_container() {
    let (_mock, client, _control) = mock().await;
    let (_, running, created) = pod_with_running_and_created(&client, "a").await;
    reopen_log(&client, &running).await.unwrap();
    let idle = reopen_log(&client, &created).await.unwrap_err();
    assert_eq!(
        (idle.code(), idle.message()),
        (Code::Unknown, "container is not running")
    );
    let unknown = reopen_log(&client, "feed").await.unwrap_err();
    assert_eq!(
        (unknown.code(), unknown.message()),
        (
            Code::NotFound,
            "an error occurred when try to find container \"feed\": not found"
        )
    );
}

#[rstest]
#[case::none("", None)]
#[case::one_v4("10.244.0.0/24", None)]
#[case::dual_stack("10.244.0.0/24, fd00:10:244::/64", None)]
#[case::no_prefix_length("10.244.0.0", Some("10.244.0.0"))]
#[case::prefix_too_long("10.244.0.0/33", Some("10.244.0.0/33"))]
#[case::second_is_bad("10.244.0.0/24,pods", Some("pods"))]
#[tokio::test]
async fn update_runtime_config_checks_the_pod_cidrs(#[case] cidr: &str, #[case] bad: Option<&str>) {
    let (_mock, client, _control) = mock().await;
    let answer = client
        .runtime_service()
        .update_runtime_config(v1::UpdateRuntimeConfigRequest {
            runtime_config: Some(v1::RuntimeConfig {
                network_config: Some(v1::NetworkConfig {
                    pod_cidr: cidr.to_owned(),
                }),
            }),
        })
        .await;
    let outcome = answer
        .map(|_| ())
        .map_err(|s| (s.code(), s.message().to_owned()));
    let expected = match bad {
        None => Ok(()),
        Some(bad) => Err((
            Code::Unknown,
            format!("get routes: invalid CIDR address: {bad}"),
        )),
    };
    assert_eq!(outcome, expected);
}
