//! `container_events`: the evented PLEG's contract. `{subscribe: true}` opens a
//! GetContainerEvents stream that a background task drains into the case's world; a later
//! `{expect: {ALIAS: [created, started, stopped, deleted]}}` waits (within a bound) until each
//! named sandbox or container has as many events as listed, then checks the kinds in order and
//! that every event of those objects carries what the kubelet takes without asking again: its pod's
//! sandbox status (with metadata) and its containers' statuses as they stand after the
//! transition, agreeing with a fresh ContainerStatus and PodSandboxStatus. Events of objects
//! the case did not make (other cases, earlier runs) are left out by id, so nothing depends on
//! what else runs. The harness keeps one stream per endpoint open for the whole run (see
//! `Shared`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::wait_container::{check_within, default_within, is_default_within, Poll};
use super::{CheckError, Kind, Scope, StepDef};
use crate::cri::{v1, CallError};
use crate::world::{mismatch, StepError, World};

use v1::ContainerEventType as Event;

/// How long a subscription waits for the runtime to answer or refuse before going on: a
/// runtime may hold its answer's headers back until its first event.
const SUBSCRIBE_GRACE: Duration = Duration::from_millis(500);

/// `container_events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_events` step: `subscribe`, `within_ms`, `expect`"
)]
pub struct ContainerEvents {
    /// Open the stream (then `expect` must be empty).
    #[serde(default, skip_serializing_if = "super::is_default")]
    pub subscribe: bool,
    /// How long to wait for the listed events, in milliseconds.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
    /// The kinds each sandbox or container alias must have had, in order, exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expect: BTreeMap<String, Vec<EventKind>>,
}

/// A kind of container event, as suites write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum EventKind {
    /// `CONTAINER_CREATED_EVENT`.
    Created,
    /// `CONTAINER_STARTED_EVENT`.
    Started,
    /// `CONTAINER_STOPPED_EVENT`.
    Stopped,
    /// `CONTAINER_DELETED_EVENT`.
    Deleted,
}

impl EventKind {
    fn of(kind: i32) -> Option<Self> {
        match Event::try_from(kind).ok()? {
            Event::ContainerCreatedEvent => Some(EventKind::Created),
            Event::ContainerStartedEvent => Some(EventKind::Started),
            Event::ContainerStoppedEvent => Some(EventKind::Stopped),
            Event::ContainerDeletedEvent => Some(EventKind::Deleted),
        }
    }
}

/// What the background task has drained so far, and how the stream ended, if it did.
#[derive(Default)]
struct Received {
    events: Vec<v1::ContainerEventResponse>,
    ended: Option<String>,
    /// The runtime closed the stream itself, with no error.
    closed: bool,
}

/// One stream per endpoint for the whole process, shared by every case that listens. A
/// runtime may hand each event to one stream only (containerd 1.7 has one queue that all
/// streams drain), and a stream being closed may still take an event as it goes, so the
/// harness never opens a second nor closes one while it runs.
struct Shared {
    received: Arc<Mutex<Received>>,
    task: tokio::task::JoinHandle<()>,
}

/// A case's view of the shared stream: the events from `start` on.
struct Subscription {
    received: Arc<Mutex<Received>>,
    start: usize,
}

/// The shared streams by endpoint; held across opening one, so cases that subscribe at once
/// share the first's stream rather than each opening their own.
fn streams() -> &'static tokio::sync::Mutex<BTreeMap<String, Shared>> {
    static STREAMS: std::sync::OnceLock<tokio::sync::Mutex<BTreeMap<String, Shared>>> =
        std::sync::OnceLock::new();
    STREAMS.get_or_init(Default::default)
}

fn lock(received: &Mutex<Received>) -> std::sync::MutexGuard<'_, Received> {
    received.lock().unwrap_or_else(PoisonError::into_inner)
}

