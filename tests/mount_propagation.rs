//! A run interrupted while its mount-propagation cases hold host mounts leaves none behind,
//! on the real runtime (when `CONTAINER_RUNTIME_ENDPOINT` is set, and as root, who may
//! mount): SIGINT while two cases wait with a shared source bind-mounted under their host
//! directories, a tmpfs the host mounted there and one a container mounted that propagated
//! back, exits 130 with no mount under the run's work directory in `/proc/self/mountinfo` and
//! the run's directory gone. And `clean --run-id` unmounts and removes what a killed run left
//! in its directory. Under `CI=true` each test fails without those; elsewhere they are
//! ignored unless asked for (`--ignored`).

use std::io::Read as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod support;

use cri_harness::host::mounts as host;
use rustix::mount::{mount, mount_bind, mount_change, MountFlags, MountPropagationFlags};
use rustix::process::{kill_process, Pid, Signal};
use support::harness;

/// Two cases that make every kind of host mount the propagation suite makes, then wait long
/// past any test's patience, so the interrupt finds them holding their mounts.
const WAITING_SUITE: &str = r#"suite: waiting-propagation
about: Propagation mounts held while the run is interrupted.
tags: [waiting]
cases:
  - name: bidirectional-waits
    needs: [process]
    steps:
      - host_mount: {path: src, propagation: shared}
      - run_sandbox: {as: sb, pod: web, security: {privileged: true}}
      - create_container:
          as: app
          sandbox: sb
          security: {privileged: true}
          mounts: [{host_path: src, container_path: /mnt/src, propagation: bidirectional}]
      - start_container: app
      - host_mount: {path: src/late, kind: tmpfs, file: flag, content: "x"}
      - exec_sync:
          container: app
          command: [sh, -c, "mkdir /mnt/src/inner && mount -t tmpfs tmpfs /mnt/src/inner"]
      - check_host_mount: {path: src/inner, expect: {fs_type: tmpfs}}
      - sleep_ms: 600000
      - check_host_mount: {path: src/inner}
  - name: slave-source-waits
    steps:
      - host_mount: {path: src, propagation: slave}
      - host_mount: {path: src/late, kind: tmpfs}
      - check_host_mount: {path: src/late, expect: {fs_type: tmpfs}}
      - sleep_ms: 600000
      - check_host_mount: {path: src/late}
"#;

/// The mounts at or under `dir`, by path.
fn mounts_under(dir: &Path) -> Vec<String> {
    let table = host::mount_table().unwrap();
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    host::mounts_under(&table, &dir)
        .iter()
        .map(|m| m.mount_point.display().to_string())
        .collect()
}

/// The runtime endpoint; a failure without one, or when not root (the tests mount).
fn endpoint_and_root() -> String {
    let endpoint = support::need::runtime();
    support::need::root("the test mounts and unmounts on the host");
    endpoint
}

#[test]
#[cfg_attr(not(crih_ci), ignore = "needs a real CRI runtime and root")]
fn clean_unmounts_and_removes_the_host_directory_a_killed_run_left() {
    let endpoint = endpoint_and_root();
    let work = tempfile::tempdir().unwrap();
    let run_id = format!("mountsk{}", std::process::id());
    let src = work.path().join(&run_id).join("case-1").join("src");
    std::fs::create_dir_all(src.join("late")).unwrap();
    mount_bind(&src, &src).unwrap();
    mount_change(&src, MountPropagationFlags::SHARED).unwrap();
    mount(
        "tmpfs",
        src.join("late"),
        "tmpfs",
        MountFlags::empty(),
        None,
    )
    .unwrap();
    assert_eq!(mounts_under(work.path()).len(), 2);

    let output = harness()
        .args(["clean", "-r", &endpoint, "--run-id", &run_id])
        .arg("--work-dir")
        .arg(work.path())
        .env("CRI_HARNESS_LEASE_DIR", work.path().join("leases"))
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert!(text.contains("removed the host directory"), "{text}");
    assert_eq!(mounts_under(work.path()), Vec::<String>::new(), "{text}");
    assert!(!work.path().join(&run_id).exists(), "{text}");
}

#[test]
#[cfg_attr(not(crih_ci), ignore = "needs a real CRI runtime and root")]
fn sigint_while_propagation_cases_hold_mounts_leaves_no_mount_behind() {
    let endpoint = endpoint_and_root();
    let work = tempfile::tempdir().unwrap();
    let suites = work.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::write(suites.join("waiting-propagation.yaml"), WAITING_SUITE).unwrap();
    let run_id = format!("mounts{}", std::process::id());
    let mut child = harness()
        .args([
            "run",
            "-r",
            &endpoint,
            "--parallel",
            "2",
            "--tags",
            "waiting",
        ])
        .args(["--run-id", &run_id, "--case-timeout", "15m"])
        .arg("--suites")
        .arg(&suites)
        .arg("--work-dir")
        .arg(work.path())
        .env("CRI_HARNESS_LEASE_DIR", work.path().join("leases"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Interrupt once both cases hold their mounts: the container's tmpfs is on the host, and
    // the slave source has its tmpfs.
    let run_dir = work.path().join(&run_id);
    let started = Instant::now();
    let held = loop {
        let held = mounts_under(&run_dir);
        let ready = held.iter().any(|m| m.ends_with("src/inner"))
            && held.iter().filter(|m| m.ends_with("src/late")).count() >= 2;
        if ready {
            break held;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            let _ = child.stdout.take().unwrap().read_to_string(&mut out);
            let _ = child.stderr.take().unwrap().read_to_string(&mut out);
            panic!("the run ended ({status}) before its cases held their mounts: {out}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the cases did not make their mounts; under the run: {held:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    assert_eq!(output.status.code(), Some(130), "{text}");
    assert!(text.contains("interrupted"), "{text}");
    assert_eq!(
        mounts_under(work.path()),
        Vec::<String>::new(),
        "held before the interrupt: {held:?}\n{text}"
    );
    assert!(!run_dir.exists(), "{} is left: {text}", run_dir.display());
}
