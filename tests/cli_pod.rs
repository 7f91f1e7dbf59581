//! `cri-harness pod apply` and `pod delete` with a manifest as `kubectl get pod -o yaml` prints
//! it (tests/fixtures/pod-kubectl.yaml): the pod reaches Running through SyncPod, and deleting it
//! leaves nothing of it on the runtime. On the mock always; on the real runtime named by
//! `CONTAINER_RUNTIME_ENDPOINT` under `CI=true` (which fails without it), and elsewhere when
//! asked for with `--ignored`.

mod support;

use std::process::Output;

use cri_harness::cri::{labels, CriClient};

const FIXTURE: &str = "tests/fixtures/pod-kubectl.yaml";
/// The fixture's `metadata.uid`.
const UID: &str = "9a7e3c51-2f64-4b0d-8e19-c5d2a8f7b603";

async fn pod(
    verb: &'static str,
    manifest: std::path::PathBuf,
    endpoint: String,
    root: std::path::PathBuf,
    extra: &'static [&'static str],
) -> Output {
    tokio::task::spawn_blocking(move || {
        support::harness()
            .args(["pod", verb, "-r", &endpoint, "-f"])
            .arg(manifest)
            .arg("--root")
            .arg(root)
            .args(extra)
            .output()
            .expect("the binary runs")
    })
    .await
    .expect("the command's thread")
}

/// The pod's sandboxes and containers on the runtime, by its uid label.
async fn left(client: &CriClient) -> (usize, usize) {
    let objects = support::labelled_by(client, labels::POD_UID, UID).await;
    let sandboxes = objects.iter().filter(|o| o.starts_with("sandbox ")).count();
    (sandboxes, objects.len() - sandboxes)
}

/// Writes the fixture into `dir`, or the fixture without its init container: the mock runs no
/// processes, so an init container there never ends by itself.
fn write_manifest(dir: &std::path::Path, with_init: bool) -> std::path::PathBuf {
    let manifest = dir.join("pod.yaml");
    let mut pod_yaml: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    if !with_init {
        pod_yaml["spec"]
            .as_object_mut()
            .unwrap()
            .remove("initContainers");
    }
    std::fs::write(&manifest, serde_json::to_string(&pod_yaml).unwrap()).unwrap();
    manifest
}

