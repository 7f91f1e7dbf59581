//! The mock's transports: a unix socket (mode 0600, removed on shutdown) served from a thread
//! of its own, and an in-memory duplex for tests. Both serve RuntimeService, ImageService and
//! MockControl on one router with the kubelet's 16 MiB message limits.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::TryStreamExt;
use hyper_util::rt::TokioIo;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{oneshot, watch};
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::server::Router;
use tonic::transport::{Channel, Server};

use super::authority::AuthorityFix;
use super::control::MockControlService;
use super::error::MockError;
use super::image_service::MockImageService;
use super::runtime_service::MockRuntimeService;
use super::MockRuntime;
use crate::cri::control::mock_control_server::MockControlServer;
use crate::cri::v1::image_service_server::ImageServiceServer;
use crate::cri::v1::runtime_service_server::RuntimeServiceServer;
use crate::cri::{CriClient, Endpoint, MAX_MESSAGE_SIZE};

/// Per-call deadline of [`MockRuntime::duplex_client`].
const DUPLEX_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Buffer of each in-memory connection, per direction.
const DUPLEX_BUFFER: usize = 1024 * 1024;
/// How long shutdown waits for calls in flight (e.g. injected delays) before cutting them off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// Worker threads of a socket server's runtime: one per core of the 2-core machines it is
/// measured on, so two clients are served at once.
const SERVER_THREADS: usize = 2;

/// A mock served on a unix socket; stopping it (or dropping it) removes the socket.
#[derive(Debug)]
pub struct MockServer {
    path: PathBuf,
    /// Set to true (or dropped) to stop the server thread.
    stop: Option<watch::Sender<bool>>,
    /// Resolves when the server thread has stopped serving.
    done: Option<oneshot::Receiver<()>>,
}

impl MockServer {
    /// The endpoint clients dial, `unix://<path>`.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::Unix(self.path.clone())
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops serving (calls in flight get a short grace) and removes the socket.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            // The thread may have ended already; then there is nobody to tell.
            let _ = stop.send(true);
        }
        if let Some(done) = self.done.take() {
            // The thread cuts calls off after the grace itself; the margin covers its exit.
            let _ = tokio::time::timeout(SHUTDOWN_GRACE * 2, done).await;
        }
        remove_socket(&self.path);
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // Dropping the sender stops the thread just as a send would.
        if self.stop.take().is_some() {
            remove_socket(&self.path);
        }
    }
}

/// Removes our socket, tolerating that someone already did.
fn remove_socket(path: &Path) {
    if let Err(err) = std::fs::remove_file(path) {
        if err.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), %err, "cannot remove the mock's socket");
        }
    }
}

impl MockRuntime {
    /// The three services on one router, with 16 MiB limits both ways.
    fn router(&self) -> Router {
        let runtime = RuntimeServiceServer::new(MockRuntimeService(self.clone()))
            .max_decoding_message_size(MAX_MESSAGE_SIZE)
            .max_encoding_message_size(MAX_MESSAGE_SIZE);
        let image = ImageServiceServer::new(MockImageService(self.clone()))
            .max_decoding_message_size(MAX_MESSAGE_SIZE)
            .max_encoding_message_size(MAX_MESSAGE_SIZE);
        let control = MockControlServer::new(MockControlService(self.clone()))
            .max_decoding_message_size(MAX_MESSAGE_SIZE)
            .max_encoding_message_size(MAX_MESSAGE_SIZE);
        Server::builder()
            .add_service(runtime)
            .add_service(image)
            .add_service(control)
    }

