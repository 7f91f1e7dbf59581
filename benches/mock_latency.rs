//! Round-trip latency and throughput of the mock CRI runtime over a unix socket, as a CRI
//! client sees it: p50/p99 of Version and of ListContainers with 1,000 containers, and Version
//! calls per second from 2 concurrent clients. Run with `cargo bench --bench mock_latency`.

use std::time::{Duration, Instant};

use anyhow::Context;
use cri_harness::cri::v1::runtime_service_client::RuntimeServiceClient;
use cri_harness::cri::{self, v1, ConnectOptions, Endpoint, MAX_MESSAGE_SIZE};
use cri_harness::mock::control_api::mock_control_client::MockControlClient;
use cri_harness::mock::control_api::SeedContainerRequest;
use cri_harness::mock::MockRuntime;
use tonic::transport::Channel;

const WARMUP_CALLS: usize = 2_000;
const VERSION_CALLS: usize = 20_000;
const LIST_CALLS: usize = 2_000;
const SEEDED_CONTAINERS: usize = 1_000;
const CONCURRENT_CLIENTS: usize = 2;
const THROUGHPUT_WINDOW: Duration = Duration::from_secs(3);

/// A fresh connection (its own HTTP/2 connection) to the socket, dialled as the harness does.
async fn connect(path: &std::path::Path) -> anyhow::Result<Channel> {
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

/// Per-call round-trip times of `calls` sequential calls.
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

async fn seed_containers(control: &mut MockControlClient<Channel>) -> anyhow::Result<()> {
    for n in 0..SEEDED_CONTAINERS {
        let sandbox = format!("sandbox-{}", n % 50);
        let status = v1::ContainerStatus {
            id: String::new(),
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
            image_ref: format!("sha256:{:064x}", n),
            labels: [
                (
                    "io.kubernetes.pod.name".to_owned(),
                    format!("pod-{}", n % 50),
                ),
                ("io.kubernetes.pod.namespace".to_owned(), "bench".to_owned()),
                (
                    "io.kubernetes.container.name".to_owned(),
                    format!("container-{n}"),
                ),
            ]
            .into(),
            ..Default::default()
        };
        control
            .seed_container(SeedContainerRequest {
                pod_sandbox_id: sandbox,
                status: Some(status),
            })
            .await
            .context("cannot seed a container")?;
    }
    Ok(())
}

async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let mock = MockRuntime::new();
    let server = mock
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .context("cannot serve the mock")?;
    let channel = connect(server.path()).await?;
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

    let mut control = MockControlClient::new(channel.clone());
    seed_containers(&mut control).await?;
    let list = || {
        let mut client = client.clone();
        async move {
            let listed = client
                .list_containers(v1::ListContainersRequest::default())
                .await?;
            debug_assert_eq!(listed.get_ref().containers.len(), SEEDED_CONTAINERS);
            Ok(())
        }
    };
    sample(WARMUP_CALLS / 10, list).await?;
    let list_times = sample(LIST_CALLS, list).await?;

    let mut workers = Vec::new();
    let deadline = Instant::now() + THROUGHPUT_WINDOW;
    let started = Instant::now();
    for _ in 0..CONCURRENT_CLIENTS {
        let mut client = runtime_client(connect(server.path()).await?);
        workers.push(tokio::spawn(async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                client.version(v1::VersionRequest::default()).await?;
                calls += 1;
            }
            Ok::<_, tonic::Status>(calls)
        }));
    }
    let mut total = 0;
    for worker in workers {
        total += worker.await.context("a client task panicked")??;
    }
    let per_second = total as f64 / started.elapsed().as_secs_f64();

    println!();
    println!(
        "mock CRI runtime over a unix socket ({} worker threads, same process as the clients)",
        tokio::runtime::Handle::current().metrics().num_workers()
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
        "Version throughput, {CONCURRENT_CLIENTS} concurrent clients over {:?}: {total} calls, {per_second:.0} calls/s",
        THROUGHPUT_WINDOW
    );
    server.shutdown().await;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; this binary takes no options.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(run())
}
