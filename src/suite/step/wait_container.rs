//! `wait_container`: polls `ContainerStatus` until a container reaches a state (a container
//! whose command ends exits on its own), for at most a bound. Polls start at 10 ms and back off
//! to 100 ms, so a fast runtime is not kept waiting and a slow one is not flooded.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::{CheckError, Kind, Scope, State, StepDef};
use crate::manager::ContainerState;
use crate::world::{mismatch, StepError, World};

/// How long a wait lasts unless the suite says otherwise.
pub(super) const DEFAULT_WITHIN_MS: u64 = 10_000;

/// The longest wait a suite may ask for; a case's own deadline bounds it too.
const MAX_WITHIN_MS: u64 = 120_000;

/// `wait_container`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `wait_container` step: `container`, `state`, `within_ms`"
)]
pub struct WaitContainer {
    /// Container alias.
    pub container: String,
    /// The state to wait for.
    pub state: State,
    /// How long to wait at most, in milliseconds.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
}

pub(super) fn default_within() -> u64 {
    DEFAULT_WITHIN_MS
}

pub(super) fn is_default_within(ms: &u64) -> bool {
    *ms == DEFAULT_WITHIN_MS
}

/// Checks a suite's wait bound.
pub(super) fn check_within(ms: u64) -> Result<(), CheckError> {
    if ms == 0 || ms > MAX_WITHIN_MS {
        return Err(CheckError::rule(
            "within_ms",
            format!("{ms} is not in 1-{MAX_WITHIN_MS} milliseconds"),
        ));
    }
    Ok(())
}

/// How much longer each wait of a [`Poll`] is than the one before.
const POLL_STEP: Duration = Duration::from_millis(5);

/// A bounded poll: each `next` waits 5 ms longer than the one before (5, 10, 15 ms, and so on
/// up to 100 ms) until the bound passes. What a case waits for mostly comes within 100 ms (a
/// short command's exit, its log line), so the gaps stay short there: these tries, at 5, 15,
/// 30, 50, 75 and 105 ms, see such a change at most 30 ms late. Doubling from 10 ms (tries at
/// 10, 30, 70 and 150 ms) saw an exit at 75 ms only at 150 ms.
#[derive(Debug)]
pub(super) struct Poll {
    end: Instant,
    interval: Duration,
}

impl Poll {
    /// A poll that gives up `within_ms` from now.
    pub(super) fn new(within_ms: u64) -> Self {
        Self {
            end: Instant::now() + Duration::from_millis(within_ms),
            interval: POLL_STEP,
        }
    }

    /// Waits before the next try; false once the bound has passed.
    pub(super) async fn next(&mut self) -> bool {
        let now = Instant::now();
        if now >= self.end {
            return false;
        }
        crate::timing::pause(self.interval.min(self.end - now)).await;
        self.interval = (self.interval + POLL_STEP).min(Duration::from_millis(100));
        true
    }
}

impl StepDef for WaitContainer {
    const NAME: &'static str = "wait_container";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Polls `ContainerStatus` until a container is in a state, for at most `within_ms`.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        check_within(self.within_ms)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let mut poll = Poll::new(self.within_ms);
        loop {
            let status = world.runtime.container_status(&id).await?;
            let state = status.status.map_or(ContainerState::Unknown, |s| {
                ContainerState::from_cri_container(s.state)
            });
            if state == self.state.0 {
                return Ok(());
            }
            if !poll.next().await {
                return Err(mismatch(
                    format!("wait_container {}", self.container),
                    format!("{} within {} ms", self.state.0.name(), self.within_ms),
                    format!("still {}", state.name()),
                ));
            }
        }
    }
}
