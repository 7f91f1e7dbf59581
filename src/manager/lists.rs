//! The manager's two lists, sandboxes and containers, as today's kubelet makes them: with the
//! `CRIListStreaming` gate on, through `StreamPodSandboxes` and `StreamContainers`, every
//! message's items joined in order; once the runtime answers a stream Unimplemented, through the
//! unary RPCs for the rest of the manager's life, that list included. Any other failure of a
//! stream is the list's failure: only Unimplemented means "this runtime has no streams".
//! Follows cri-client's remote image service on master (k8s.io/cri-client, `useStreaming`: one
//! flag per service connection); the store holds no copy of the runtime service's streaming
//! lists, so they are taken to follow the same rule, one flag for both. The seed had no streams.

use std::sync::atomic::Ordering;

use super::{FeatureGate, KubeGenericRuntimeManager};
use crate::cri::{v1, CallError};

impl KubeGenericRuntimeManager {
    /// Whether the next list goes through a stream.
    fn streams_lists(&self) -> bool {
        self.profile.is_current()
            && self.gates.enabled(FeatureGate::CRIListStreaming)
            && !self.unary_lists.load(Ordering::Relaxed)
    }

    /// Notes a stream's Unimplemented answer: every later list of this manager (and of its
    /// clones, which share the connection) is unary.
    fn fall_back(&self, err: &CallError) -> bool {
        if err.code != tonic::Code::Unimplemented {
            return false;
        }
        self.unary_lists.store(true, Ordering::Relaxed);
        tracing::info!(
            method = err.method,
            "the runtime has no list streams; using the unary lists"
        );
        true
    }

    /// The runtime's sandboxes that `filter` selects.
    pub(crate) async fn list_sandboxes(
        &self,
        filter: Option<v1::PodSandboxFilter>,
    ) -> Result<Vec<v1::PodSandbox>, CallError> {
        if self.streams_lists() {
            match self.client.stream_pod_sandboxes(filter.clone()).await {
                Ok(messages) => return Ok(messages.into_iter().flatten().collect()),
                Err(err) if self.fall_back(&err) => {}
                Err(err) => return Err(err),
            }
        }
        self.client.list_pod_sandbox(filter).await
    }

    /// The runtime's containers that `filter` selects.
    pub(crate) async fn list_containers(
        &self,
        filter: Option<v1::ContainerFilter>,
    ) -> Result<Vec<v1::Container>, CallError> {
        if self.streams_lists() {
            match self.client.stream_containers(filter.clone()).await {
                Ok(messages) => return Ok(messages.into_iter().flatten().collect()),
                Err(err) if self.fall_back(&err) => {}
                Err(err) => return Err(err),
            }
        }
        self.client.list_containers(filter).await
    }
}
