//! `cri-harness pod apply|delete -f pod.yaml`: the kubelet's pod life cycle on one runtime,
//! without a cluster. `apply` drives SyncPod round after round until the pod runs (or has run to
//! its end, or failed), printing each round's actions and results and the pod's status as the
//! kubelet sees it; `delete` kills the pod and collects its garbage. A vendor debugging a runtime
//! sees exactly which CRI step of the kubelet's life cycle goes wrong.
//!
//! The manifest is a real Pod (`kubectl get pod -o yaml` output works as is); a manifest without
//! `metadata.uid` gets one derived from its namespace and name, so `apply` and `delete` of the
//! same file agree. Pod logs and emptyDir volumes live under `--root`, which the harness owns.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};

use super::common::{parse_duration, EndpointArgs};
use crate::manager::lifecycle::{
    all_running, k8s, phase, pod, Backoff, CrashLoopConfig, GcLogDirs, Phase, PodSync,
    ProbeResults, SyncOptions, WallClock,
};
use crate::manager::{
    ContainerState, KubeGenericRuntimeManager, KubeletProfile, NoopNetworkPlugin, PodStatus,
};

/// Arguments of `cri-harness pod`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: PodCommand,
}

#[derive(Debug, clap::Subcommand)]
enum PodCommand {
    /// Drive SyncPod until the pod is running, has completed, or has failed
    Apply(ApplyArgs),
    /// Kill the pod and collect its containers, sandboxes and log directory
    Delete(CommonArgs),
}

/// What both subcommands take.
#[derive(Debug, clap::Args)]
struct CommonArgs {
    #[command(flatten)]
    endpoints: EndpointArgs,
    /// The Pod manifest (YAML or JSON)
    #[arg(short = 'f', long, value_name = "FILE")]
    filename: PathBuf,
    /// The directory the harness owns for pod logs (`ROOT/pods`) and emptyDir volumes
    /// (`ROOT/volumes`), on the runtime's host; never the kubelet's /var/log/pods
    #[arg(long, value_name = "DIR", default_value = "/var/lib/cri-harness")]
    root: PathBuf,
    /// The kubelet whose rules the manager follows where the 2016 seed and today's kubelet
    /// differ (kill and pod status on NotFound)
    #[arg(long, value_name = "KUBELET", value_enum, default_value_t = KubeletProfile::Seed)]
    kubelet: KubeletProfile,
    /// Kubelet feature gates (`NAME=BOOL,...`), as `run --feature-gates`
    #[arg(long, value_name = "NAME=BOOL,...", default_value = "")]
    feature_gates: crate::manager::FeatureGates,
}

#[derive(Debug, clap::Args)]
struct ApplyArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Give up when the pod has not settled within this time
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration)]
    wait: Duration,
    /// Pause between two syncs (the kubelet resyncs a pod every second or so)
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = parse_duration)]
    interval: Duration,
    /// The node's crash-loop cap, `crashLoopBackOff.maxContainerRestartPeriod` (1 to 300 s):
    /// today's kubelet only, under its KubeletCrashLoopBackOffMax gate
    #[arg(long, value_name = "SECONDS")]
    max_container_restart_period_seconds: Option<u64>,
}

/// Runs `cri-harness pod`.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        PodCommand::Apply(args) => apply(args).await,
        PodCommand::Delete(args) => delete(args).await,
    }
}

