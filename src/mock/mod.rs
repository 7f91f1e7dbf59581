//! The built-in mock CRI runtime: a real gRPC server (unix socket, or an in-memory duplex in
//! tests) whose RuntimeService and ImageService answer the way containerd 1.6 does where the
//! CRI contract leaves room (or, under the other-runtime profile, otherwise wherever it does:
//! see [`MockProfile`]), plus a control service that lets a suite ask for misbehaviour.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

mod authority;
mod call_log;
mod clock;
mod control;
mod defects;
mod dispatch;
mod error;
mod events;
mod faults;
mod image_service;
mod index;
mod kubelet_wire;
mod latency;
mod list_stream;
mod metrics;
mod mounts;
mod oom;
mod process;
mod profile;
mod registries;
mod runtime_config;
mod runtime_service;
mod server;
mod state;
mod stats;
mod status_info;
mod streaming;
mod summary;
mod transitions;

pub use defects::Defect;
pub use error::MockError;
pub use kubelet_wire::KubeletWire;
pub use latency::Latency;
pub use profile::{Freedom, MockProfile, ProfileName, Requirement};
pub use registries::RegistryAllowList;
pub use server::MockServer;

use crate::cri::v1;

/// The mock runtime: every clone shares the same objects, clock, injected faults and call log,
/// so one instance can be served on several transports at once.
#[derive(Debug, Clone, Default)]
pub struct MockRuntime {
    inner: Arc<Mutex<Inner>>,
}

/// Everything a mock instance remembers; one lock, never held across an await.
#[derive(Debug)]
pub(crate) struct Inner {
    /// Sandboxes, containers, images and the counters that name them.
    pub(crate) state: state::State,
    /// The clock timestamps come from.
    pub(crate) clock: clock::Clock,
    /// Errors and delays a suite asked for.
    pub(crate) faults: faults::Faults,
    /// Every CRI call received, in arrival order.
    pub(crate) log: call_log::CallLog,
    /// The Version answer.
    pub(crate) version: v1::VersionResponse,
    /// The streaming server Exec, Attach and PortForward URLs point at.
    pub(crate) streaming: streaming::Streaming,
    /// The contract breaks this instance was made with (none, but in tests of the cases).
    pub(crate) defects: defects::Defects,
    /// The broadcast GetContainerEvents streams subscribe to.
    pub(crate) events: events::Events,
    /// Containers a delayed StartContainer holds in its starting transition.
    pub(crate) transitions: transitions::Transitions,
    /// The registries pulls may reach (every one, unless the mock was given a list).
    pub(crate) registries: registries::RegistryAllowList,
    /// The kubelet whose requests the mock expects, refusing what it would never send (none:
    /// it takes any request the contract allows).
    pub(crate) kubelet_wire: Option<kubelet_wire::KubeletWire>,
    /// The freedoms it takes and whether it holds requests to the kubelet's.
    pub(crate) profile: MockProfile,
    /// How long its image calls take (nothing, unless it was made with some).
    pub(crate) latency: latency::Latency,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            state: state::State::default(),
            clock: clock::Clock::default(),
            faults: faults::Faults::default(),
            log: call_log::CallLog::default(),
            version: default_version(),
            streaming: streaming::Streaming::default(),
            defects: defects::Defects::new(),
            events: events::Events::default(),
            transitions: transitions::Transitions::default(),
            registries: registries::RegistryAllowList::every(),
            kubelet_wire: None,
            profile: MockProfile::default(),
            latency: latency::Latency::default(),
        }
    }
}

impl Inner {
    /// Ends the processes whose timed exit the clock has reached (see
    /// [`state::State::apply_due_exits`]). Called before every CRI call is answered and after
    /// every clock control, so no answer shows a process past its exit.
    pub(crate) fn settle_exits(&mut self) {
        if self.state.has_timed_exits() {
            let now = self.clock.now();
            let running = |state: &state::State| -> Vec<(String, String)> {
                state
                    .containers
                    .iter()
                    .map(|(_, c)| c)
                    .filter(|c| c.status.state == v1::ContainerState::ContainerRunning as i32)
                    .map(|c| (c.status.id.clone(), c.pod_sandbox_id.clone()))
                    .collect()
            };
            let before = running(&self.state);
            self.state.apply_due_exits(now);
            let after = running(&self.state);
            for (id, sandbox) in before.iter().filter(|c| !after.contains(c)) {
                events::emit(self, id, sandbox, events::Kind::ContainerStoppedEvent, None);
            }
        }
    }
}

/// The Version answer of a fresh mock (the brief's defaults, in containerd's shape).
pub(crate) fn default_version() -> v1::VersionResponse {
    v1::VersionResponse {
        version: "0.1.0".to_owned(),
        runtime_name: "cri-harness-mock".to_owned(),
        runtime_version: env!("CARGO_PKG_VERSION").to_owned(),
        runtime_api_version: "v1".to_owned(),
    }
}

impl MockRuntime {
    /// A fresh mock: no objects, wall clock, no faults, empty call log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh mock that breaks the contract in each of `defects`: for tests that show a
    /// case catches a runtime with that defect.
    pub fn with_defects(defects: impl IntoIterator<Item = Defect>) -> Self {
        let mock = Self::default();
        mock.lock().defects = Defect::of_instance(defects);
        mock
    }

    /// A fresh mock answering as `profile` says.
    pub fn with_profile(profile: MockProfile) -> Self {
        let mock = Self::default();
        mock.lock().profile = profile;
        mock
    }

    /// This instance, answering from now on as `profile` says (for a mock made with defects).
    pub fn profiled(self, profile: MockProfile) -> Self {
        self.lock().profile = profile;
        self
    }

    /// True when this instance takes `freedom`.
    pub(crate) fn takes(inner: &Inner, freedom: Freedom) -> bool {
        inner.profile.takes(freedom)
    }

    /// True when this instance was made with `defect`.
    pub(crate) fn has(inner: &Inner, defect: Defect) -> bool {
        inner.defects.contains(&defect)
    }

    /// Locks the shared state.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // Handlers validate before they mutate, so a panic cannot leave the state half-updated:
        // keep answering rather than fail every later call.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
