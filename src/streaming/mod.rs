//! The runtime's streaming server, as the kubelet's clients use it: a runtime answers the
//! Exec, Attach and PortForward RPCs with a URL, and the client then speaks one of the
//! Kubernetes WebSocket channel protocols to it. `protocol` holds what both ends of that
//! conversation agree on (subprotocol names, channel numbers, the status and resize
//! messages), shared by the harness's client and the mock runtime's server. The client is
//! `remote_command` (exec, attach) and `port_forward`; both dial through `connect`, which
//! refuses any host but loopback.

pub mod connect;
pub mod error;
pub mod port_forward;
pub mod protocol;
pub mod remote_command;
#[cfg(test)]
mod test_server;

pub use connect::{runtime_netns, runtime_url, tcp_from_runtime, StreamUrl};
pub use error::StreamError;
pub use port_forward::{forward, forward_at, ClosedBy, Forwarded};
pub use remote_command::{RemoteCommandInput, RemoteCommandOutput};
