//! `check_network`: asks the runtime (verbose PodSandboxStatus, unrecorded) what became of a
//! sandbox's network namespace. `netNamespaceClosed` is the runtime's word; where this host can
//! see the runtime's netns directory (a runtime on this machine, as in CI), the namespace file
//! must agree, so a released network is checked, not just claimed.

use serde::{Deserialize, Serialize};

use super::{Kind, Scope, StepDef};
use crate::world::{mismatch, World, StepError};

/// `check_network`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `check_network` step: `sandbox`, `expect`")]
pub struct CheckNetwork {
    /// Sandbox alias.
    pub sandbox: String,
    /// The state the namespace must be in.
    pub expect: NetworkState,
}

/// A pod network's state, as `check_network` expects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum NetworkState {
    /// The runtime holds the namespace (`netNamespaceClosed` false; the file exists when this
    /// host can see the runtime's netns directory).
    Open,
    /// The runtime released it (`netNamespaceClosed` true; the file is gone when this host can
    /// see the runtime's netns directory).
    Closed,
}

impl StepDef for CheckNetwork {
    const NAME: &'static str = "check_network";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Checks through the verbose status that a sandbox's pod network is open or closed.";

    fn check(&self, scope: &mut Scope) -> Result<(), String> {
        scope.sandbox(&self.sandbox)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.sandbox(&self.sandbox)?.id.clone();
        let answer = world.runtime.pod_sandbox_status_with(&id, true).await?;
        let field = format!("check_network {}", self.sandbox);
        let want_closed = self.expect == NetworkState::Closed;
        let wanted = self.expect.to_string();
        let netns = crate::cri::sandbox_netns(&answer.info).ok_or_else(|| {
            StepError::Unsupported(format!(
                "{field}: the verbose status has no JSON info to read the network namespace from"
            ))
        })?;
        match netns.closed {
            None => {
                return Err(mismatch(
                    field,
                    wanted,
                    "no word from the runtime (no netNamespaceClosed in its verbose status)",
                ))
            }
            Some(closed) if closed != want_closed => {
                return Err(mismatch(field, wanted, format!("netNamespaceClosed={closed}")))
            }
            Some(_) => {}
        }
        if let Some(path) = netns.path.as_deref().filter(|p| !p.is_empty()) {
            let path = std::path::Path::new(path);
            let visible = path.parent().is_some_and(std::path::Path::is_dir);
            if visible && path.exists() == want_closed {
                let what = if want_closed { "still exists" } else { "is missing" };
                return Err(mismatch(
                    field,
                    wanted,
                    format!("the namespace file {} {what}", path.display()),
                ));
            }
        }
        Ok(())
    }
}
