//! The manifests under deploy/, checked offline: each deserialises into its k8s-openapi type
//! and serialises back to the same document (so a misspelt or unknown field fails, which plain
//! deserialisation would drop), and the pod spec keeps its promises: the CRI socket mounted by
//! hostPath where the endpoint says, every taint tolerated, NODE_NAME from the Downward API,
//! host directories at the same path inside, and no privilege the manifest does not explain.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Namespace, PodSpec};
use rstest::rstest;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The grace period must cover one case's cleanup (`--case-timeout`, 60 s by default) and the
/// run's sweep after it (30 s at least).
const CLEANUP_BUDGET_SECONDS: i64 = 90;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn text(name: &str) -> String {
    std::fs::read_to_string(deploy_dir().join(name)).unwrap()
}

fn document(name: &str) -> Value {
    serde_saphyr::from_str(&text(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

/// Deserialises `name` as `T` and checks the round trip gives the document back.
fn typed<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let original = document(name);
    let object: T = serde_json::from_value(original.clone())
        .unwrap_or_else(|err| panic!("{name} does not deserialise: {err}"));
    let again = serde_json::to_value(&object).unwrap();
    assert_eq!(
        again, original,
        "{name}: a field was dropped or changed on the round trip (misspelt or unknown?)"
    );
    object
}

/// kustomize's Kustomization, the fields deploy/ uses; unknown ones are refused.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Kustomization {
    api_version: String,
    kind: String,
    resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    images: Vec<KustomizeImage>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KustomizeImage {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_tag: Option<String>,
}

fn daemonset_pod() -> PodSpec {
    typed::<DaemonSet>("daemonset.yaml")
        .spec
        .and_then(|s| s.template.spec)
        .unwrap()
}

fn job_pod() -> PodSpec {
    typed::<Job>("job.yaml")
        .spec
        .and_then(|s| s.template.spec)
        .unwrap()
}

fn harness(spec: &PodSpec) -> &Container {
    assert_eq!(spec.containers.len(), 1, "one container, the harness");
    &spec.containers[0]
}

fn env<'a>(container: &'a Container, name: &str) -> &'a k8s_openapi::api::core::v1::EnvVar {
    container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no {name} in the environment"))
}

fn flag<'a>(container: &'a Container, name: &str) -> Option<&'a str> {
    let prefix = format!("--{name}=");
    container
        .args
        .iter()
        .flatten()
        .find_map(|a| a.strip_prefix(&prefix))
}

/// The hostPath behind the mount at `mount_path`, checked to be mounted at its own path.
fn host_path_at<'a>(
    spec: &'a PodSpec,
    mount_path: &str,
) -> &'a k8s_openapi::api::core::v1::HostPathVolumeSource {
    let mount = harness(spec)
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == mount_path)
        .unwrap_or_else(|| panic!("nothing mounted at {mount_path}"));
    let volume = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .unwrap_or_else(|| panic!("no volume {}", mount.name));
    let host = volume.host_path.as_ref().expect("a hostPath volume");
    assert_eq!(host.path, mount_path, "the host sees it at the same path");
    host
}

#[test]
fn every_file_under_deploy_is_a_known_manifest_that_survives_a_round_trip() {
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(deploy_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let kind = document(&name)["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match kind.as_str() {
            "DaemonSet" => drop(typed::<DaemonSet>(&name)),
            "Job" => drop(typed::<Job>(&name)),
            "Namespace" => drop(typed::<Namespace>(&name)),
            "Kustomization" => drop(typed::<Kustomization>(&name)),
            other => panic!("{name}: no schema check for kind {other:?}"),
        }
        seen.insert(kind);
    }
    assert!(
        seen.contains("DaemonSet") && seen.contains("Job"),
        "{seen:?}"
    );
}

#[test]
fn a_misspelt_field_fails_the_round_trip() {
    let mut original = document("daemonset.yaml");
    original["spec"]["template"]["spec"]["hostPid"] = Value::Bool(true);
    let object: DaemonSet = serde_json::from_value(original.clone()).unwrap();
    assert_ne!(serde_json::to_value(&object).unwrap(), original);
}

#[test]
fn the_kustomization_lists_files_that_exist() {
    let kustomization = typed::<Kustomization>("kustomization.yaml");
    for resource in &kustomization.resources {
        assert!(deploy_dir().join(resource).is_file(), "{resource}");
    }
}

#[rstest]
#[case::daemonset(daemonset_pod())]
#[case::job(job_pod())]
fn the_cri_socket_is_mounted_by_host_path_where_the_endpoint_points(#[case] spec: PodSpec) {
    let endpoint = env(harness(&spec), "CONTAINER_RUNTIME_ENDPOINT")
        .value
        .clone()
        .unwrap();
    let socket = endpoint.strip_prefix("unix://").expect("a unix endpoint");
    let host = host_path_at(&spec, socket);
    assert_eq!(host.type_.as_deref(), Some("Socket"));
}

