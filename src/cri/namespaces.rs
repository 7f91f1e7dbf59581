//! The namespaces the kubelet asks for, built in one place for every sandbox and container the
//! harness makes or seeds: the pod's network (or the node's), the pod's IPC, a PID namespace per
//! container. Sandboxes and their containers must agree.

use super::v1;

/// The kubelet's namespace options for a pod on the pod network, or the node's.
pub fn namespace_options(host_network: bool) -> v1::NamespaceOption {
    let network = if host_network {
        v1::NamespaceMode::Node
    } else {
        v1::NamespaceMode::Pod
    };
    v1::NamespaceOption {
        network: network as i32,
        pid: v1::NamespaceMode::Container as i32,
        ipc: v1::NamespaceMode::Pod as i32,
        ..Default::default()
    }
}
