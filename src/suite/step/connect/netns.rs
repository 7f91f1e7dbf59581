//! Where a connection starts: the network namespace of the node (the runtime's, where host
//! ports are published and pod IPs routed) or of a pod. The runtime may run in a namespace of
//! its own (CI runs containerd in one), so the node's is found from the process that serves the
//! CRI socket. Entering a namespace is per thread on Linux: a connection is made on a thread
//! spawned for it, which enters the namespace first; the socket keeps that namespace after the
//! thread ends and is then used from the async runtime like any other.

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};

/// The harness's own network namespace.
const OWN: &str = "/proc/self/ns/net";

/// A network namespace a connection starts in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// The harness's own namespace.
    Here,
    /// Another one, by a path that can be opened and entered (`/proc/PID/ns/net`, a netns
    /// bind mount).
    Netns(PathBuf),
}

/// Why a connection cannot start where it should.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlaceError {
    /// The namespace file cannot be looked at (a runtime of another user, a removed pod).
    #[error("cannot read the network namespace {}", path.display())]
    Unreadable {
        /// The namespace file.
        path: PathBuf,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The CRI socket's server cannot be asked who it is.
    #[error("cannot learn which process serves {}", socket.display())]
    Peer {
        /// The socket.
        socket: PathBuf,
        /// What failed.
        #[source]
        source: io::Error,
    },
    /// The namespace cannot be entered (it takes CAP_SYS_ADMIN).
    #[error("cannot enter the network namespace {} (the harness needs CAP_SYS_ADMIN, e.g. root, to connect from there)", path.display())]
    Enter {
        /// The namespace file.
        path: PathBuf,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The thread that connects could not be started or died.
    #[error("the thread that connects from {} failed", path.display())]
    Thread {
        /// The namespace file.
        path: PathBuf,
    },
}

/// The place of a namespace file: `Here` when it is the harness's own namespace.
pub(crate) fn place_of(path: &Path) -> Result<Place, PlaceError> {
    let identity = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| (m.dev(), m.ino()))
            .map_err(|source| PlaceError::Unreadable {
                path: p.to_owned(),
                source,
            })
    };
    if identity(path)? == identity(Path::new(OWN))? {
        Ok(Place::Here)
    } else {
        Ok(Place::Netns(path.to_owned()))
    }
}

/// The network namespace of the process that serves the CRI socket `socket` (the streaming
/// client's own lookup, which it dials runtime URLs from).
pub(crate) fn node_of(socket: &Path) -> Result<Place, PlaceError> {
    let path = crate::streaming::runtime_netns(socket).map_err(|source| PlaceError::Peer {
        socket: socket.to_owned(),
        source,
    })?;
    place_of(&path)
}

/// Connects to `addr` from `place`, waiting at most `timeout` for the handshake.
pub(crate) async fn connect(
    place: &Place,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<io::Result<tokio::net::TcpStream>, PlaceError> {
    let stream = match place {
        Place::Here => {
            return Ok(
                match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
                    Ok(result) => result,
                    Err(_) => Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no handshake within {} ms", timeout.as_millis()),
                    )),
                },
            )
        }
        Place::Netns(path) => connect_in(path, addr, timeout).await?,
    };
    Ok(stream.and_then(|s| {
        s.set_nonblocking(true)?;
        tokio::net::TcpStream::from_std(s)
    }))
}

/// Connects from inside the namespace at `path`, on a thread of its own.
async fn connect_in(
    path: &Path,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<io::Result<TcpStream>, PlaceError> {
    let file = File::open(path).map_err(|source| PlaceError::Unreadable {
        path: path.to_owned(),
        source,
    })?;
    let (done, answer) = tokio::sync::oneshot::channel();
    let owned = path.to_owned();
    std::thread::Builder::new()
        .name("cri-harness-netns".to_owned())
        .spawn(move || {
            let result =
                match move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network)) {
                    Err(err) => Err(PlaceError::Enter {
                        path: owned,
                        source: err.into(),
                    }),
                    // The thread ends with this call, so no later work runs in the namespace.
                    Ok(()) => Ok(TcpStream::connect_timeout(&addr, timeout)),
                };
            let _ = done.send(result);
        })
        .map_err(|_| PlaceError::Thread {
            path: path.to_owned(),
        })?;
    answer.await.map_err(|_| PlaceError::Thread {
        path: path.to_owned(),
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_namespace_is_here() {
        assert_eq!(place_of(Path::new(OWN)).unwrap(), Place::Here);
        let pid = std::process::id();
        let by_pid = PathBuf::from(format!("/proc/{pid}/ns/net"));
        assert_eq!(place_of(&by_pid).unwrap(), Place::Here);
    }

    #[test]
    fn a_missing_namespace_file_is_unreadable() {
        let err = place_of(Path::new("/nonexistent/ns/net")).unwrap_err();
        assert!(matches!(err, PlaceError::Unreadable { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_socket_served_by_this_process_puts_the_node_here() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.sock");
        let _listener = tokio::net::UnixListener::bind(&socket).unwrap();
        assert_eq!(node_of(&socket).unwrap(), Place::Here);
    }

    #[tokio::test]
    async fn entering_the_own_namespace_by_path_still_connects() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let place = Place::Netns(PathBuf::from(OWN));
        match connect(&place, addr, Duration::from_secs(5)).await {
            Ok(stream) => assert!(stream.is_ok(), "{stream:?}"),
            // Without CAP_SYS_ADMIN even one's own namespace cannot be entered by setns.
            Err(PlaceError::Enter { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
}
