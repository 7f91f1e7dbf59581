//! The harness as a Kubernetes workload, without a cluster: its own image, built twice to one
//! digest and pushed to the CI's local registry, runs as a pod on containerd through
//! `cri-harness pod apply` with deploy/daemonset.yaml's own pod spec (only the socket path,
//! host directories, image and node name put in for this machine), runs the suites against the
//! containerd that runs it, and writes its report to a host directory. Two such pods, one
//! after the other, give two reports: the first is read back from its host directory, the second
//! from the pod's own log (its final JSON line, in the CRI log file containerd wrote), and
//! `report merge` must find both nodes in them. Each pod is deleted with `pod delete`, and
//! nothing of it or of its run may be left.
//!
//! Needs root and `CONTAINER_RUNTIME_ENDPOINT` (ci/containerd.sh up), skopeo and nsenter.
//! Under `CI=true` it fails without the endpoint; elsewhere it is ignored unless asked for
//! (`--ignored`).
//! `CRIH_BIN` names the binary put in the image (CI: the release build), else this build's.

mod support;

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cri_harness::cri::{self, ConnectOptions, Endpoint};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{EnvVar, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

/// The registry ci/containerd.sh serves, where containerd resolves every host name to.
const REGISTRY: &str = "127.0.0.1:5000";
/// The image path in that registry; the pods name it under `localhost/`, as the manifests do.
const REPOSITORY: &str = "cri-harness/cri-harness";
/// How long one pod's run may take before the test gives up waiting for its report (the
/// suites take about half a minute on containerd here).
const RUN_LIMIT: Duration = Duration::from_secs(900);
/// The namespace of the test's pods, which nothing else uses.
const NAMESPACE: &str = "cri-harness-workload";

fn note(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Builds the harness image of `binary` into `dir`; answers the manifest digest.
fn build_image(binary: &Path, dir: &Path) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = run(support::harness()
        .args(["images", "harness", "--oci"])
        .arg(dir)
        .arg("--binary")
        .arg(binary)
        .arg("--snapshots")
        .arg(repo.join("snapshots"))
        .arg("--findings")
        .arg(repo.join("findings"))
        .args(["--tag", "localhost/cri-harness/cri-harness:workload"]));
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no digest in {stdout:?}"))
        .to_owned()
}

/// The network namespace of the process serving `socket`: containerd's, where its registry
/// answers (ci/containerd.sh runs both in a namespace of their own).
fn server_netns(socket: &Path) -> PathBuf {
    let stream = UnixStream::connect(socket).unwrap();
    let peer = rustix::net::sockopt::socket_peercred(&stream).unwrap();
    PathBuf::from(format!(
        "/proc/{}/ns/net",
        rustix::process::Pid::as_raw(Some(peer.pid))
    ))
}

/// Pushes the layout to the local registry from containerd's network namespace, digests kept.
fn push(layout: &Path, netns: &Path, tag: &str) {
    run(Command::new("nsenter")
        .arg(format!("--net={}", netns.display()))
        .args([
            "--",
            "skopeo",
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            "--preserve-digests",
        ])
        .arg(format!("oci:{}:workload", layout.display()))
        .arg(format!("docker://{REGISTRY}/{REPOSITORY}:{tag}")));
}

/// The cgroups of run `run_id` the node still holds, in any hierarchy (the top-level cgroup
/// parents its cases asked for are named after their namespaces).
fn cgroups_of(run_id: &str) -> Vec<PathBuf> {
    let prefix = cri_harness::world::namespace_prefix(run_id);
    let root = Path::new("/sys/fs/cgroup");
    let mut hierarchies = vec![root.to_owned()];
    hierarchies.extend(
        std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_dir()),
    );
    hierarchies
        .iter()
        .filter_map(|hierarchy| std::fs::read_dir(hierarchy).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path())
        .collect()
}

