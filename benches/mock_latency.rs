//! Round-trip latency and throughput of the mock CRI runtime over a unix socket, as a CRI
//! client sees it: the real `cri-harness mock --listen` process serves, this process calls.
//! With `CONTAINER_RUNTIME_ENDPOINT` set, the same client also calls that runtime, interleaved
//! round by round with the mock so both see the same machine load, and every figure is printed
//! side by side with mock ÷ runtime. A trivial HTTP/2 server (this binary re-run as one, in its
//! own process, answering every call with a canned Version) shows the client's own floor, and
//! CPU time per call (client and server process, from /proc) shows where a call's time goes.
//! ListContainers against a runtime lists what it already holds, with the mock seeded alike;
//! the thousand-container figure is the mock's alone. Run with `cargo bench --bench mock_latency`.

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::control::SeedContainerRequest;
use cri_harness::cri::v1::runtime_service_client::RuntimeServiceClient;
use cri_harness::cri::{self, v1, ConnectOptions, Endpoint, MAX_MESSAGE_SIZE};
use tonic::transport::Channel;

const WARMUP_CALLS: usize = 2_000;
/// Rounds each interleaved figure is split into, alternating which target goes first.
const ROUNDS: usize = 10;
const VERSION_CALLS_PER_ROUND: usize = 2_000;
const LIST_CALLS_PER_ROUND: usize = 200;
const SEEDED_CONTAINERS: usize = 1_000;
const CONCURRENT_CLIENTS: usize = 2;
const THROUGHPUT_ROUNDS: usize = 10;
const THROUGHPUT_WINDOW: Duration = Duration::from_millis(300);
/// The argument that makes this binary the trivial HTTP/2 server instead of the benchmark.
const FLOOR_SERVER_ARG: &str = "--floor-server";
/// Worker threads of the floor server, as many as the mock's socket server has.
const FLOOR_SERVER_THREADS: usize = 2;
/// The line a server child prints once it listens.
const FLOOR_READY: &str = "floor server listening";

/// A server child process; killed when dropped, even if the benchmark fails.
struct ServerProcess(Child);

impl ServerProcess {
    /// Starts `command` and waits for a first line starting with `ready`.
    fn start(mut command: Command, ready: &str) -> anyhow::Result<Self> {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {command:?}"))?;
        let stdout = child.stdout.take().context("no stdout from the server")?;
        let process = Self(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("cannot read the server's first line")?;
        anyhow::ensure!(
            line.starts_with(ready),
            "unexpected first line from {command:?}: {line:?}"
        );
        Ok(process)
    }

    /// `cri-harness mock --listen path`.
    fn mock(path: &Path) -> anyhow::Result<Self> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cri-harness"));
        command.arg("mock").arg("--listen").arg(path);
        Self::start(command, "mock CRI runtime listening on")
    }

    /// This binary as the trivial HTTP/2 server on `path`.
    fn floor(path: &Path) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("cannot find the benchmark's own binary")?;
        let mut command = Command::new(exe);
        command.arg(FLOOR_SERVER_ARG).arg(path);
        Self::start(command, FLOOR_READY)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // The socket lives in a temporary directory that goes too; no clean exit needed.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the client calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Mock,
    Runtime,
    Floor,
}

/// The endpoints, one per side (the runtime only when `CONTAINER_RUNTIME_ENDPOINT` is set).
struct Targets {
    mock: Endpoint,
    runtime: Option<Endpoint>,
    floor: Endpoint,
}

impl Targets {
    fn endpoint(&self, side: Side) -> Option<&Endpoint> {
        match side {
            Side::Mock => Some(&self.mock),
            Side::Runtime => self.runtime.as_ref(),
            Side::Floor => Some(&self.floor),
        }
    }
}

/// A fresh connection (its own HTTP/2 connection), dialled as the harness dials a runtime.
async fn connect(endpoint: &Endpoint) -> anyhow::Result<RuntimeServiceClient<Channel>> {
    let channel = cri::channel(endpoint, &ConnectOptions::default())
        .await
        .with_context(|| format!("cannot connect to {endpoint}"))?;
    Ok(runtime_client(channel))
}