impl StepDef for ContainerEvents {
    const NAME: &'static str = "container_events";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "GetContainerEvents: `{subscribe: true}` opens the stream; `{expect: {ALIAS: [created, started, stopped, deleted]}}` later checks each alias's events in order, and that every event of the case carries its pod's statuses as a fresh status call answers them.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        check_within(self.within_ms)?;
        match (self.subscribe, self.expect.is_empty()) {
            (true, false) => Err(CheckError::rule(
                "",
                "`subscribe` opens the stream; expect in a later step",
            )),
            (false, true) => Err(CheckError::rule(
                "",
                "either `subscribe: true` or an `expect` of aliases",
            )),
            _ => self.expect.keys().try_for_each(|alias| scope.either(alias)),
        }
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        if self.subscribe {
            return subscribe(world).await;
        }
        let ids = world_ids(world);
        let wanted: Vec<(String, String, usize)> = self
            .expect
            .iter()
            .map(|(alias, kinds)| {
                let id = ids.get(alias).map(|(id, _)| id.clone()).unwrap_or_default();
                (alias.clone(), id, kinds.len())
            })
            .collect();
        let Some(subscription) = world
            .kept
            .get(Self::NAME)
            .and_then(|k| k.downcast_ref::<Subscription>())
        else {
            return Err(StepError::Unsupported(
                "container_events: no earlier `subscribe: true` step in the case".to_owned(),
            ));
        };
        let (received, start) = (subscription.received.clone(), subscription.start);
        let mut poll = Poll::new(self.within_ms);
        loop {
            let done = {
                let got = lock(&received);
                got.ended.is_some()
                    || wanted.iter().all(|(_, id, count)| {
                        let events = got.events.get(start..).unwrap_or_default();
                        events.iter().filter(|e| &e.container_id == id).count() >= *count
                    })
            };
            if done || !poll.next().await {
                break;
            }
        }
        let (events, ended, off) = {
            let got = lock(&received);
            let events = got.events.get(start..).unwrap_or_default().to_vec();
            (events, got.ended.clone(), events_off(&got))
        };
        if let Some(how) = off {
            return Err(StepError::RuntimeLacks(format!(
                "container events (GetContainerEvents {how} through every transition of the \
                 case: events are not enabled)"
            )));
        }
        let mut own: Vec<&v1::ContainerEventResponse> =
            events.iter().filter(|e| is_own(e, &ids)).collect();
        for (alias, kinds) in &self.expect {
            let id = ids
                .get(alias)
                .map(|(id, _)| id.as_str())
                .unwrap_or_default();
            let seen: Vec<String> = own
                .iter()
                .filter(|e| e.container_id == id)
                .map(|e| {
                    EventKind::of(e.container_event_type).map_or_else(
                        || format!("unknown {}", e.container_event_type),
                        |k| k.to_string(),
                    )
                })
                .collect();
            let expected: Vec<String> = kinds.iter().map(ToString::to_string).collect();
            if seen != expected {
                let why = ended
                    .as_deref()
                    .map(|e| format!(" (the stream ended: {e})"))
                    .unwrap_or_default();
                return Err(mismatch(
                    format!("events.{alias}"),
                    format!("[{}]", expected.join(", ")),
                    format!("[{}]{why}", seen.join(", ")),
                ));
            }
        }
        // Only the named objects' events: another's may still be on its way, and whether it
        // has come must not decide the verdict.
        let named: Vec<&str> = wanted.iter().map(|(_, id, _)| id.as_str()).collect();
        own.retain(|e| named.contains(&e.container_id.as_str()));
        check_statuses(world, &own, &ids).await
    }
}

/// How the stream shows container events are off, if it does: it never carried an event, of
/// any object, and either the runtime ended it cleanly (CRI-O's stream with its pod events
/// off) or it stayed open and silent through the case. A stream that ended with an error, or
/// ever carried an event, is judged.
fn events_off(got: &Received) -> Option<&'static str> {
    if !got.events.is_empty() {
        return None;
    }
    match (&got.ended, got.closed) {
        (None, _) => Some("stayed silent"),
        (Some(_), true) => Some("ended with nothing"),
        (Some(_), false) => None,
    }
}

/// Each alias's id, and whether it names a sandbox.
fn world_ids(world: &World) -> BTreeMap<String, (String, bool)> {
    let sandboxes = world
        .aliases
        .sandboxes
        .iter()
        .map(|s| (s.alias.clone(), (s.id.clone(), true)));
    let containers = world
        .aliases
        .containers
        .iter()
        .map(|c| (c.alias.clone(), (c.id.clone(), false)));
    sandboxes.chain(containers).collect()
}

