//! The runtime's streaming server, as the kubelet's clients use it: a runtime answers the
//! Exec, Attach and PortForward RPCs with a URL, and the client then speaks one of the
//! Kubernetes WebSocket channel protocols to it. `protocol` holds what both ends of that
//! conversation agree on (subprotocol names, channel numbers, the status and resize
//! messages), shared by the harness's client and the mock runtime's server.

pub mod protocol;
