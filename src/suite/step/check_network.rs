//! `check_network`: what became of a sandbox's network namespace. The verbose PodSandboxStatus
//! (unrecorded) is runtime-private, so nothing in it is required: the namespace path
//! (`runtimeSpec.linux.namespaces`, which containerd and CRI-O both write) is read where it is
//! given, and where this host can see that file (a runtime on this machine, as in CI) its
//! presence is the runtime-neutral answer; containerd's `netNamespaceClosed` must agree where
//! it is given. A runtime that gives neither leaves the case skipped as `runtime_lacks`.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{mismatch, StepError, World};

/// `check_network`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `check_network` step: `sandbox`, `expect`"
)]
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

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.sandbox(&self.sandbox)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.sandbox(&self.sandbox)?.id.clone();
        let answer = world.runtime.pod_sandbox_status_with(&id, true).await?;
        let field = format!("check_network {}", self.sandbox);
        let want_closed = self.expect == NetworkState::Closed;
        let wanted = self.expect.to_string();
        let lacks = || {
            StepError::RuntimeLacks(format!(
                "the state of sandbox {}'s network namespace: its verbose status names no namespace file this host can see, and no netNamespaceClosed",
                self.sandbox
            ))
        };
        let netns = crate::cri::sandbox_netns(&answer.info).ok_or_else(lacks)?;
        let mut answered = false;
        if let Some(closed) = netns.closed {
            answered = true;
            if closed != want_closed {
                return Err(mismatch(
                    field,
                    wanted,
                    format!("netNamespaceClosed={closed}"),
                ));
            }
        }
        if let Some(path) = netns.path.as_deref().filter(|p| !p.is_empty()) {
            let path = std::path::Path::new(path);
            if path.parent().is_some_and(std::path::Path::is_dir) {
                answered = true;
                if path.exists() == want_closed {
                    let what = if want_closed {
                        "still exists"
                    } else {
                        "is missing"
                    };
                    return Err(mismatch(
                        field,
                        wanted,
                        format!("the namespace file {} {what}", path.display()),
                    ));
                }
            }
        }
        if answered {
            Ok(())
        } else {
            Err(lacks())
        }
    }
}