/// True for an event of an object the case made: named by id, or in one of its sandboxes.
fn is_own(event: &v1::ContainerEventResponse, ids: &BTreeMap<String, (String, bool)>) -> bool {
    let sandbox = event.pod_sandbox_status.as_ref().map(|s| s.id.as_str());
    ids.values().any(|(id, is_sandbox)| {
        *id == event.container_id || (*is_sandbox && sandbox == Some(id.as_str()))
    })
}

async fn subscribe(world: &mut World) -> Result<(), StepError> {
    let endpoint = world.runtime.endpoint().to_owned();
    let mut streams = streams().lock().await;
    let open = streams.get(&endpoint).and_then(|shared| {
        let alive = !shared.task.is_finished() && lock(&shared.received).ended.is_none();
        alive.then(|| shared.received.clone())
    });
    let received = match open {
        Some(received) => received,
        None => {
            let shared = open_stream(world, &endpoint).await?;
            let received = shared.received.clone();
            streams.insert(endpoint, shared);
            received
        }
    };
    drop(streams);
    let start = lock(&received).events.len();
    world.kept.insert(
        ContainerEvents::NAME,
        Box::new(Subscription { received, start }),
    );
    Ok(())
}

/// Opens the endpoint's shared stream, drained by a task that outlives the case.
async fn open_stream(world: &World, endpoint: &str) -> Result<Shared, StepError> {
    let received = Arc::new(Mutex::new(Received::default()));
    let (opened, mut answer) = tokio::sync::oneshot::channel::<Result<(), tonic::Status>>();
    let mut client = world.runtime.runtime_service();
    let sink = received.clone();
    let task = tokio::spawn(async move {
        let mut stream = match client.get_container_events(v1::GetEventsRequest {}).await {
            Ok(response) => {
                let _ = opened.send(Ok(()));
                response.into_inner()
            }
            Err(status) => {
                let _ = opened.send(Err(status));
                return;
            }
        };
        loop {
            let next = stream.message().await;
            let mut got = lock(&sink);
            match next {
                Ok(Some(event)) => got.events.push(event),
                Ok(None) => {
                    got.ended = Some("the runtime closed it".to_owned());
                    got.closed = true;
                    return;
                }
                Err(status) => {
                    got.ended = Some(format!("{:?}: {}", status.code(), status.message()));
                    return;
                }
            }
        }
    });
    // Opened, or still waiting for the runtime's first event: either way it listens.
    if let Ok(Ok(Err(status))) = tokio::time::timeout(SUBSCRIBE_GRACE, &mut answer).await {
        return Err(StepError::Call(CallError {
            method: "GetContainerEvents",
            endpoint: endpoint.to_owned(),
            code: status.code(),
            message: status.message().to_owned(),
        }));
    }
    Ok(Shared { received, task })
}

