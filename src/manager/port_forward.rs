//! `port_forward`: a byte stream relayed to a port of a pod, through the runtime's streaming
//! server. The 2016 seed answered "not implemented"; today's kubelet asks the runtime for a
//! URL (`GetPortForward`) and hands it to the API server's client, which speaks the streaming
//! protocol. The port does both halves: it finds the pod's sandbox, asks for the URL, and
//! relays the caller's stream through [`crate::streaming::forward`].

use std::collections::BTreeMap;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::status::sort_sandboxes_newest_first;
use super::{KubeGenericRuntimeManager, ManagerError, Pod};
use crate::cri::labels::POD_UID;
use crate::cri::v1;
use crate::streaming::{self, Forwarded};

impl KubeGenericRuntimeManager {
    /// Relays `stream` to `port` of `pod` until either side closes, everything by `deadline`:
    /// the bytes read from `stream` reach the port inside the pod's network namespace (the
    /// node's for a host-network pod), and what the server there answers is written back.
    ///
    /// The sandbox is the pod's newest by creation time among those labelled with its uid,
    /// in any state, as today's kubelet picks it (`getSandboxIDByPodUID`); the runtime
    /// refuses a sandbox that is not ready. A pod without a sandbox fails with
    /// [`ManagerError::PodSandboxesNotFound`]; a refused URL or a failed relay (nothing
    /// listens on the port, the server goes silent past the deadline) with
    /// [`ManagerError::PortForward`], naming the pod and the port.
    pub async fn port_forward<S>(
        &self,
        pod: &Pod,
        port: u16,
        stream: S,
        deadline: Instant,
    ) -> Result<Forwarded, ManagerError>
    where
        S: AsyncRead + AsyncWrite,
    {
        let pod_name = format!("{}_{}", pod.name, pod.namespace);
        let filter = v1::PodSandboxFilter {
            label_selector: BTreeMap::from([(POD_UID.to_owned(), pod.id.clone())]),
            ..Default::default()
        };
        let mut sandboxes = self.list_sandboxes(Some(filter)).await?;
        sort_sandboxes_newest_first(&mut sandboxes);
        let sandbox = sandboxes
            .first()
            .ok_or_else(|| ManagerError::PodSandboxesNotFound {
                pod: pod_name.clone(),
            })?;
        let failed = |source: PortForwardFailure| ManagerError::PortForward {
            pod: pod_name.clone(),
            port,
            source: Box::new(source),
        };
        let url = self
            .client
            .port_forward(&sandbox.id, &[port])
            .await
            .map_err(|err| failed(PortForwardFailure::Url(err)))?;
        let url = streaming::runtime_url(&url, self.client.endpoint())
            .map_err(|err| failed(PortForwardFailure::Stream(err)))?;
        streaming::forward_at(&url, port, stream, deadline)
            .await
            .map_err(|err| failed(PortForwardFailure::Stream(err)))
    }
}

/// What went wrong in a port forward.
#[derive(Debug, thiserror::Error)]
pub enum PortForwardFailure {
    /// The runtime would not give a URL.
    #[error(transparent)]
    Url(crate::cri::CallError),
    /// The streaming server refused or broke the relay.
    #[error(transparent)]
    Stream(streaming::StreamError),
}
