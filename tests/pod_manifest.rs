//! A pod as `kubectl get pod -o yaml` prints it for a running pod (tests/fixtures/pod-kubectl.yaml,
//! every field the API server defaults and the kubelet reports) feeds the life cycle as it is: the
//! readers see its identity and containers, and the first sync asks for a sandbox and the init
//! container.

use cri_harness::manager::lifecycle::pod::{self, RestartPolicy};
use cri_harness::manager::lifecycle::{compute_pod_actions, k8s, PodActions, ProbeResults};
use cri_harness::manager::PodStatus;

fn fixture() -> k8s::Pod {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pod-kubectl.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

fn names(containers: &[k8s::Container]) -> Vec<&str> {
    containers.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn a_kubectl_manifest_reads_with_its_identity_and_restart_policy() {
    let pod = fixture();
    assert_eq!(
        (pod::uid(&pod), pod::name(&pod), pod::namespace(&pod)),
        (
            "9a7e3c51-2f64-4b0d-8e19-c5d2a8f7b603",
            "sleepers-6d8f9c7b5-x7kqp",
            "harness"
        )
    );
    assert_eq!(pod::restart_policy(&pod), RestartPolicy::Always);
    assert!(!pod::host_network(&pod) && !pod::deletion_requested(&pod));
}

#[test]
fn a_kubectl_manifest_lists_its_init_container_and_two_sleepers() {
    let pod = fixture();
    assert_eq!(names(pod::init_containers(&pod)), ["prepare"]);
    assert_eq!(names(pod::containers(&pod)), ["main", "helper"]);
    assert!(!pod::is_restartable_init_container(
        &pod::init_containers(&pod)[0]
    ));
    for container in pod::containers(&pod) {
        assert_eq!(
            container.image.as_deref(),
            Some("registry.k8s.io/e2e-test-images/busybox:1.36.1-1")
        );
        assert_eq!(
            container.command.as_deref(),
            Some(&["sleep".to_owned(), "3600".to_owned()][..])
        );
    }
}

#[test]
fn a_kubectl_manifest_keeps_its_volumes_and_mounts() {
    let pod = fixture();
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default();
    let kinds: Vec<(&str, &str)> = volumes
        .iter()
        .map(|v| {
            let kind = if v.host_path.is_some() {
                "hostPath"
            } else if v.empty_dir.is_some() {
                "emptyDir"
            } else if v.projected.is_some() {
                "projected"
            } else {
                "other"
            };
            (v.name.as_str(), kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("host-log", "hostPath"),
            ("scratch", "emptyDir"),
            ("kube-api-access-5vz2m", "projected")
        ]
    );
    let host_path = volumes[0].host_path.as_ref().unwrap();
    assert_eq!(
        (host_path.path.as_str(), host_path.type_.as_deref()),
        ("/var/log", Some("Directory"))
    );
    let helper = pod::find_container(
        &pod,
        "helper",
        cri_harness::manager::lifecycle::ContainerKind::Regular,
    )
    .unwrap();
    let mounts: Vec<(&str, &str, Option<bool>)> = helper
        .volume_mounts
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|m| (m.name.as_str(), m.mount_path.as_str(), m.read_only))
        .collect();
    assert_eq!(
        mounts,
        [
            ("host-log", "/host-log", Some(true)),
            (
                "kube-api-access-5vz2m",
                "/var/run/secrets/kubernetes.io/serviceaccount",
                Some(true)
            )
        ]
    );
}

#[test]
fn a_kubectl_manifest_keeps_what_the_api_server_and_kubelet_filled_in() {
    let pod = fixture();
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    assert_eq!(spec.tolerations.as_ref().map(Vec::len), Some(2));
    assert_eq!(
        pod.metadata
            .owner_references
            .as_ref()
            .map(|o| o[0].kind.as_str()),
        Some("ReplicaSet")
    );
    assert_eq!(pod.metadata.managed_fields.as_ref().map(Vec::len), Some(2));
    let status = pod.status.as_ref().unwrap();
    assert_eq!(status.pod_ip.as_deref(), Some("10.244.1.17"));
    assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
    let statuses = status.container_statuses.as_deref().unwrap_or_default();
    assert_eq!(
        statuses.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["helper", "main"]
    );
}

#[test]
fn a_kubectl_manifest_with_no_runtime_state_asks_for_a_sandbox_and_its_init_container() {
    let pod = fixture();
    let actions = compute_pod_actions(&pod, &PodStatus::default(), &ProbeResults::default());
    let expected = PodActions {
        kill_pod: true,
        create_sandbox: true,
        attempt: 0,
        init_containers_to_start: vec![0],
        ..PodActions::default()
    };
    assert_eq!(actions, expected);
}
