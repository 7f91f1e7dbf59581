//! Connecting to a CRI endpoint the way the kubelet does: dial and hear the server's HTTP/2
//! handshake within the connect deadline, then prove the far end serves CRI `runtime.v1`
//! (Version, then ImageFsInfo) before handing out a client.
//! Failures become one-line errors that say what to fix and name the socket or address.

use std::future::Future;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tonic::transport::{Channel, Uri};

use super::client::{CallError, CriClient};
use super::endpoint::Endpoint;

/// Deadlines for connecting and for each CRI call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Bound on dialing the endpoint and hearing its HTTP/2 handshake.
    pub connect_timeout: Duration,
    /// Bound on each CRI call, the validating ones included.
    pub call_timeout: Duration,
}

impl Default for ConnectOptions {
    /// 5 s to connect and 10 s per call.
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            call_timeout: Duration::from_secs(10),
        }
    }
}

/// Why no usable CRI connection could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Nothing exists at the socket path.
    #[error("CRI socket {} does not exist (is the runtime running?)", path.display())]
    SocketMissing {
        /// The socket path.
        path: PathBuf,
    },
    /// The socket (or a directory on its path) may not be used by this user.
    #[error("permission denied on CRI socket {} (run as a user that may use it)", path.display())]
    PermissionDenied {
        /// The socket path.
        path: PathBuf,
    },
    /// The path exists but is a regular file, directory or other non-socket.
    #[error("{} is not a unix socket", path.display())]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// The socket file exists but no process accepts on it: a runtime left it behind.
    #[error("nothing is listening on CRI socket {} (stale socket file)", path.display())]
    NotListening {
        /// The socket path.
        path: PathBuf,
    },
    /// The TCP address refused the connection.
    #[error("connection refused by {endpoint}")]
    Refused {
        /// The endpoint dialed.
        endpoint: Endpoint,
    },
    /// The far end took the connection but did not speak HTTP/2: silent until the connect
    /// deadline, or it hung up.
    #[error("{endpoint} {problem}")]
    NoHandshake {
        /// The endpoint dialed.
        endpoint: Endpoint,
        /// What it did instead.
        problem: String,
    },
    /// Dialing or a validating call took longer than its deadline.
    #[error("{endpoint} did not answer within {after:?}")]
    Timeout {
        /// The endpoint dialed.
        endpoint: Endpoint,
        /// The deadline that ran out.
        after: Duration,
    },
    /// The endpoint speaks gRPC but not the CRI service the kubelet checks for.
    #[error(
        "{endpoint} does not serve CRI runtime.v1 {service} ({method} answered Unimplemented)"
    )]
    NotCri {
        /// The endpoint dialed.
        endpoint: Endpoint,
        /// `RuntimeService` or `ImageService`.
        service: &'static str,
        /// The validating call: `Version` or `ImageFsInfo`.
        method: &'static str,
    },
    /// A validating call failed with another status.
    #[error("{endpoint} rejected CRI {method}: {code:?}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Rejected {
        /// The endpoint dialed.
        endpoint: Endpoint,
        /// The validating call: `Version` or `ImageFsInfo`.
        method: &'static str,
        /// The gRPC status code.
        code: tonic::Code,
        /// The runtime's message, on one line.
        message: String,
    },
    /// Dialing failed for a reason not classified above.
    #[error("cannot connect to {endpoint}")]
    Io {
        /// The endpoint dialed.
        endpoint: Endpoint,
        /// The dial failure.
        #[source]
        source: io::Error,
    },
    /// The gRPC channel could not be set up over a working connection.
    #[error("cannot open a gRPC channel to {endpoint}")]
    Transport {
        /// The endpoint dialed.
        endpoint: Endpoint,
        /// tonic's failure.
        #[source]
        source: tonic::transport::Error,
    },
}

/// Any URI will do for a unix socket: the connector ignores it, but HTTP/2 needs an authority.
const UNIX_DUMMY_URI: &str = "http://[::]:50051";

