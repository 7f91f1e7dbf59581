//! What the harness saw of one pod on a runtime, as typed values in suite terms: its sandboxes,
//! its containers, the actions a sync decided on and each step's result. A `sync_pod` step
//! records them in its snapshot and checks its expectation against them; the differential
//! compares the mock's with a runtime's. Fields one observer does not read are `None`.
//!
//! Each value's `Display` is its one line in suite terms (what a `sync_pod` snapshot holds);
//! a field left `None` is left out of it, so the line shows what was seen and nothing else.

use std::fmt;

use serde::Serialize;

use crate::manager::lifecycle::ResourceName;
use crate::manager::{ContainerState, SyncAction};

/// A sandbox of the pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxSeen {
    /// Its metadata attempt.
    pub attempt: u32,
    /// Its state: running is ready, exited is not ready.
    pub state: ContainerState,
    /// Its id, redacted (`<sandbox:s0>`); `None` where the sandbox is known by its attempt (a
    /// sync's state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its IP, redacted (`<ip:s0>`); `None` without one, or where only the sandbox list was read
    /// (it has no IP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// The network namespace mode its status echoes (`POD`, `NODE`); `None` when the status has
    /// no namespace options, which makes the modern kubelet recreate the sandbox (kubelet
    /// rules: #has-the-sandbox-changed), or where only the sandbox list was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
}

impl SandboxSeen {
    /// Whether the sandbox is ready.
    pub fn is_ready(&self) -> bool {
        self.state == ContainerState::Running
    }
}

/// Where a container is in its life and, once exited, how it ended.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Exit {
    /// Its state.
    pub state: ContainerState,
    /// The exit code (0 until it exits).
    pub exit_code: i32,
    /// The runtime's short reason (`Completed`, `Error`; "" until it exits); `None` where it
    /// was not read (a sync's state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One instance of a container of the pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ContainerSeen {
    /// Its id, redacted (`<container:c0>`); `None` where the instance is known by its name (a
    /// sync's state names the newest instance of each container).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The container name.
    pub name: String,
    /// Its metadata attempt (the kubelet's restart count); `None` where it was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The image as requested; `None` where it was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Its state and exit.
    pub exit: Exit,
    /// Started by the sync round it is seen after, and read while its process runs on: then
    /// running or already exited is a race, which the line leaves open (`started`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub just_started: bool,
}

/// The pod's runtime state: its sandboxes and its containers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PodSeen {
    /// Its sandboxes, oldest attempt first.
    pub sandboxes: Vec<SandboxSeen>,
    /// The newest instance of each container, by name.
    pub containers: Vec<ContainerSeen>,
}

impl PodSeen {
    /// The container named `name`, if one was seen.
    pub fn container(&self, name: &str) -> Option<&ContainerSeen> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// One line per sandbox, then one per container.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        let sandboxes = self.sandboxes.iter().map(ToString::to_string);
        sandboxes.chain(self.containers.iter().map(ToString::to_string))
    }
}

/// One action of the decision a sync round computed (the kubelet's computePodActions), in the
/// order a round's actions are listed: the pod's kill, the sandbox's creation, the container
/// kills, starts and resizes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionSeen {
    /// The whole pod is killed first.
    KillPod,
    /// A sandbox is created with this attempt.
    CreateSandbox {
        /// The new sandbox's attempt.
        attempt: u32,
    },
    /// The named container is killed.
    Kill(String),
    /// The named container is started.
    Start(String),
    /// An instance of the named container is removed (stopped first if it runs): the pod
    /// restarts all its containers in place.
    Reset(String),
    /// One resource of the named container is resized in place.
    Resize {
        /// The container name.
        container: String,
        /// The resource.
        resource: ResourceName,
    },
}

