//! GetContainerEvents on the mock: every transition of a container or a sandbox (created,
//! started, stopped, deleted) is broadcast, after the state changed, to every open stream, with
//! its pod's sandbox status and its containers' statuses as they then stand, which is what the
//! kubelet's evented PLEG takes as the pod's status. A sandbox's own events name the sandbox's
//! id, as the kubelet reads a deleted event of a sandbox id as the pod's deletion.

use std::pin::Pin;

use futures::Stream;
use tokio::sync::broadcast;
use tonic::Status;

use super::error::RpcError;
use super::{Defect, Freedom, Inner, MockRuntime};
use crate::cri::v1;

pub(crate) use v1::ContainerEventType as Kind;

/// Events a slow subscriber may fall behind by before it loses some (and its stream ends).
const BACKLOG: usize = 4096;

/// The broadcast every stream subscribes to, made with the first subscriber: its backlog is
/// a few megabytes to fill and drop, which most mocks (one per case, one per property case
/// runner) never need.
#[derive(Debug, Default)]
pub(crate) struct Events {
    sender: Option<broadcast::Sender<v1::ContainerEventResponse>>,
}

impl Events {
    /// Ends every open stream (the server is shutting down); later subscribers get a fresh
    /// broadcast.
    pub(crate) fn close(&mut self) {
        self.sender = None;
    }

    /// The open broadcast, where some stream still listens.
    fn listened(&self) -> Option<&broadcast::Sender<v1::ContainerEventResponse>> {
        self.sender.as_ref().filter(|s| s.receiver_count() > 0)
    }

    fn subscribe(&mut self) -> broadcast::Receiver<v1::ContainerEventResponse> {
        self.sender
            .get_or_insert_with(|| broadcast::channel(BACKLOG).0)
            .subscribe()
    }
}

/// Sends the event of `kind` for `id` (a container's, or the sandbox's own) of sandbox
/// `sandbox_id`, with the statuses as they stand now; `last_sandbox` stands in for a sandbox
/// already removed.
pub(crate) fn emit(
    inner: &mut Inner,
    id: &str,
    sandbox_id: &str,
    kind: Kind,
    last_sandbox: Option<&v1::PodSandboxStatus>,
) {
    // Nobody listening is no error: events are not kept for later subscribers.
    let Some(sender) = inner.events.listened().cloned() else {
        return;
    };
    if MockRuntime::has(inner, Defect::ContainerEventDropped) && kind == Kind::ContainerStartedEvent
    {
        return;
    }
    let state = &inner.state;
    let pod_sandbox_status = state
        .find_exact_sandbox(sandbox_id)
        .map(|key| state.sandboxes[key].status.clone())
        .or_else(|| last_sandbox.cloned());
    let mut containers_statuses: Vec<v1::ContainerStatus> = state
        .containers
        .in_group(sandbox_id)
        .map(|(_, c)| c.status.clone())
        .collect();
    if MockRuntime::has(inner, Defect::ContainerEventStale) {
        // The status as it stood before the transition: a started container still created.
        for status in &mut containers_statuses {
            if status.id == id && kind == Kind::ContainerStartedEvent {
                status.state = v1::ContainerState::ContainerCreated as i32;
                status.started_at = 0;
            }
        }
    }
    let event = v1::ContainerEventResponse {
        container_id: id.to_owned(),
        container_event_type: kind as i32,
        created_at: inner.clock.now(),
        pod_sandbox_status,
        containers_statuses,
    };
    let _ = sender.send(event);
}

/// The stream one GetContainerEvents call answers.
pub(crate) type EventStream =
    Pin<Box<dyn Stream<Item = Result<v1::ContainerEventResponse, Status>> + Send + 'static>>;

/// Subscribes a new stream: it carries every event from now on.
pub(crate) fn get_container_events(
    inner: &mut Inner,
    _request: v1::GetEventsRequest,
) -> Result<EventStream, RpcError> {
    if MockRuntime::takes(inner, Freedom::EventsOff) {
        // Events not enabled, as CRI-O's pod events are by default: the stream ends at once.
        return Ok(Box::pin(futures::stream::empty()));
    }
    let receiver = inner.events.subscribe();
    let stream = futures::stream::unfold(Some(receiver), |receiver| async move {
        let mut receiver = receiver?;
        match receiver.recv().await {
            Ok(event) => Some((Ok(event), Some(receiver))),
            Err(broadcast::error::RecvError::Lagged(lost)) => Some((
                Err(Status::resource_exhausted(format!(
                    "the stream fell {lost} events behind; subscribe again"
                ))),
                None,
            )),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    });
    Ok(Box::pin(stream))
}