#[rstest]
#[case::daemonset(daemonset_pod())]
#[case::job(job_pod())]
fn node_name_comes_from_the_downward_api(#[case] spec: PodSpec) {
    let var = env(harness(&spec), "NODE_NAME");
    let field = var
        .value_from
        .as_ref()
        .and_then(|v| v.field_ref.as_ref())
        .expect("a fieldRef");
    assert_eq!(field.field_path, "spec.nodeName");
}

#[test]
fn the_daemonset_tolerates_every_taint() {
    let spec = daemonset_pod();
    let tolerations = spec.tolerations.unwrap_or_default();
    assert!(
        tolerations
            .iter()
            .any(|t| t.operator.as_deref() == Some("Exists")
                && t.key.is_none()
                && t.effect.is_none()),
        "{tolerations:?}"
    );
}

#[rstest]
#[case::daemonset(daemonset_pod())]
#[case::job(job_pod())]
fn host_directories_are_mounted_at_their_own_paths_and_named_in_the_args(#[case] spec: PodSpec) {
    let container = harness(&spec);
    let work = flag(container, "work-dir").expect("--work-dir");
    assert_eq!(
        host_path_at(&spec, work).type_.as_deref(),
        Some("DirectoryOrCreate")
    );
    let propagation = container
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == work)
        .and_then(|m| m.mount_propagation.as_deref());
    assert_eq!(propagation, Some("Bidirectional"));
    let reports = flag(container, "report-dir").expect("--report-dir");
    host_path_at(&spec, reports);
    host_path_at(&spec, "/run/cri-harness/leases");

    assert!(container
        .args
        .iter()
        .flatten()
        .any(|a| a == "--report-line"));
    assert_eq!(flag(container, "snapshot-dir"), Some("/snapshots"));
    assert_eq!(flag(container, "known"), Some("/findings"));
}

#[rstest]
#[case::daemonset(daemonset_pod())]
#[case::job(job_pod())]
fn the_only_privileges_are_the_documented_ones(#[case] spec: PodSpec) {
    assert_eq!(spec.host_pid, Some(true));
    assert_eq!(
        spec.host_network, None,
        "the harness enters the node's netns itself"
    );
    assert_eq!(
        spec.host_ipc, None,
        "only test containers use the node's IPC"
    );
    assert_eq!(spec.automount_service_account_token, Some(false));
    let sc = harness(&spec).security_context.clone().unwrap_or_default();
    assert_eq!(sc.privileged, Some(true));
    assert!(
        sc.capabilities.is_none(),
        "privileged already has them; none added beside"
    );
    // Each privilege is explained where it is granted: a comment on the lines above.
    for file in ["daemonset.yaml", "job.yaml"] {
        let source = text(file);
        let lines: Vec<&str> = source.lines().collect();
        for grant in [
            "hostPID: true",
            "privileged: true",
            "mountPropagation: Bidirectional",
        ] {
            let at = lines
                .iter()
                .position(|l| l.trim() == grant)
                .unwrap_or_else(|| panic!("{file}: no `{grant}`"));
            let above = lines[..at]
                .iter()
                .rev()
                .take_while(|l| !l.trim().is_empty() && !l.trim_end().ends_with(':'))
                .any(|l| l.trim_start().starts_with('#'));
            assert!(above, "{file}: `{grant}` has no comment saying why");
        }
    }
}

#[rstest]
#[case::daemonset(daemonset_pod())]
#[case::job(job_pod())]
fn the_grace_period_covers_the_cleanup_after_sigterm(#[case] spec: PodSpec) {
    let grace = spec.termination_grace_period_seconds.unwrap_or(30);
    assert!(grace >= CLEANUP_BUDGET_SECONDS, "{grace} s");
}

#[test]
fn the_daemonset_holds_after_its_run_and_the_job_exits() {
    let daemonset = daemonset_pod();
    assert_eq!(daemonset.restart_policy.as_deref(), Some("Always"));
    assert!(harness(&daemonset)
        .args
        .iter()
        .flatten()
        .any(|a| a == "--hold"));
    let job = job_pod();
    assert_eq!(job.restart_policy.as_deref(), Some("Never"));
    assert!(!harness(&job).args.iter().flatten().any(|a| a == "--hold"));
    assert!(job
        .node_selector
        .as_ref()
        .is_some_and(|s| s.contains_key("cri-harness.io/target")));
}

#[test]
fn the_job_runs_the_daemonsets_pod_but_for_restarts_and_placement() {
    let mut daemonset = daemonset_pod();
    let mut job = job_pod();
    daemonset.restart_policy = None;
    job.restart_policy = None;
    job.node_selector = None;
    daemonset.containers[0]
        .args
        .as_mut()
        .unwrap()
        .retain(|a| a != "--hold");
    assert_eq!(
        serde_json::to_value(&daemonset).unwrap(),
        serde_json::to_value(&job).unwrap()
    );
}