/// Dials `endpoint` and opens a gRPC channel on it, without checking what it serves. The
/// connect timeout bounds everything up to the server's first HTTP/2 frame, so a process that
/// accepts the connection and never speaks fails here, not after the first call's deadline.
pub async fn channel(endpoint: &Endpoint, opts: &ConnectOptions) -> Result<Channel, ConnectError> {
    // No tonic per-request timeout: CriClient bounds each call itself and lengthens the bound
    // for StopContainer's grace period, which a channel-wide timeout would cut short.
    let deadline = Instant::now() + opts.connect_timeout;
    let timed_out = || ConnectError::Timeout {
        endpoint: endpoint.clone(),
        after: opts.connect_timeout,
    };
    let (channel, heard) = match endpoint {
        Endpoint::Unix(path) => {
            let dial = {
                let path = path.clone();
                move || UnixStream::connect(path.clone())
            };
            let first = match tokio::time::timeout_at(deadline, dial()).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    let is_socket = std::fs::metadata(path)
                        .ok()
                        .map(|meta| meta.file_type().is_socket());
                    return Err(classify_unix(endpoint, path, err, is_socket, opts));
                }
                Err(_) => return Err(timed_out()),
            };
            open(endpoint, UNIX_DUMMY_URI.to_owned(), opts, first, dial).await?
        }
        Endpoint::Tcp { host, port } => {
            let authority = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            let dial = {
                let address = (host.clone(), *port);
                move || {
                    let address = address.clone();
                    async move {
                        let stream = TcpStream::connect(address).await?;
                        stream.set_nodelay(true)?;
                        Ok::<_, io::Error>(stream)
                    }
                }
            };
            let first =
                match tokio::time::timeout_at(deadline, dial()).await {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(err)) => {
                        return Err(classify_kind(endpoint, err.kind(), opts).unwrap_or_else(
                            || ConnectError::Io {
                                endpoint: endpoint.clone(),
                                source: err,
                            },
                        ))
                    }
                    Err(_) => return Err(timed_out()),
                };
            open(endpoint, format!("http://{authority}"), opts, first, dial).await?
        }
    };
    match tokio::time::timeout_at(deadline, heard).await {
        Ok(Ok(())) => Ok(channel),
        // The stream was dropped unheard: the far end closed the connection.
        Ok(Err(_)) => Err(ConnectError::NoHandshake {
            endpoint: endpoint.clone(),
            problem: "closed the connection before its HTTP/2 handshake".to_owned(),
        }),
        Err(_) => Err(ConnectError::NoHandshake {
            endpoint: endpoint.clone(),
            problem: format!(
                "accepted the connection but sent no HTTP/2 handshake within {:?} (--connect-timeout)",
                opts.connect_timeout
            ),
        }),
    }
}

/// Opens a channel whose first connection is `first` (so the runtime never sees a dial
/// dropped unused) and whose reconnections use `dial`; the receiver resolves when `first`
/// reads its first byte from the server.
async fn open<S, D, F>(
    endpoint: &Endpoint,
    uri: String,
    opts: &ConnectOptions,
    first: S,
    dial: D,
) -> Result<(Channel, oneshot::Receiver<()>), ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    D: Fn() -> F + Clone + Send + 'static,
    F: Future<Output = io::Result<S>> + Send + 'static,
{
    let (heard, heard_rx) = oneshot::channel();
    let first = Arc::new(Mutex::new(Some(Heard {
        inner: first,
        heard: Some(heard),
    })));
    let connector = tower::service_fn(move |_: Uri| {
        let first = first.lock().unwrap_or_else(PoisonError::into_inner).take();
        let dial = dial.clone();
        async move {
            let stream = match first {
                Some(stream) => stream,
                None => Heard {
                    inner: dial().await?,
                    heard: None,
                },
            };
            Ok::<_, io::Error>(TokioIo::new(stream))
        }
    });
    let channel = tonic::transport::Endpoint::from_shared(uri)
        .map_err(|source| ConnectError::Transport {
            endpoint: endpoint.clone(),
            source,
        })?
        .connect_timeout(opts.connect_timeout)
        .connect_with_connector(connector)
        .await
        .map_err(|source| classify_transport(endpoint, opts, source))?;
    Ok((channel, heard_rx))
}