async fn apply(args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let (pod, manager) = open(&args.common).await?;
    let options = options(&args.common.root);
    // The chosen kubelet's crash-loop back-off: the seed's fixed 10 s to 300 s, or today's
    // under its gates and the node's cap; a cap that kubelet would refuse is refused here.
    let config = CrashLoopConfig {
        max_container_restart_period_seconds: args.max_container_restart_period_seconds,
    };
    let mut backoff = Backoff::crash_loop(
        Arc::new(WallClock),
        args.common.kubelet,
        &args.common.feature_gates,
        &config,
    )
    .context("the crash-loop back-off")?;
    let deadline = Instant::now() + args.wait;
    let mut round = 0;
    loop {
        round += 1;
        let sync = manager
            .sync_pod(&pod, &ProbeResults::default(), &options, &mut backoff)
            .await
            .with_context(|| format!("sync {round}"))?;
        print_sync(round, &pod, &sync);
        let status = read_status(&manager, &pod).await?;
        let phase = phase(&pod, &status);
        print_status(phase, &status);
        let settled = sync.actions.is_empty();
        match phase {
            Phase::Running if settled && all_running(&pod, &status) => {
                println!("pod {} is running", describe(&pod));
                return Ok(ExitCode::SUCCESS);
            }
            Phase::Succeeded if settled => {
                println!("pod {} has succeeded", describe(&pod));
                return Ok(ExitCode::SUCCESS);
            }
            Phase::Failed if settled => {
                println!("pod {} has failed", describe(&pod));
                return Ok(ExitCode::FAILURE);
            }
            _ => {}
        }
        if Instant::now() + args.interval > deadline {
            anyhow::bail!(
                "pod {} did not settle within {} (last phase {phase})",
                describe(&pod),
                humantime::format_duration(args.wait)
            );
        }
        tokio::time::sleep(args.interval).await;
    }
}

async fn delete(args: CommonArgs) -> anyhow::Result<ExitCode> {
    let (pod, manager) = open(&args).await?;
    let logs = GcLogDirs {
        pod_logs_root: args.root.join("pods"),
        container_log_symlinks: args.root.join("containers"),
    };
    let deletion = manager
        .delete_pod(&pod, &options(&args.root), &logs)
        .await?;
    match &deletion.killed {
        Some(killed) => {
            for step in &killed.results {
                println!("{}", describe_step(step));
            }
            if let Some(err) = killed.error() {
                eprintln!("kill: {err}");
            }
        }
        None => println!("pod {} has nothing on the runtime to kill", describe(&pod)),
    }
    if let Some(err) = &deletion.collect_error {
        eprintln!("garbage collection: {err}");
    }
    if let Some((dir, err)) = &deletion.volumes_error {
        eprintln!("removing {}: {err}", dir.display());
    }
    if deletion.sandboxes_left > 0 || deletion.containers_left > 0 {
        anyhow::bail!(
            "pod {} still has {} sandboxes and {} containers on the runtime",
            describe(&pod),
            deletion.sandboxes_left,
            deletion.containers_left
        );
    }
    println!("pod {} deleted", describe(&pod));
    Ok(if deletion.is_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Where `apply` keeps the pod's logs and volumes, and `delete` finds them.
fn options(root: &Path) -> SyncOptions {
    SyncOptions::new(root.join("pods"), root.join("volumes"))
}

/// Reads the manifest and connects a manager to the runtime.
async fn open(args: &CommonArgs) -> anyhow::Result<(k8s::Pod, KubeGenericRuntimeManager)> {
    let pod = read_manifest(&args.filename)?;
    let client = args.endpoints.connect().await?;
    let manager = KubeGenericRuntimeManager::new(client, Arc::new(NoopNetworkPlugin))
        .await?
        .with_profile(args.kubelet)
        .with_feature_gates(args.feature_gates.clone());
    Ok((pod, manager))
}

/// Parses a Pod manifest; a missing namespace reads as `default` (as kubectl applies it), a
/// missing uid is derived from the namespace and name, and a container's limit without a
/// request gets it as its request (as the API server defaults it).
pub fn read_manifest(path: &Path) -> anyhow::Result<k8s::Pod> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut pod: k8s::Pod = serde_saphyr::from_str(&text)
        .with_context(|| format!("{} is not a Pod manifest", path.display()))?;
    if pod.metadata.name.as_deref().unwrap_or_default().is_empty() {
        anyhow::bail!("{}: the Pod has no metadata.name", path.display());
    }
    if pod.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
        anyhow::bail!("{}: the Pod has no spec.containers", path.display());
    }
    if pod.metadata.uid.as_deref().unwrap_or_default().is_empty() {
        pod.metadata.uid = Some(derived_uid(pod::namespace(&pod), pod::name(&pod)));
    }
    // What the API server would have done before any kubelet saw it.
    pod::apply_api_defaults(&mut pod);
    Ok(pod)
}