fn runtime_client(channel: Channel) -> RuntimeServiceClient<Channel> {
    RuntimeServiceClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_SIZE)
        .max_encoding_message_size(MAX_MESSAGE_SIZE)
}

/// The call a latency figure times.
#[derive(Debug, Clone, Copy)]
enum Call {
    Version,
    /// Unfiltered.
    ListContainers,
}

/// Per-call round-trip times of `calls` sequential calls, appended to `times`.
async fn sample(
    client: &mut RuntimeServiceClient<Channel>,
    call: Call,
    calls: usize,
    times: &mut Vec<Duration>,
) -> anyhow::Result<()> {
    for _ in 0..calls {
        let start = Instant::now();
        match call {
            Call::Version => client
                .version(v1::VersionRequest::default())
                .await
                .map(drop),
            Call::ListContainers => client
                .list_containers(v1::ListContainersRequest::default())
                .await
                .map(drop),
        }
        .with_context(|| format!("{call:?} failed during the benchmark"))?;
        times.push(start.elapsed());
    }
    Ok(())
}

/// The sides in the order round `round` visits them: alternating, so neither always goes
/// first into a machine the other just warmed (or loaded).
fn order(sides: &[Side], round: usize) -> Vec<Side> {
    let mut sides = sides.to_vec();
    if round % 2 == 1 {
        sides.reverse();
    }
    sides
}

/// Sequential round trips of `call` per side after `warmup` each, `per_round` calls a round,
/// interleaved by round; sorted samples per side.
async fn latency(
    clients: &mut [(Side, RuntimeServiceClient<Channel>)],
    call: Call,
    warmup: usize,
    per_round: usize,
) -> anyhow::Result<Vec<(Side, Vec<Duration>)>> {
    let sides: Vec<Side> = clients.iter().map(|(side, _)| *side).collect();
    let mut samples: Vec<(Side, Vec<Duration>)> =
        sides.iter().map(|side| (*side, Vec::new())).collect();
    for (_, client) in clients.iter_mut() {
        sample(client, call, warmup, &mut Vec::new()).await?;
    }
    for round in 0..ROUNDS {
        for side in order(&sides, round) {
            let index = sides.iter().position(|s| *s == side).unwrap_or_default();
            let client = &mut clients[index].1;
            sample(client, call, per_round, &mut samples[index].1).await?;
        }
    }
    for (_, times) in &mut samples {
        times.sort_unstable();
    }
    Ok(samples)
}

/// CPU time a process has used so far: the sum of its threads' on-CPU nanoseconds from
/// `/proc/<pid>/task/*/schedstat` (None where that cannot be read, e.g. not Linux).
fn cpu_time(pid: u32) -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// The pid of the process serving a unix socket endpoint, from the socket's peer credentials.
async fn server_pid(endpoint: &Endpoint) -> Option<u32> {
    let Endpoint::Unix(path) = endpoint else {
        return None;
    };
    let stream = tokio::net::UnixStream::connect(path).await.ok()?;
    let pid = stream.peer_cred().ok()?.pid()?;
    u32::try_from(pid).ok()
}

/// What one side's throughput windows added up to.
#[derive(Debug, Default, Clone, Copy)]
struct Load {
    calls: u64,
    elapsed: Duration,
    client_cpu: Option<Duration>,
    server_cpu: Option<Duration>,
}

impl Load {
    fn rate(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }

    fn per_call(&self, cpu: Option<Duration>) -> Option<Duration> {
        let calls = u32::try_from(self.calls).ok().filter(|c| *c > 0)?;
        Some(cpu? / calls)
    }
}