/// What every event of the case must carry: its pod's sandbox status with metadata, naming
/// the sandbox it concerns; the container's own status in the state its transition left it
/// in (none once deleted); and statuses that agree with what the runtime answers now for the
/// fields that cannot change after the transition.
async fn check_statuses(
    world: &World,
    events: &[&v1::ContainerEventResponse],
    ids: &BTreeMap<String, (String, bool)>,
) -> Result<(), StepError> {
    let alias_of = |id: &str| {
        ids.iter()
            .find(|(_, (own, _))| own == id)
            .map_or_else(|| "another object".to_owned(), |(alias, _)| alias.clone())
    };
    let mut last_at: BTreeMap<String, i64> = BTreeMap::new();
    for event in events {
        let who = alias_of(&event.container_id);
        let kind = EventKind::of(event.container_event_type);
        let field = |what: &str| {
            format!(
                "events.{who}.{}.{what}",
                kind.map_or_else(|| "unknown".to_owned(), |k| k.to_string())
            )
        };
        let Some(sandbox) = event
            .pod_sandbox_status
            .as_ref()
            .filter(|s| s.metadata.is_some())
        else {
            return Err(mismatch(
                field("pod_sandbox_status"),
                "a sandbox status with metadata",
                "none",
            ));
        };
        let is_sandbox = ids.values().any(|(id, s)| *s && *id == event.container_id);
        if is_sandbox && sandbox.id != event.container_id {
            return Err(mismatch(
                field("pod_sandbox_status.id"),
                who.clone(),
                alias_of(&sandbox.id),
            ));
        }
        // The kubelet caches a pod's status by the event's time: never older than the last.
        let last = last_at.entry(sandbox.id.clone()).or_insert(0);
        if event.created_at <= 0 || event.created_at < *last {
            return Err(mismatch(
                field("created_at"),
                format!("set and not before the pod's previous event ({})", *last),
                event.created_at.to_string(),
            ));
        }
        *last = event.created_at;
        if let Ok(fresh) = world.runtime.pod_sandbox_status(&sandbox.id).await {
            let fresh = fresh.status.unwrap_or_default();
            if fresh.metadata != sandbox.metadata || fresh.created_at != sandbox.created_at {
                return Err(mismatch(
                    field("pod_sandbox_status"),
                    "the metadata and created_at PodSandboxStatus answers",
                    "others",
                ));
            }
        }
        if is_sandbox {
            continue;
        }
        let own = event
            .containers_statuses
            .iter()
            .find(|s| s.id == event.container_id);
        let state = own.map(|s| s.state);
        let expected = match kind {
            Some(EventKind::Created) => Some(v1::ContainerState::ContainerCreated as i32),
            Some(EventKind::Started) => Some(v1::ContainerState::ContainerRunning as i32),
            Some(EventKind::Stopped) => Some(v1::ContainerState::ContainerExited as i32),
            Some(EventKind::Deleted) | None => None,
        };
        let shown = |state: Option<i32>| {
            state.map_or_else(
                || "absent".to_owned(),
                |s| {
                    v1::ContainerState::try_from(s)
                        .map_or_else(|_| s.to_string(), |s| s.as_str_name().to_owned())
                },
            )
        };
        // A container that ends at once may have exited by the time its started event is made.
        let fits = state == expected
            || (kind == Some(EventKind::Started)
                && state == Some(v1::ContainerState::ContainerExited as i32));
        if !fits {
            return Err(mismatch(
                field("containers_statuses"),
                format!("its own status {}", shown(expected)),
                shown(state),
            ));
        }
        let (Some(own), Ok(fresh)) = (
            own,
            world.runtime.container_status(&event.container_id).await,
        ) else {
            continue;
        };
        let fresh = fresh.status.unwrap_or_default();
        let mut differ = Vec::new();
        if fresh.metadata != own.metadata {
            differ.push("metadata");
        }
        if fresh.created_at != own.created_at {
            differ.push("created_at");
        }
        if own.started_at != 0 && fresh.started_at != own.started_at {
            differ.push("started_at");
        }
        if kind == Some(EventKind::Stopped)
            && (fresh.finished_at != own.finished_at || fresh.exit_code != own.exit_code)
        {
            differ.push("finished_at and exit_code");
        }
        if !differ.is_empty() {
            return Err(mismatch(
                field("containers_statuses"),
                "what ContainerStatus answers",
                format!("other {}", differ.join(", ")),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(events: usize, ended: Option<&str>, closed: bool) -> Received {
        Received {
            events: vec![v1::ContainerEventResponse::default(); events],
            ended: ended.map(str::to_owned),
            closed,
        }
    }

    #[test]
    fn a_stream_that_ends_with_nothing_or_stays_silent_is_events_off() {
        let closed = received(0, Some("the runtime closed it"), true);
        assert_eq!(events_off(&closed), Some("ended with nothing"));
        assert_eq!(events_off(&received(0, None, false)), Some("stayed silent"));
    }

    #[test]
    fn a_stream_that_carried_events_or_failed_is_judged() {
        assert_eq!(events_off(&received(1, None, false)), None);
        // Silent for this case after earlier events: a runtime that stopped sending is judged.
        assert_eq!(events_off(&received(3, None, false)), None);
        let failed = received(0, Some("Internal: boom"), false);
        assert_eq!(events_off(&failed), None);
        // Events came before the case subscribed, then the runtime closed it: not off.
        let closed_later = received(2, Some("the runtime closed it"), true);
        assert_eq!(events_off(&closed_later), None);
    }
}
