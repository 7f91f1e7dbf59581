//! Connecting across the wire: each connection error a user can meet, provoked for real on unix
//! sockets (in a temp dir) and on 127.0.0.1, and checked to be one line naming the socket or
//! address. Permission denied cannot happen to root, so it is covered by the unit tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cri_harness::cri::control::mock_control_server::{MockControl, MockControlServer};
use cri_harness::cri::control::{
    AdvanceClockRequest, ControlResponse, ExitContainerRequest, GetCallLogRequest,
    GetCallLogResponse, InjectErrorRequest, InjectLatencyRequest, ResetRequest,
    SeedContainerRequest, SeedPodSandboxRequest, SeedRequest, SetClockRequest, SetVersionRequest,
};
use cri_harness::cri::{self, ConnectError, ConnectOptions, Endpoint};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::{Request, Response, Status};

/// Deadlines short enough that the timeout case finishes quickly.
fn quick() -> ConnectOptions {
    ConnectOptions {
        connect_timeout: Duration::from_millis(500),
        call_timeout: Duration::from_millis(500),
    }
}

fn socket_in(dir: &tempfile::TempDir) -> (PathBuf, Endpoint) {
    let path = dir.path().join("cri.sock");
    (path.clone(), Endpoint::Unix(path))
}

async fn connect_err(endpoint: &Endpoint) -> ConnectError {
    match cri::connect(endpoint, endpoint, &quick()).await {
        Ok(_) => panic!("connecting to {endpoint} succeeded"),
        Err(err) => err,
    }
}

/// The CLI prints errors with their causes (`{err:#}`); that line must name `what`.
fn assert_one_line_naming(err: ConnectError, what: &str) {
    let line = format!("{:#}", anyhow::Error::from(err));
    assert!(!line.contains('\n'), "{line}");
    assert!(line.contains(what), "{line:?} does not name {what}");
}

/// A gRPC service that is not CRI: the mock's control service with nothing behind it.
struct NoControl;

fn none<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented("not modelled in this test"))
}

#[tonic::async_trait]
impl MockControl for NoControl {
    async fn set_version(
        &self,
        _: Request<SetVersionRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn inject_error(
        &self,
        _: Request<InjectErrorRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn inject_latency(
        &self,
        _: Request<InjectLatencyRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn set_clock(
        &self,
        _: Request<SetClockRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn advance_clock(
        &self,
        _: Request<AdvanceClockRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn reset(&self, _: Request<ResetRequest>) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn get_call_log(
        &self,
        _: Request<GetCallLogRequest>,
    ) -> Result<Response<GetCallLogResponse>, Status> {
        none()
    }
    async fn seed_pod_sandbox(
        &self,
        _: Request<SeedPodSandboxRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn seed_container(
        &self,
        _: Request<SeedContainerRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn seed(&self, _: Request<SeedRequest>) -> Result<Response<ControlResponse>, Status> {
        none()
    }
    async fn exit_container(
        &self,
        _: Request<ExitContainerRequest>,
    ) -> Result<Response<ControlResponse>, Status> {
        none()
    }
}

fn serve_not_cri_on_unix(path: &Path) {
    let listener = tokio::net::UnixListener::bind(path).unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(MockControlServer::new(NoControl))
            .serve_with_incoming(UnixListenerStream::new(listener)),
    );
}

#[tokio::test]
async fn missing_socket_is_socket_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, endpoint) = socket_in(&dir);
    let err = connect_err(&endpoint).await;
    assert!(
        matches!(&err, ConnectError::SocketMissing { path: p } if *p == path),
        "{err:?}"
    );
    assert_one_line_naming(err, &path.display().to_string());
}

#[tokio::test]
async fn regular_file_is_not_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let (path, endpoint) = socket_in(&dir);
    std::fs::write(&path, b"not a socket").unwrap();
    let err = connect_err(&endpoint).await;
    assert!(
        matches!(&err, ConnectError::NotASocket { path: p } if *p == path),
        "{err:?}"
    );
    assert_one_line_naming(err, &path.display().to_string());
}

#[tokio::test]
async fn directory_is_not_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = Endpoint::Unix(dir.path().to_path_buf());
    let err = connect_err(&endpoint).await;
    assert!(matches!(&err, ConnectError::NotASocket { .. }), "{err:?}");
}

#[tokio::test]
async fn stale_socket_file_is_not_listening() {
    let dir = tempfile::tempdir().unwrap();
    let (path, endpoint) = socket_in(&dir);
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists(), "the socket file should outlive its listener");
    let err = connect_err(&endpoint).await;
    assert!(
        matches!(&err, ConnectError::NotListening { path: p } if *p == path),
        "{err:?}"
    );
    assert_one_line_naming(err, &path.display().to_string());
}

#[tokio::test]
async fn grpc_server_without_cri_is_not_cri() {
    let dir = tempfile::tempdir().unwrap();
    let (path, endpoint) = socket_in(&dir);
    serve_not_cri_on_unix(&path);
    let err = connect_err(&endpoint).await;
    assert!(
        matches!(
            &err,
            ConnectError::NotCri {
                service: "RuntimeService",
                method: "Version",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "unix://{} does not serve CRI runtime.v1 RuntimeService (Version answered Unimplemented)",
            path.display()
        )
    );
}

#[tokio::test]
async fn channel_opens_on_any_listening_grpc_socket() {
    // `channel` only dials; what the server speaks is `connect`'s business.
    let dir = tempfile::tempdir().unwrap();
    let (path, endpoint) = socket_in(&dir);
    serve_not_cri_on_unix(&path);
    cri::channel(&endpoint, &quick()).await.unwrap();
}

#[tokio::test]
async fn runtime_is_checked_before_a_missing_image_endpoint_is_dialed() {
    let dir = tempfile::tempdir().unwrap();
    let (path, runtime) = socket_in(&dir);
    serve_not_cri_on_unix(&path);
    let image = Endpoint::Unix(dir.path().join("images.sock"));
    let err = cri::connect(&runtime, &image, &quick()).await.unwrap_err();
    assert!(matches!(&err, ConnectError::NotCri { .. }), "{err:?}");
}

/// Accepts every connection on `listener` and holds it without ever reading or writing.
fn hold_silently(listener: tokio::net::UnixListener) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    })
}