async fn apply_then_delete(endpoint: String, client: &CriClient, with_init: bool) {
    let root = tempfile::tempdir().unwrap();
    let manifest = write_manifest(root.path(), with_init);
    let applied = pod(
        "apply",
        manifest.clone(),
        endpoint.clone(),
        root.path().to_owned(),
        &[],
    )
    .await;
    let out = support::printed(&applied);
    assert!(applied.status.success(), "{out}");
    if with_init {
        assert!(
            out.contains("create a sandbox (attempt 0); start init prepare"),
            "{out}"
        );
        assert!(out.contains("start main, helper"), "{out}");
    } else {
        assert!(
            out.contains("create a sandbox (attempt 0); start main, helper"),
            "{out}"
        );
    }
    assert!(
        out.contains("pod harness/sleepers-6d8f9c7b5-x7kqp is running"),
        "{out}"
    );
    assert_eq!(left(client).await.1, 2 + usize::from(with_init), "{out}");
    // The sandbox's log directory is under the harness's root, named as the kubelet names it.
    assert!(root
        .path()
        .join("pods")
        .join(format!("harness_sleepers-6d8f9c7b5-x7kqp_{UID}"))
        .is_dir());

    let deleted = pod("delete", manifest, endpoint, root.path().to_owned(), &[]).await;
    let out = support::printed(&deleted);
    assert!(deleted.status.success(), "{out}");
    assert!(out.contains("deleted"), "{out}");
    assert_eq!(left(client).await, (0, 0), "{out}");
    assert!(!root
        .path()
        .join("pods")
        .join(format!("harness_sleepers-6d8f9c7b5-x7kqp_{UID}"))
        .exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubectl_manifest_runs_and_is_deleted_on_the_mock() {
    let (_dir, server, client, _control) = support::mock_on_socket().await;
    apply_then_delete(server.endpoint().to_string(), &client, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn a_kubectl_manifest_runs_and_is_deleted_on_the_real_runtime() {
    let endpoint = support::need::runtime();
    let parsed = endpoint.parse().expect("a valid endpoint");
    let client = cri_harness::cri::connect(&parsed, &parsed, &Default::default())
        .await
        .unwrap();
    apply_then_delete(endpoint, &client, true).await;
}

/// `pod apply`'s back-off is the chosen kubelet's: a crash-loop cap is today's configuration,
/// so the seed refuses it, and today's kubelet refuses it with its gate off, each before any
/// sync; with the gate on (its default) the pod runs as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loop_cap_is_taken_only_where_the_chosen_kubelet_takes_it() {
    let (_dir, server, client, _control) = support::mock_on_socket().await;
    let root = tempfile::tempdir().unwrap();
    let manifest = write_manifest(root.path(), false);
    let apply = |extra| {
        pod(
            "apply",
            manifest.clone(),
            server.endpoint().to_string(),
            root.path().to_owned(),
            extra,
        )
    };
    let seed = apply(&["--max-container-restart-period-seconds", "5"]).await;
    let out = support::printed(&seed);
    assert!(!seed.status.success(), "{out}");
    assert!(out.contains("the seed"), "{out}");
    let gate_off = apply(&[
        "--kubelet",
        "current",
        "--feature-gates",
        "KubeletCrashLoopBackOffMax=false",
        "--max-container-restart-period-seconds",
        "5",
    ])
    .await;
    let out = support::printed(&gate_off);
    assert!(!gate_off.status.success(), "{out}");
    assert!(
        out.contains("FeatureGate KubeletCrashLoopBackOffMax not enabled"),
        "{out}"
    );
    assert_eq!(left(&client).await, (0, 0), "nothing synced: {out}");
    let capped = apply(&[
        "--kubelet",
        "current",
        "--max-container-restart-period-seconds",
        "5",
        "--wait",
        "10s",
    ])
    .await;
    let out = support::printed(&capped);
    assert!(capped.status.success(), "{out}");
    assert!(out.contains("is running"), "{out}");
}

/// A container with a CPU limit and no request is created as the kubelet creates it: the API
/// server has given it the limit as its request, so its shares are the limit's (512 for 500m),
/// not the runtime's minimum, as the mock reports them back in ContainerStatus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_without_a_request_reaches_the_runtime_with_its_defaulted_request() {
    let (_dir, server, client, _control) = support::mock_on_socket().await;
    let root = tempfile::tempdir().unwrap();
    let manifest = write_manifest(root.path(), false);
    let mut pod_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let main = pod_json["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["name"] == "main")
        .expect("the fixture's main container");
    main["resources"] = serde_json::json!({"limits": {"cpu": "500m"}});
    std::fs::write(&manifest, pod_json.to_string()).unwrap();

    let applied = pod(
        "apply",
        manifest,
        server.endpoint().to_string(),
        root.path().to_owned(),
        &[],
    )
    .await;
    let out = support::printed(&applied);
    assert!(applied.status.success(), "{out}");
    let containers = client.list_containers(None).await.unwrap();
    let main = containers
        .iter()
        .find(|c| c.metadata.as_ref().is_some_and(|m| m.name == "main"))
        .expect("main was created");
    let status = client.container_status(&main.id).await.unwrap();
    let linux = status
        .status
        .and_then(|s| s.resources)
        .and_then(|r| r.linux)
        .expect("the mock reports the container's resources");
    assert_eq!(
        (linux.cpu_shares, linux.cpu_quota, linux.cpu_period),
        (512, 50_000, 100_000),
        "{out}"
    );
}