/// The DaemonSet's pod template as a Pod on this machine: the test's socket, image, host
/// directories (each at the same path inside, as the manifest has it) and a fixed node name
/// for the Downward API field `pod apply` cannot resolve.
fn pod_from_daemonset(name: &str, image: &str, socket: &Path, scratch: &Path) -> Pod {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/daemonset.yaml"),
    )
    .unwrap();
    let daemonset: DaemonSet = serde_saphyr::from_str(&text).unwrap();
    let template = daemonset.spec.unwrap().template;
    let mut spec: PodSpec = template.spec.unwrap();
    let host_paths = [
        ("/run/containerd/containerd.sock", socket.to_owned()),
        ("/var/lib/cri-harness/work", scratch.join("work")),
        ("/var/lib/cri-harness/reports", scratch.join("reports")),
    ];
    let moved = |path: &str| {
        host_paths
            .iter()
            .find(|(from, _)| *from == path)
            .map(|(_, to)| to.to_string_lossy().into_owned())
    };
    for volume in spec.volumes.iter_mut().flatten() {
        if let Some(host) = volume.host_path.as_mut() {
            if let Some(to) = moved(&host.path) {
                host.path = to;
            }
        }
    }
    let container = &mut spec.containers[0];
    container.image = Some(image.to_owned());
    for mount in container.volume_mounts.iter_mut().flatten() {
        if let Some(to) = moved(&mount.mount_path) {
            mount.mount_path = to;
        }
    }
    for arg in container.args.iter_mut().flatten() {
        for (from, to) in &host_paths {
            *arg = arg.replace(from, &to.to_string_lossy());
        }
    }
    for var in container.env.iter_mut().flatten() {
        match var.name.as_str() {
            "CONTAINER_RUNTIME_ENDPOINT" => {
                var.value = Some(format!("unix://{}", socket.display()));
            }
            "NODE_NAME" => {
                *var = EnvVar {
                    name: var.name.clone(),
                    value: Some(format!("workload-node-{name}")),
                    value_from: None,
                };
            }
            _ => {}
        }
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("cri-harness-{name}")),
            namespace: Some(NAMESPACE.to_owned()),
            labels: template.metadata.and_then(|m| m.labels),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Makes `dir` a shared mount of its own, as a systemd host's `/` is: a runtime grants a
/// Bidirectional mount (the manifest's work directory) only from a shared one.
fn share(dir: &Path) {
    use rustix::mount::{mount_bind, mount_change, MountPropagationFlags};
    std::fs::create_dir_all(dir).unwrap();
    mount_bind(dir, dir).unwrap_or_else(|err| panic!("bind {}: {err}", dir.display()));
    mount_change(dir, MountPropagationFlags::SHARED)
        .unwrap_or_else(|err| panic!("make {} shared: {err}", dir.display()));
}

fn unshare(dir: &Path) {
    use rustix::mount::{unmount, UnmountFlags};
    unmount(dir, UnmountFlags::DETACH)
        .unwrap_or_else(|err| panic!("unmount {}: {err}", dir.display()));
}

/// Deletes the pod and undoes the shared mount if the test ends before it does so itself
/// (a failed apply, a report that never came), so a failure leaves nothing running.
struct Leftovers {
    delete: Option<Command>,
    work: PathBuf,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if let Some(mut delete) = self.delete.take() {
            let _ = delete.output();
            let _ = rustix::mount::unmount(&self.work, rustix::mount::UnmountFlags::DETACH);
        }
    }
}