/// Version calls answered for `CONCURRENT_CLIENTS` clients (one connection each) calling in
/// a loop for `THROUGHPUT_WINDOW`; answers the count and the elapsed time.
async fn throughput_window(endpoint: &Endpoint) -> anyhow::Result<(u64, Duration)> {
    let mut clients = Vec::new();
    for _ in 0..CONCURRENT_CLIENTS {
        clients.push(connect(endpoint).await?);
    }
    // One call each first, so connecting is not part of the window.
    for client in &mut clients {
        client.version(v1::VersionRequest::default()).await?;
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

/// Version calls from `CONCURRENT_CLIENTS` clients per side, windows interleaved, with the
/// CPU time the client (this process) and the server process spent on them.
async fn throughput(targets: &Targets, sides: &[Side]) -> anyhow::Result<Vec<(Side, Load)>> {
    let start = Load {
        client_cpu: Some(Duration::ZERO),
        server_cpu: Some(Duration::ZERO),
        ..Load::default()
    };
    let mut loads: Vec<(Side, Load)> = sides.iter().map(|s| (*s, start)).collect();
    for round in 0..THROUGHPUT_ROUNDS {
        for side in order(sides, round) {
            let Some(endpoint) = targets.endpoint(side) else {
                continue;
            };
            let server = server_pid(endpoint).await;
            let before = (cpu_time(std::process::id()), server.and_then(cpu_time));
            let (calls, elapsed) = throughput_window(endpoint).await?;
            let after = (cpu_time(std::process::id()), server.and_then(cpu_time));
            let spent = |before: Option<Duration>, after: Option<Duration>| {
                after.zip(before).map(|(a, b)| a.saturating_sub(b))
            };
            if let Some((_, load)) = loads.iter_mut().find(|(s, _)| *s == side) {
                load.calls += calls;
                load.elapsed += elapsed;
                let add = |sum: Option<Duration>, part: Option<Duration>| {
                    sum.zip(part).map(|(s, p)| s + p)
                };
                load.client_cpu = add(load.client_cpu, spent(before.0, after.0));
                load.server_cpu = add(load.server_cpu, spent(before.1, after.1));
            }
        }
    }
    Ok(loads)
}

/// Seeds `count` containers shaped like the kubelet's (three labels, an image), spread over 50
/// pods, numbered on from `first`.
async fn seed_containers(
    control: &mut MockControlClient<Channel>,
    first: usize,
    count: usize,
) -> anyhow::Result<()> {
    for n in first..first + count {
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

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// One printed figure: its value per side (None where the side does not take part).
struct Figure {
    name: String,
    mock: String,
    runtime: Option<String>,
    floor: Option<String>,
    /// mock ÷ runtime.
    ratio: Option<f64>,
}

fn latency_figures(name: &str, samples: &[(Side, Vec<Duration>)]) -> Vec<Figure> {
    let of = |side: Side| samples.iter().find(|(s, _)| *s == side).map(|(_, t)| t);
    let mut figures = Vec::new();
    for (label, p) in [("p50", 50), ("p99", 99)] {
        let value = |side: Side| of(side).map(|times| percentile(times, p));
        let (mock, runtime) = (value(Side::Mock), value(Side::Runtime));
        figures.push(Figure {
            name: format!("{name} {label}"),
            mock: mock.map(micros).unwrap_or_default(),
            runtime: runtime.map(micros),
            floor: value(Side::Floor).map(micros),
            ratio: mock
                .zip(runtime)
                .map(|(m, r)| m.as_secs_f64() / r.as_secs_f64()),
        });
    }
    figures
}

/// p50 and p99 of unfiltered ListContainers per side.
async fn list_figures(
    name: &str,
    clients: &mut [(Side, RuntimeServiceClient<Channel>)],
) -> anyhow::Result<Vec<Figure>> {
    let per_round = LIST_CALLS_PER_ROUND;
    let samples = latency(clients, Call::ListContainers, per_round, per_round).await?;
    Ok(latency_figures(name, &samples))
}

fn print_table(figures: &[Figure], with_runtime: bool) {
    let dash = |width: usize| "-".repeat(width);
    if with_runtime {
        println!(
            "| {:<52} | {:>12} | {:>12} | {:>14} | {:>12} |",
            "figure", "mock", "runtime", "mock ÷ runtime", "h2 floor"
        );
        println!(
            "|{}|{}|{}|{}|{}|",
            dash(54),
            dash(14),
            dash(14),
            dash(16),
            dash(14)
        );
    } else {
        println!("| {:<52} | {:>12} | {:>12} |", "figure", "mock", "h2 floor");
        println!("|{}|{}|{}|", dash(54), dash(14), dash(14));
    }
    for figure in figures {
        let floor = figure.floor.clone().unwrap_or_else(|| "-".to_owned());
        if with_runtime {
            println!(
                "| {:<52} | {:>12} | {:>12} | {:>14} | {:>12} |",
                figure.name,
                figure.mock,
                figure.runtime.clone().unwrap_or_else(|| "-".to_owned()),
                figure
                    .ratio
                    .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}×")),
                floor
            );
        } else {
            println!(
                "| {:<52} | {:>12} | {:>12} |",
                figure.name, figure.mock, floor
            );
        }
    }
}

fn runtime_from_env() -> anyhow::Result<Option<Endpoint>> {
    match std::env::var("CONTAINER_RUNTIME_ENDPOINT") {
        Ok(text) if !text.trim().is_empty() => {
            let endpoint = text
                .trim()
                .parse::<Endpoint>()
                .with_context(|| format!("CONTAINER_RUNTIME_ENDPOINT={text:?}"))?;
            Ok(Some(endpoint))
        }
        _ => Ok(None),
    }
}

async fn bench() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let mock_path: PathBuf = dir.path().join("mock.sock");
    let floor_path: PathBuf = dir.path().join("floor.sock");
    let _mock = ServerProcess::mock(&mock_path)?;
    let _floor = ServerProcess::floor(&floor_path)?;
    let targets = Targets {
        mock: Endpoint::Unix(mock_path),
        runtime: runtime_from_env()?,
        floor: Endpoint::Unix(floor_path),
    };
    let with_runtime = targets.runtime.is_some();
    let mut sides = vec![Side::Mock];
    if with_runtime {
        sides.push(Side::Runtime);
    }
    sides.push(Side::Floor);

    let mut clients = Vec::new();
    for side in &sides {
        if let Some(endpoint) = targets.endpoint(*side) {
            clients.push((*side, connect(endpoint).await?));
        }
    }
    let mut figures = latency_figures(
        "Version",
        &latency(
            &mut clients,
            Call::Version,
            WARMUP_CALLS,
            VERSION_CALLS_PER_ROUND,
        )
        .await?,
    );

    let loads = throughput(&targets, &sides).await?;
    let load = |side: Side| loads.iter().find(|(s, _)| *s == side).map(|(_, l)| *l);
    let rate = |side: Side| load(side).map(|l| l.rate());
    let (mock_rate, runtime_rate) = (rate(Side::Mock), rate(Side::Runtime));
    figures.push(Figure {
        name: format!("Version calls/s, {CONCURRENT_CLIENTS} clients"),
        mock: mock_rate.map(|r| format!("{r:.0}")).unwrap_or_default(),
        runtime: runtime_rate.map(|r| format!("{r:.0}")),
        floor: rate(Side::Floor).map(|r| format!("{r:.0}")),
        ratio: mock_rate.zip(runtime_rate).map(|(m, r)| m / r),
    });
    // Where a call's time goes: CPU per call in the client (one thread) and in the server.
    for (name, pick) in [
        ("client CPU per call, at that rate", true),
        ("server CPU per call, at that rate", false),
    ] {
        let cpu = |side: Side| {
            load(side).and_then(|l| l.per_call(if pick { l.client_cpu } else { l.server_cpu }))
        };
        let (mock, runtime) = (cpu(Side::Mock), cpu(Side::Runtime));
        figures.push(Figure {
            name: name.to_owned(),
            mock: mock.map(micros).unwrap_or_else(|| "-".to_owned()),
            runtime: runtime.map(micros),
            floor: cpu(Side::Floor).map(micros),
            ratio: mock
                .zip(runtime)
                .map(|(m, r)| m.as_secs_f64() / r.as_secs_f64()),
        });
    }

    // ListContainers against the runtime lists what it holds (creating a thousand real
    // containers is not this benchmark's business): the mock is seeded with as many for the
    // side-by-side figure, then up to a thousand for a mock-only one.
    let mock_channel = cri::channel(&targets.mock, &ConnectOptions::default()).await?;
    let mut control = MockControlClient::new(mock_channel);
    let mut list_clients: Vec<(Side, RuntimeServiceClient<Channel>)> = Vec::new();
    for (side, client) in &clients {
        if *side != Side::Floor {
            list_clients.push((*side, client.clone()));
        }
    }
    let mut seeded = 0;
    if let Some((_, runtime)) = list_clients.iter_mut().find(|(s, _)| *s == Side::Runtime) {
        let held = runtime
            .list_containers(v1::ListContainersRequest::default())
            .await?
            .into_inner()
            .containers
            .len();
        seed_containers(&mut control, 0, held).await?;
        seeded = held;
        let name = format!("ListContainers ({held} containers, as the runtime)");
        figures.extend(list_figures(&name, &mut list_clients).await?);
    }
    seed_containers(
        &mut control,
        seeded,
        SEEDED_CONTAINERS - seeded.min(SEEDED_CONTAINERS),
    )
    .await?;
    list_clients.retain(|(side, _)| *side == Side::Mock);
    let name = format!("ListContainers ({SEEDED_CONTAINERS} containers, mock only)");
    figures.extend(list_figures(&name, &mut list_clients).await?);

    println!();
    match &targets.runtime {
        Some(runtime) => println!(
            "mock CRI runtime (`cri-harness mock`) and {runtime}, one tonic client in another \
             process, calls interleaved in {ROUNDS} rounds; lower is better except calls/s"
        ),
        None => println!(
            "mock CRI runtime (`cri-harness mock`), one tonic client in another process \
             (set CONTAINER_RUNTIME_ENDPOINT to compare with a runtime)"
        ),
    }
    println!(
        "h2 floor: the same client against a bare h2 server answering a canned Version \
         (no tonic server, no mock)"
    );
    println!();
    print_table(&figures, with_runtime);
    Ok(())
}

/// The trivial HTTP/2 server: every stream gets a canned VersionResponse, nothing else.
mod floor {
    use bytes::Bytes;
    use prost::Message as _;
    use tokio::net::UnixListener;

    use super::v1;

    /// A gRPC frame (uncompressed flag, big-endian length, message) of the mock's Version.
    fn canned_version() -> Bytes {
        let message = v1::VersionResponse {
            version: "0.1.0".into(),
            runtime_name: "floor".into(),
            runtime_version: "0".into(),
            runtime_api_version: "v1".into(),
        }
        .encode_to_vec();
        let mut frame = vec![0u8];
        frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
        frame.extend_from_slice(&message);
        Bytes::from(frame)
    }

    async fn answer(
        request: http::Request<h2::RecvStream>,
        mut respond: h2::server::SendResponse<Bytes>,
        body: Bytes,
    ) -> Result<(), h2::Error> {
        let mut incoming = request.into_body();
        while let Some(chunk) = incoming.data().await {
            let chunk = chunk?;
            let _ = incoming.flow_control().release_capacity(chunk.len());
        }
        let response = http::Response::builder()
            .status(200)
            .header("content-type", "application/grpc")
            .body(())
            .unwrap_or_default();
        let mut send = respond.send_response(response, false)?;
        send.send_data(body, false)?;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        send.send_trailers(trailers)
    }

    async fn connection(stream: tokio::net::UnixStream, body: Bytes) -> Result<(), h2::Error> {
        let mut connection = h2::server::handshake(stream).await?;
        while let Some(accepted) = connection.accept().await {
            let (request, respond) = accepted?;
            tokio::spawn(answer(request, respond, body.clone()));
        }
        Ok(())
    }

    /// Serves on `path` until killed.
    pub(super) async fn serve(path: &std::path::Path) -> anyhow::Result<()> {
        let listener = UnixListener::bind(path)?;
        println!("{}", super::FLOOR_READY);
        std::io::Write::flush(&mut std::io::stdout())?;
        let body = canned_version();
        loop {
            let (stream, _) = listener.accept().await?;
            tokio::spawn(connection(stream, body.clone()));
        }
    }
}

// The clients share one thread, so the figures are about the servers and the socket rather
// than about this process's thread pool waking its own workers; the two throughput clients
// still have their calls in flight at the same time.
fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; the only option of ours makes this the floor server.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|arg| arg == FLOOR_SERVER_ARG) {
        let path = PathBuf::from(args.next().context("--floor-server needs a socket path")?);
        // Shaped like the mock's server runtime, so the two differ only in what serves.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(FLOOR_SERVER_THREADS)
            .enable_all()
            .build()
            .context("cannot build the floor server's runtime")?;
        return runtime.block_on(floor::serve(&path));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot build the benchmark's runtime")?;
    runtime.block_on(bench())?;
    std::io::stdout().flush()?;
    Ok(())
}