    /// Serves the mock on a unix socket at `path` (mode 0600) until the returned server is shut
    /// down or dropped. A stale socket left by a dead server is replaced; a live one is not.
    ///
    /// The server runs on a runtime of its own (two workers, so concurrent clients are decoded
    /// and answered in parallel; the mock's one lock is held only briefly): it answers even
    /// while the caller's runtime is blocked, and stopping it ends every connection, calls held
    /// by injected latency included, since its runtime goes with it.
    pub async fn serve_unix(&self, path: &Path) -> Result<MockServer, MockError> {
        let path = path.to_path_buf();
        clear_stale_socket(&path).await?;
        let listener =
            std::os::unix::net::UnixListener::bind(&path).map_err(|source| MockError::Bind {
                path: path.clone(),
                source,
            })?;
        // Explicit, whatever the umask: only the owner may talk to the runtime.
        let mode = std::fs::Permissions::from_mode(0o600);
        if let Err(source) = std::fs::set_permissions(&path, mode) {
            remove_socket(&path);
            return Err(MockError::Permissions { path, source });
        }
        let started = listener
            .set_nonblocking(true)
            .and_then(|()| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(SERVER_THREADS)
                    .thread_name("mock-cri-worker")
                    .enable_all()
                    .build()
            })
            .and_then(|runtime| {
                let (stop, stopped) = watch::channel(false);
                let (finished, done) = oneshot::channel();
                let router = self.router();
                let mock = self.clone();
                let served = path.clone();
                std::thread::Builder::new()
                    .name("mock-cri-server".to_owned())
                    .spawn(move || {
                        // Event streams never end by themselves: end them as shutdown begins,
                        // so the grace is not spent waiting on a listener.
                        let mut closing = stopped.clone();
                        let events = mock.clone();
                        runtime.spawn(async move {
                            let _ = closing.wait_for(|stop| *stop).await;
                            events.lock().events.close();
                        });
                        runtime.block_on(serve(router, listener, stopped, &served));
                        // Its connections go with the runtime; say so, so a later start
                        // of this mock does not hand out URLs nobody answers.
                        mock.lock().streaming.stop();
                        // Only once the runtime is gone are its listeners (the streaming
                        // server's port among them) closed: a caller told "finished" before
                        // could still reach them.
                        drop(runtime);
                        // Nobody may be waiting for the end; that is fine.
                        let _ = finished.send(());
                    })
                    .map(|_| (stop, done))
            });
        let (stop, done) = match started {
            Ok(handles) => handles,
            Err(source) => {
                remove_socket(&path);
                return Err(MockError::ServerThread { path, source });
            }
        };
        tracing::info!(path = %path.display(), "mock CRI runtime serving");
        Ok(MockServer {
            path,
            stop: Some(stop),
            done: Some(done),
        })
    }

    /// A channel to this mock over an in-memory duplex: every (re)connect gets a fresh pipe
    /// with its own server task, so no socket or port is involved.
    pub async fn duplex_channel(&self) -> Result<Channel, MockError> {
        let mock = self.clone();
        // The URI is required by the endpoint builder but never dialled.
        tonic::transport::Endpoint::from_static("http://mock.invalid")
            .connect_with_connector(tower::service_fn(move |_: http::Uri| {
                let (client, server) = tokio::io::duplex(DUPLEX_BUFFER);
                let router = mock.router();
                tokio::spawn(async move {
                    // No AuthorityFix here: the only client of the pipe is tonic's, whose
                    // authority (the URI above) h2 accepts, and decoding every header block
                    // again cost the in-process runs a tenth of their time.
                    let incoming = tokio_stream::iter([Ok::<_, std::io::Error>(server)]);
                    if let Err(err) = router.serve_with_incoming(incoming).await {
                        tracing::debug!(%err, "in-memory mock connection ended");
                    }
                });
                async move { Ok::<_, std::io::Error>(TokioIo::new(client)) }
            }))
            .await
            .map_err(|source| MockError::Duplex { source })
    }

    /// A CRI client to this mock over an in-memory duplex, with a 10 s per-call deadline.
    pub async fn duplex_client(&self) -> Result<CriClient, MockError> {
        let channel = self.duplex_channel().await?;
        Ok(CriClient::new(
            channel.clone(),
            channel,
            "mock (in-memory)",
            DUPLEX_CALL_TIMEOUT,
        ))
    }
}

/// Serves `router` on `listener` until `stopped` turns true or its sender goes, then gives calls
/// in flight `SHUTDOWN_GRACE` before dropping them with the runtime.
async fn serve(
    router: Router,
    listener: std::os::unix::net::UnixListener,
    stopped: watch::Receiver<bool>,
    path: &Path,
) {
    let listener = match UnixListener::from_std(listener) {
        Ok(listener) => listener,
        Err(err) => {
            tracing::error!(path = %path.display(), %err, "mock server cannot use its socket");
            return;
        }
    };
    let mut graceful = stopped.clone();
    let signal = async move {
        // An error means the sender is gone, which also means stop.
        let _ = graceful.wait_for(|stop| *stop).await;
    };
    let mut hard = stopped;
    let deadline = async move {
        let _ = hard.wait_for(|stop| *stop).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    // Clients on unix sockets send authorities h2 refuses; see `authority`.
    let incoming = UnixListenerStream::new(listener).map_ok(AuthorityFix::new);
    tokio::select! {
        served = router.serve_with_incoming_shutdown(incoming, signal) => {
            if let Err(err) = served {
                tracing::error!(path = %path.display(), %err, "mock server failed");
            }
        }
        () = deadline => {
            tracing::warn!(path = %path.display(), "mock server cut off calls still in flight");
        }
    }
}

/// Makes way for a new socket at `path`: nothing there is fine, a socket nobody answers on is
/// removed, a live socket or any other file is an error.
async fn clear_stale_socket(path: &Path) -> Result<(), MockError> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(_) => return Ok(()),
    };
    if !metadata.file_type().is_socket() {
        return Err(MockError::NotASocket {
            path: path.to_path_buf(),
        });
    }
    if UnixStream::connect(path).await.is_ok() {
        return Err(MockError::InUse {
            path: path.to_path_buf(),
        });
    }
    std::fs::remove_file(path).map_err(|source| MockError::RemoveStale {
        path: path.to_path_buf(),
        source,
    })
}