/// Waits for the run's results.json (written once, after the run) and answers it.
fn await_report(path: &Path) -> Value {
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            // The writer may be half-way through; a document that parses is the whole one.
            if let Ok(report) = serde_json::from_str::<Value>(&text) {
                return report;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no report at {} after {RUN_LIMIT:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The one container log file under a pod log root (`<pod dir>/<container>/<n>.log`).
fn container_log(pods: &Path) -> PathBuf {
    let mut found = Vec::new();
    for pod in std::fs::read_dir(pods).unwrap() {
        for container in std::fs::read_dir(pod.unwrap().path()).unwrap() {
            let container = container.unwrap().path();
            if container.is_dir() {
                for log in std::fs::read_dir(&container).unwrap() {
                    found.push(log.unwrap().path());
                }
            }
        }
    }
    assert_eq!(found.len(), 1, "one container log: {found:?}");
    found.remove(0)
}

fn outcomes(report: &Value, outcome: &str) -> Vec<String> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|case| case["outcome"] == outcome)
        .map(|case| format!("{}/{}", case["suite"], case["case"]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn the_image_runs_the_suites_as_a_daemonset_pod_on_containerd_twice() {
    let endpoint = support::need::runtime();
    let started = Instant::now();
    let parsed: Endpoint = endpoint.parse().expect("a valid endpoint");
    let socket = PathBuf::from(endpoint.strip_prefix("unix://").expect("a unix endpoint"));
    let binary = std::env::var_os("CRIH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_cri-harness")),
        PathBuf::from,
    );
    let scratch = tempfile::tempdir().unwrap();

    // Reproducible: two builds, one digest.
    let first = build_image(&binary, &scratch.path().join("oci-1"));
    let second = build_image(&binary, &scratch.path().join("oci-2"));
    assert_eq!(first, second, "two builds of one binary differ");
    let size: u64 = std::fs::read_dir(scratch.path().join("oci-1/blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    note(format_args!(
        "harness image {first}: {:.1} MiB, from {}",
        size as f64 / 1_048_576.0,
        binary.display()
    ));

    // Tagged by digest, so a pull never finds an older image under the same name.
    let tag = format!("w-{}", &first["sha256:".len()..][..12]);
    push(&scratch.path().join("oci-1"), &server_netns(&socket), &tag);
    let image = format!("localhost/{REPOSITORY}:{tag}");
    let built_at = started.elapsed();

    let client = cri::connect(&parsed, &parsed, &ConnectOptions::default())
        .await
        .unwrap();
    let mut reports = Vec::new();
    for name in ["one", "two"] {
        let run_started = Instant::now();
        let dir = scratch.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        share(&dir.join("work"));
        let pod = pod_from_daemonset(name, &image, &socket, &dir);
        let manifest = dir.join("pod.json");
        std::fs::write(&manifest, serde_json::to_vec_pretty(&pod).unwrap()).unwrap();
        let pod_cli = |verb: &str| {
            let mut command = support::harness();
            command
                .args(["pod", verb, "-f"])
                .arg(&manifest)
                .args(["-r", &endpoint, "--root"])
                .arg(dir.join("root"));
            if verb == "apply" {
                command.args(["--wait", "2m"]);
            }
            command
        };
        let mut leftovers = Leftovers {
            delete: Some(pod_cli("delete")),
            work: dir.join("work"),
        };
        run(&mut pod_cli("apply"));
        let results = dir.join("reports/results.json");
        let report = await_report(&results);
        let run_time = run_started.elapsed();

        // The second pod's report is taken from its log, as a collector reading pod logs would.
        let log = scratch.path().join(format!("pod-{name}.log"));
        std::fs::copy(container_log(&dir.join("root/pods")), &log).unwrap();
        leftovers.delete = None;
        run(&mut pod_cli("delete"));
        unshare(&dir.join("work"));
        let left = support::labelled_by(&client, "io.kubernetes.pod.namespace", NAMESPACE).await;
        assert!(left.is_empty(), "pod {name} left {left:?}");
        let run_id = report["run_id"].as_str().unwrap();
        let inner = support::labelled(&client, run_id).await;
        assert!(inner.is_empty(), "the run in pod {name} left {inner:?}");
        let cgroups = cgroups_of(run_id);
        assert!(
            cgroups.is_empty(),
            "the run in pod {name} left the cgroup parents of its cases: {cgroups:?}"
        );

        let failed: Vec<&Value> = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            // The pod applies the findings the image ships (`--known=/findings`): a listed
            // failure is `known`; a failure or an error of any other case is not allowed.
            .filter(|case| case["outcome"] == "failed" || case["outcome"] == "error")
            .collect();
        let passed = outcomes(&report, "passed");
        let known = outcomes(&report, "known");
        assert!(
            known.len() <= 4,
            "pod {name}: more known findings than findings/ lists for one runtime: {known:?}"
        );
        assert!(failed.is_empty(), "pod {name}: failed {failed:#?}");
        assert!(
            report["aborted"].is_null(),
            "pod {name}: {}",
            report["aborted"]
        );
        assert_eq!(report["interrupted"], false, "pod {name}");
        assert_eq!(report["errors"], Value::Array(vec![]), "pod {name}");
        assert_ne!(report["target_kind"], "mock", "pod {name} ran on the mock");
        assert!(!passed.is_empty(), "pod {name} passed nothing");
        note(format_args!(
            "pod {name}: run {run_id}, {} passed, {} known, {} skipped, 0 failed; apply to report {:.1} s (run {:.1} s)",
            passed.len(),
            known.len(),
            outcomes(&report, "skipped").len(),
            run_time.as_secs_f64(),
            report["duration"].as_f64().unwrap_or_default()
        ));
        if name == "one" {
            reports.push(results);
        } else {
            reports.push(log);
        }
    }

    let out = scratch.path().join("merged");
    run(support::harness()
        .args(["report", "merge"])
        .args(&reports)
        .arg("--out")
        .arg(&out));
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("merged.json")).unwrap()).unwrap();
    let nodes: Vec<&str> = merged["nodes"]
        .as_array()
        .expect("merged.json lists nodes")
        .iter()
        .filter_map(|node| node["name"].as_str())
        .collect();
    assert_eq!(
        nodes,
        ["workload-node-one", "workload-node-two"],
        "{merged:#}"
    );
    for file in ["junit.xml", "index.html"] {
        assert!(out.join(file).is_file(), "merge wrote no {file}");
    }
    let _ = client.remove_image(&image).await;
    note(format_args!(
        "workload test: image built and pushed in {:.1} s, {:.1} s in all",
        built_at.as_secs_f64(),
        started.elapsed().as_secs_f64()
    ));
}