/// A UUID-shaped uid from the pod's namespace and name, the same every time.
fn derived_uid(namespace: &str, name: &str) -> String {
    let digest = Sha256::digest(format!("{namespace}/{name}"));
    let hex = hex::encode(&digest[..16]);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

async fn read_status(
    manager: &KubeGenericRuntimeManager,
    pod: &k8s::Pod,
) -> anyhow::Result<PodStatus> {
    Ok(manager
        .get_pod_status(pod::uid(pod), pod::name(pod), pod::namespace(pod))
        .await?)
}

fn describe(pod: &k8s::Pod) -> String {
    format!("{}/{}", pod::namespace(pod), pod::name(pod))
}

fn describe_step(step: &crate::manager::SyncResult) -> String {
    match &step.error {
        None => format!("  {} {}: ok", step.action, step.target),
        Some(kind) => format!(
            "  {} {}: {kind}: {}",
            step.action, step.target, step.message
        ),
    }
}

fn print_sync(round: u32, pod: &k8s::Pod, sync: &PodSync) {
    let a = &sync.actions;
    if sync.actions.is_empty() {
        println!("sync {round}: nothing to do");
        return;
    }
    let mut wants = Vec::new();
    if a.kill_pod {
        wants.push("kill the pod".to_owned());
    }
    if a.create_sandbox {
        wants.push(format!("create a sandbox (attempt {})", a.attempt));
    }
    for (id, kill) in &a.containers_to_kill {
        let short = id.get(..12).unwrap_or(id);
        wants.push(format!("kill {} ({short}): {}", kill.name, kill.message));
    }
    let names = |indices: &[usize], list: &[k8s::Container]| -> Vec<String> {
        indices
            .iter()
            .filter_map(|&i| list.get(i).map(|c| c.name.clone()))
            .collect()
    };
    let inits = names(&a.init_containers_to_start, pod::init_containers(pod));
    if !inits.is_empty() {
        wants.push(format!("start init {}", inits.join(", ")));
    }
    let apps = names(&a.containers_to_start, pod::containers(pod));
    if !apps.is_empty() {
        wants.push(format!("start {}", apps.join(", ")));
    }
    if !a.ephemeral_containers_to_start.is_empty() {
        wants.push(format!(
            "start {} ephemeral container(s)",
            a.ephemeral_containers_to_start.len()
        ));
    }
    println!("sync {round}: {}", wants.join("; "));
    for step in &sync.result.results {
        println!("{}", describe_step(step));
    }
    if let Some(err) = &sync.result.sync_error {
        println!("  sync error: {err}");
    }
}

fn print_status(phase: Phase, status: &PodStatus) {
    println!("  phase {phase}");
    let mut seen = BTreeSet::new();
    for container in &status.container_statuses {
        if !seen.insert(container.name.as_str()) {
            continue;
        }
        let state = match container.state {
            ContainerState::Exited => format!(
                "exited {} ({})",
                container.exit_code,
                if container.reason.is_empty() {
                    "no reason"
                } else {
                    &container.reason
                }
            ),
            other => other.name().to_owned(),
        };
        println!(
            "  {}: {state}, restarts {}",
            container.name, container.restart_count
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_is_derived_from_namespace_and_name_when_the_manifest_has_none() {
        let a = derived_uid("default", "web");
        assert_eq!(a, derived_uid("default", "web"));
        assert_ne!(a, derived_uid("other", "web"));
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
    }
}