#[tokio::test]
async fn server_that_never_speaks_http2_fails_the_handshake_at_the_connect_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (path, endpoint) = socket_in(&dir);
    let holder = hold_silently(tokio::net::UnixListener::bind(&path).unwrap());
    let err = connect_err(&endpoint).await;
    assert!(matches!(&err, ConnectError::NoHandshake { .. }), "{err:?}");
    let line = err.to_string();
    assert!(
        line.contains("sent no HTTP/2 handshake within 500ms"),
        "{line}"
    );
    assert_one_line_naming(err, &path.display().to_string());
    holder.abort();
}

/// The connect timeout, not the call timeout, bounds the handshake: with a call timeout far
/// longer than the test may take, only the connect timeout can end this connect.
#[tokio::test]
async fn the_connect_timeout_alone_bounds_a_silent_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (_path, endpoint) = socket_in(&dir);
    let holder =
        hold_silently(tokio::net::UnixListener::bind(dir.path().join("cri.sock")).unwrap());
    let options = ConnectOptions {
        connect_timeout: Duration::from_millis(300),
        call_timeout: Duration::from_secs(3600),
    };
    let Err(err) = cri::connect(&endpoint, &endpoint, &options).await else {
        panic!("connecting to a silent socket succeeded");
    };
    assert!(matches!(&err, ConnectError::NoHandshake { .. }), "{err:?}");
    assert!(err.to_string().contains("within 300ms"), "{err}");
    holder.abort();
}

#[tokio::test]
async fn server_that_hangs_up_at_once_fails_the_handshake_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let (path, endpoint) = socket_in(&dir);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let closer = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });
    let err = connect_err(&endpoint).await;
    let line = format!("{:#}", anyhow::Error::from(err));
    assert!(line.contains(&path.display().to_string()), "{line}");
    assert!(!line.contains('\n'), "{line}");
    closer.abort();
}

#[tokio::test]
async fn closed_tcp_port_is_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let endpoint = Endpoint::Tcp {
        host: "127.0.0.1".into(),
        port,
    };
    let err = connect_err(&endpoint).await;
    assert!(matches!(&err, ConnectError::Refused { .. }), "{err:?}");
    assert_one_line_naming(err, &format!("tcp://127.0.0.1:{port}"));
}

#[tokio::test]
async fn grpc_server_without_cri_over_tcp_is_not_cri() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(MockControlServer::new(NoControl))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let endpoint = Endpoint::Tcp {
        host: "127.0.0.1".into(),
        port,
    };
    let err = connect_err(&endpoint).await;
    assert!(matches!(&err, ConnectError::NotCri { .. }), "{err:?}");
    assert_one_line_naming(err, &format!("tcp://127.0.0.1:{port}"));
}
