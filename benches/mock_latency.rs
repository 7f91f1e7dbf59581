//! Round-trip latency and throughput of the mock CRI runtime over a unix socket, as a CRI
//! client sees it: the real `cri-harness mock --listen` process serves, this process calls.
//! Prints p50/p99 of Version and of ListContainers with 1,000 containers, and Version calls per
//! second from 2 concurrent clients. Run with `cargo bench --bench mock_latency`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use cri_harness::cri::v1::runtime_service_client::RuntimeServiceClient;
use cri_harness::cri::{self, v1, ConnectOptions, Endpoint, MAX_MESSAGE_SIZE};
use cri_harness::mock::control_api::mock_control_client::MockControlClient;
use cri_harness::mock::control_api::SeedContainerRequest;
use tonic::transport::Channel;

const WARMUP_CALLS: usize = 2_000;
const VERSION_CALLS: usize = 20_000;
const LIST_CALLS: usize = 2_000;
const SEEDED_CONTAINERS: usize = 1_000;
const CONCURRENT_CLIENTS: usize = 2;
const THROUGHPUT_WINDOW: Duration = Duration::from_secs(3);

/// The `cri-harness mock` child process; killed when dropped, even if the benchmark fails.
struct MockProcess(Child);

impl MockProcess {
    /// Starts the mock on `path` and waits for its "listening" line.
    fn start(path: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cri-harness"))
            .arg("mock")
            .arg("--listen")
            .arg(path)
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start `cri-harness mock`")?;
        let stdout = child
            .stdout
            .take()
            .context("no stdout from `cri-harness mock`")?;
        let process = Self(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("cannot read the mock's first line")?;
        anyhow::ensure!(
            line.starts_with("mock CRI runtime listening on"),
            "unexpected first line from `cri-harness mock`: {line:?}"
        );
        Ok(process)
    }
}

impl Drop for MockProcess {
    fn drop(&mut self) {
        // The socket lives in a temporary directory that goes too; no clean exit needed.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh connection (its own HTTP/2 connection) to the socket, dialled as the harness does.
async fn connect(path: &Path) -> anyhow::Result<Channel> {
    let endpoint = Endpoint::Unix(path.to_path_buf());
    cri::channel(&endpoint, &ConnectOptions::default())
        .await
        .context("cannot connect to the mock's socket")
}

fn runtime_client(channel: Channel) -> RuntimeServiceClient<Channel> {
    RuntimeServiceClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_SIZE)
        .max_encoding_message_size(MAX_MESSAGE_SIZE)
}

/// Per-call round-trip times of `calls` sequential calls, sorted.
async fn sample<F, Fut>(calls: usize, mut call: F) -> anyhow::Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), tonic::Status>>,
{
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        call().await.context("call failed during the benchmark")?;
        times.push(start.elapsed());
    }
    times.sort_unstable();
    Ok(times)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn row(name: &str, sorted: &[Duration]) {
    let mean = sorted.iter().sum::<Duration>() / sorted.len() as u32;
    println!(
        "| {name:<34} | {:>6} | {:>10} | {:>10} | {:>10} |",
        sorted.len(),
        micros(percentile(sorted, 50)),
        micros(percentile(sorted, 99)),
        micros(mean)
    );
}

/// Seeds containers shaped like the kubelet's (three labels, an image), spread over 50 pods.
async fn seed_containers(control: &mut MockControlClient<Channel>) -> anyhow::Result<()> {
    for n in 0..SEEDED_CONTAINERS {
        let status = v1::ContainerStatus {
            metadata: Some(v1::ContainerMetadata {
                name: format!("container-{n}"),
                attempt: 0,
            }),
            state: v1::ContainerState::ContainerRunning as i32,
            created_at: 1_700_000_000_000_000_000 + n as i64,
            image: Some(v1::ImageSpec {
                image: "docker.io/library/busybox:latest".into(),
                ..Default::default()
            }),
            image_ref: format!("sha256:{n:064x}"),
            labels: [
                (cri::labels::POD_NAME.to_owned(), format!("pod-{}", n % 50)),
                (cri::labels::POD_NAMESPACE.to_owned(), "bench".to_owned()),
                (
                    cri::labels::CONTAINER_NAME.to_owned(),
                    format!("container-{n}"),
                ),
            ]
            .into(),
            ..Default::default()
        };
        control
            .seed_container(SeedContainerRequest {
                pod_sandbox_id: format!("sandbox-{}", n % 50),
                status: Some(status),
            })
            .await
            .context("cannot seed a container")?;
    }
    Ok(())
}

/// Sequential round trips of one client: Version, then ListContainers over 1,000 containers.
async fn latency(path: &Path) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let channel = connect(path).await?;
    let client = runtime_client(channel.clone());
    let version = || {
        let mut client = client.clone();
        async move {
            client.version(v1::VersionRequest::default()).await?;
            Ok(())
        }
    };
    sample(WARMUP_CALLS, version).await?;
    let version_times = sample(VERSION_CALLS, version).await?;

    seed_containers(&mut MockControlClient::new(channel)).await?;
    let list = || {
        let mut client = client.clone();
        async move {
            client
                .list_containers(v1::ListContainersRequest::default())
                .await?;
            Ok(())
        }
    };
    sample(WARMUP_CALLS / 10, list).await?;
    let list_times = sample(LIST_CALLS, list).await?;
    Ok((version_times, list_times))
}

/// Version calls answered for `CONCURRENT_CLIENTS` clients (one connection each) calling in
/// a loop for `THROUGHPUT_WINDOW`; answers the count and the elapsed time.
async fn throughput(path: &Path) -> anyhow::Result<(u64, Duration)> {
    let mut clients = Vec::new();
    for _ in 0..CONCURRENT_CLIENTS {
        clients.push(runtime_client(connect(path).await?));
    }
    let started = Instant::now();
    let deadline = started + THROUGHPUT_WINDOW;
    let workers: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut calls = 0u64;
                while Instant::now() < deadline {
                    client.version(v1::VersionRequest::default()).await?;
                    calls += 1;
                }
                Ok::<_, tonic::Status>(calls)
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await.context("a client task panicked")??;
    }
    Ok((total, started.elapsed()))
}

// The clients share one thread, so the figures are about the mock and the socket rather than
// about this process's thread pool waking its own workers; the two throughput clients still
// have their calls in flight at the same time.
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; this binary takes no options.
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let path: PathBuf = dir.path().join("mock.sock");
    let _mock = MockProcess::start(&path)?;
    let (version_times, list_times) = latency(&path).await?;
    let (total, elapsed) = throughput(&path).await?;

    println!();
    println!(
        "mock CRI runtime (`cri-harness mock`) over a unix socket, clients in another process"
    );
    println!();
    println!(
        "| {:<34} | {:>6} | {:>10} | {:>10} | {:>10} |",
        "call", "calls", "p50", "p99", "mean"
    );
    println!(
        "|{:-<36}|{:-<8}|{:-<12}|{:-<12}|{:-<12}|",
        "", "", "", "", ""
    );
    row("Version", &version_times);
    row("ListContainers (1,000 containers)", &list_times);
    println!();
    println!(
        "Version throughput, {CONCURRENT_CLIENTS} concurrent clients over {THROUGHPUT_WINDOW:?}: \
         {total} calls, {:.0} calls/s",
        total as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}