/// One step's result of a sync or a kill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResultSeen {
    /// The step.
    pub action: SyncAction,
    /// Its target, redacted: a container name, or the pod (`NAME_NAMESPACE(<uid:ALIAS>)` or
    /// `<uid:ALIAS>`), or a sandbox id (`<sandbox:ALIAS#0>`).
    pub target: String,
    /// The error kind (`CrashLoopBackOff`, ...), `None` on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The failure's text, redacted; `None` on success and where it is not recorded (the
    /// differential's kills, whose texts are the runtimes' own words).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl fmt::Display for SandboxSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            ContainerState::Running => "ready",
            ContainerState::Exited => "not_ready",
            other => other.name(),
        };
        write!(f, "sandbox attempt={}: {state}", self.attempt)?;
        if let Some(id) = &self.id {
            write!(f, " id={id}")?;
        }
        if let Some(ip) = &self.ip {
            write!(f, " ip={ip}")?;
        }
        if let Some(network) = &self.network {
            write!(f, " net={network}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} exit={}", self.state.name(), self.exit_code)?;
        match self.reason.as_deref() {
            Some(reason) if !reason.is_empty() => write!(f, " {reason}"),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for ContainerSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.just_started {
            write!(f, "container {}: started", self.name)?;
            if let Some(attempt) = self.attempt {
                write!(f, " restarts={attempt}")?;
            }
        } else {
            write!(f, "container {}: {}", self.name, self.exit.state.name())?;
            if let Some(attempt) = self.attempt {
                write!(f, " restarts={attempt}")?;
            }
            write!(f, " exit_code={}", self.exit.exit_code)?;
            match self.exit.reason.as_deref() {
                Some(reason) if !reason.is_empty() => write!(f, " reason={reason}")?,
                _ => {}
            }
        }
        if let Some(id) = &self.id {
            write!(f, " id={id}")?;
        }
        if let Some(image) = &self.image {
            write!(f, " image={image}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ActionSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActionSeen::KillPod => f.write_str("kill_pod"),
            ActionSeen::CreateSandbox { attempt } => write!(f, "create_sandbox attempt={attempt}"),
            ActionSeen::Kill(name) => write!(f, "kill {name}"),
            ActionSeen::Start(name) => write!(f, "start {name}"),
            ActionSeen::Reset(name) => write!(f, "reset {name}"),
            ActionSeen::Resize {
                container,
                resource,
            } => write!(f, "resize {container} {}", resource_name(*resource)),
        }
    }
}

/// A resource by the name suites write.
pub fn resource_name(resource: ResourceName) -> &'static str {
    match resource {
        ResourceName::Memory => "memory",
        ResourceName::Cpu => "cpu",
    }
}

impl fmt::Display for ResultSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.action.name(), self.target)?;
        match (&self.error, &self.message) {
            (None, _) => f.write_str("ok"),
            (Some(kind), None) => f.write_str(kind),
            (Some(kind), Some(message)) => write!(f, "{kind}: {message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync_state() -> PodSeen {
        PodSeen {
            sandboxes: vec![
                SandboxSeen {
                    attempt: 0,
                    state: ContainerState::Exited,
                    id: None,
                    ip: None,
                    network: None,
                },
                SandboxSeen {
                    attempt: 1,
                    state: ContainerState::Running,
                    id: None,
                    ip: None,
                    network: None,
                },
            ],
            containers: vec![ContainerSeen {
                id: None,
                name: "app".to_owned(),
                attempt: Some(2),
                image: None,
                exit: Exit {
                    state: ContainerState::Exited,
                    exit_code: 1,
                    reason: None,
                },
                just_started: false,
            }],
        }
    }

    #[test]
    fn a_syncs_state_reads_as_the_lines_its_snapshot_holds() {
        let lines: Vec<String> = sync_state().lines().collect();
        assert_eq!(
            lines,
            [
                "sandbox attempt=0: not_ready",
                "sandbox attempt=1: ready",
                "container app: exited restarts=2 exit_code=1",
            ]
        );
    }

    #[test]
    fn a_status_read_in_full_shows_every_field_it_holds() {
        let sandbox = SandboxSeen {
            attempt: 0,
            state: ContainerState::Running,
            id: Some("<sandbox:s0>".to_owned()),
            ip: Some("<ip:s0>".to_owned()),
            network: Some("POD".to_owned()),
        };
        assert_eq!(
            sandbox.to_string(),
            "sandbox attempt=0: ready id=<sandbox:s0> ip=<ip:s0> net=POD"
        );
        let container = ContainerSeen {
            id: Some("<container:c0>".to_owned()),
            name: "app".to_owned(),
            attempt: None,
            image: Some("busybox".to_owned()),
            exit: Exit {
                state: ContainerState::Exited,
                exit_code: 137,
                reason: Some("Error".to_owned()),
            },
            just_started: false,
        };
        assert_eq!(
            container.to_string(),
            "container app: exited exit_code=137 reason=Error id=<container:c0> image=busybox"
        );
    }

    #[test]
    fn actions_and_results_read_as_their_snapshot_lines() {
        let actions = [
            ActionSeen::KillPod,
            ActionSeen::CreateSandbox { attempt: 1 },
            ActionSeen::Kill("old".to_owned()),
            ActionSeen::Start("app".to_owned()),
            ActionSeen::Resize {
                container: "app".to_owned(),
                resource: ResourceName::Memory,
            },
        ];
        let shown: Vec<String> = actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "kill_pod",
                "create_sandbox attempt=1",
                "kill old",
                "start app",
                "resize app memory",
            ]
        );
        let result = |error: Option<&str>, message: Option<&str>| ResultSeen {
            action: SyncAction::StartContainer,
            target: "app".to_owned(),
            error: error.map(str::to_owned),
            message: message.map(str::to_owned),
        };
        assert_eq!(result(None, None).to_string(), "start_container app: ok");
        assert_eq!(
            result(Some("CrashLoopBackOff"), Some("back-off 10s")).to_string(),
            "start_container app: CrashLoopBackOff: back-off 10s"
        );
        assert_eq!(
            result(Some("CrashLoopBackOff"), None).to_string(),
            "start_container app: CrashLoopBackOff"
        );
    }
}