/// A stream that reports the first byte it reads: an HTTP/2 server's first frame (its
/// SETTINGS) is the end of the handshake the connect timeout covers.
struct Heard<S> {
    inner: S,
    heard: Option<oneshot::Sender<()>>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Heard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            if let Some(heard) = self.heard.take() {
                // Nobody waits any more once connect() has returned; that is fine.
                let _ = heard.send(());
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Heard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Names a failed unix-socket dial. `is_socket` is what a stat of the path found (`None` when
/// the stat failed): connecting to a regular file fails like a stale socket (ECONNREFUSED), so
/// the error alone cannot tell the two apart.
fn classify_unix(
    endpoint: &Endpoint,
    path: &Path,
    err: io::Error,
    is_socket: Option<bool>,
    opts: &ConnectOptions,
) -> ConnectError {
    if is_socket == Some(false) {
        return ConnectError::NotASocket {
            path: path.to_path_buf(),
        };
    }
    classify_kind(endpoint, err.kind(), opts).unwrap_or_else(|| ConnectError::Io {
        endpoint: endpoint.clone(),
        source: err,
    })
}

/// The precise error for an I/O failure kind seen while dialing, if there is one.
fn classify_kind(
    endpoint: &Endpoint,
    kind: io::ErrorKind,
    opts: &ConnectOptions,
) -> Option<ConnectError> {
    let path = endpoint.unix_path().map(Path::to_path_buf);
    match (kind, path) {
        (io::ErrorKind::NotFound, Some(path)) => Some(ConnectError::SocketMissing { path }),
        (io::ErrorKind::PermissionDenied, Some(path)) => {
            Some(ConnectError::PermissionDenied { path })
        }
        (io::ErrorKind::ConnectionRefused, Some(path)) => Some(ConnectError::NotListening { path }),
        (io::ErrorKind::ConnectionRefused, None) => Some(ConnectError::Refused {
            endpoint: endpoint.clone(),
        }),
        (io::ErrorKind::TimedOut, _) => Some(ConnectError::Timeout {
            endpoint: endpoint.clone(),
            after: opts.connect_timeout,
        }),
        _ => None,
    }
}

/// tonic wraps the dial failure a few layers deep; the I/O error in its chain, if any, says
/// what happened.
fn classify_transport(
    endpoint: &Endpoint,
    opts: &ConnectOptions,
    err: tonic::transport::Error,
) -> ConnectError {
    let classified = crate::errors::causes(&err)
        .skip(1)
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .find_map(|io| classify_kind(endpoint, io.kind(), opts));
    if let Some(classified) = classified {
        return classified;
    }
    ConnectError::Transport {
        endpoint: endpoint.clone(),
        source: err,
    }
}

/// Names a failed validating call (`service`'s `method`) on `endpoint`.
fn classify_call(
    endpoint: &Endpoint,
    service: &'static str,
    err: CallError,
    opts: &ConnectOptions,
) -> ConnectError {
    match err.code {
        tonic::Code::Unimplemented => ConnectError::NotCri {
            endpoint: endpoint.clone(),
            service,
            method: err.method,
        },
        tonic::Code::DeadlineExceeded => ConnectError::Timeout {
            endpoint: endpoint.clone(),
            after: opts.call_timeout,
        },
        code => ConnectError::Rejected {
            endpoint: endpoint.clone(),
            method: err.method,
            code,
            message: err.message.split_whitespace().collect::<Vec<_>>().join(" "),
        },
    }
}

/// Connects to the runtime and image endpoints (one channel when they are the same) and checks
/// both serve CRI `runtime.v1`, as the kubelet does: `Version` with an empty version on the
/// runtime service, then `ImageFsInfo` on the image service.
pub async fn connect(
    runtime: &Endpoint,
    image: &Endpoint,
    opts: &ConnectOptions,
) -> Result<CriClient, ConnectError> {
    let runtime_channel = channel(runtime, opts).await?;
    let probe = CriClient::new(
        runtime_channel.clone(),
        runtime_channel.clone(),
        runtime.to_string(),
        opts.call_timeout,
    );
    probe
        .version("")
        .await
        .map_err(|err| classify_call(runtime, "RuntimeService", err, opts))?;

    let (image_channel, name) = if image == runtime {
        (runtime_channel.clone(), runtime.to_string())
    } else {
        (
            channel(image, opts).await?,
            format!("{runtime} (images {image})"),
        )
    };
    let client = CriClient::new(runtime_channel, image_channel, name, opts.call_timeout);
    client
        .image_fs_info()
        .await
        .map_err(|err| classify_call(image, "ImageService", err, opts))?;
    tracing::debug!(%runtime, %image, "connected to a CRI runtime");
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn socket() -> Endpoint {
        Endpoint::Unix(PathBuf::from("/run/x.sock"))
    }

    fn address() -> Endpoint {
        Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: 5000,
        }
    }

    /// EACCES cannot be provoked across the wire when the tests run as root, so the
    /// classification is checked here on the error kinds the kernel's errnos map to.
    #[rstest]
    #[case::enoent(socket(), io::Error::from_raw_os_error(2), Some(true), "SocketMissing")]
    #[case::eacces(socket(), io::Error::from_raw_os_error(13), None, "PermissionDenied")]
    #[case::eperm(
        socket(),
        io::Error::from_raw_os_error(1),
        Some(true),
        "PermissionDenied"
    )]
    #[case::econnrefused_on_a_socket(
        socket(),
        io::Error::from_raw_os_error(111),
        Some(true),
        "NotListening"
    )]
    #[case::econnrefused_on_a_file(
        socket(),
        io::Error::from_raw_os_error(111),
        Some(false),
        "NotASocket"
    )]
    #[case::etimedout(socket(), io::Error::from_raw_os_error(110), Some(true), "Timeout")]
    #[case::eagain(socket(), io::Error::from_raw_os_error(11), Some(true), "Io")]
    #[case::tcp_refused(address(), io::Error::from_raw_os_error(111), None, "Refused")]
    fn dial_errors_are_classified(
        #[case] endpoint: Endpoint,
        #[case] err: io::Error,
        #[case] is_socket: Option<bool>,
        #[case] expected: &str,
    ) {
        let path = endpoint.unix_path().unwrap_or(Path::new("")).to_path_buf();
        let classified =
            classify_unix(&endpoint, &path, err, is_socket, &ConnectOptions::default());
        let debug = format!("{classified:?}");
        assert!(debug.starts_with(expected), "{debug}");
    }

    #[rstest]
    #[case::unimplemented(tonic::Code::Unimplemented, "unix:///run/x.sock does not serve CRI runtime.v1 RuntimeService (Version answered Unimplemented)")]
    #[case::deadline(
        tonic::Code::DeadlineExceeded,
        "unix:///run/x.sock did not answer within 10s"
    )]
    #[case::other(
        tonic::Code::Internal,
        "unix:///run/x.sock rejected CRI Version: Internal: boom on two lines"
    )]
    fn validation_errors_are_classified(#[case] code: tonic::Code, #[case] expected: &str) {
        let err = CallError {
            method: "Version",
            endpoint: "ignored".into(),
            code,
            message: "boom\non two   lines".into(),
        };
        let classified =
            classify_call(&socket(), "RuntimeService", err, &ConnectOptions::default());
        assert_eq!(classified.to_string(), expected);
    }

    #[test]
    fn rejected_without_a_message_shows_only_the_code() {
        let err = CallError {
            method: "ImageFsInfo",
            endpoint: "ignored".into(),
            code: tonic::Code::Unavailable,
            message: String::new(),
        };
        let classified = classify_call(&address(), "ImageService", err, &ConnectOptions::default());
        assert_eq!(
            classified.to_string(),
            "tcp://127.0.0.1:5000 rejected CRI ImageFsInfo: Unavailable"
        );
    }
}
