//! One model of what was observed: each manager call of a case, with its typed answer (or its
//! error), the CRI calls it made and the network teardowns it asked for. The runner's checks
//! and snapshots, the property checkers and the differential all read these values; the one
//! [`Redactor`] turns them into stable text, and [`render`] writes a snapshot body.

pub mod pod;
pub mod redact;
pub mod tree;

use serde::{Serialize, Serializer};

pub use pod::{ActionSeen, ContainerSeen, Exit, PodSeen, ResultSeen, SandboxSeen};
pub use redact::Redactor;
pub use tree::Node;

use crate::cri::CallRecord;
use crate::manager::{
    ContainerId, Pod, PodStatus, PodSyncResult, RuntimeCondition, RuntimeStatus, RuntimeVersion,
    TeardownCall,
};

/// What one manager call answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// The manager was constructed; its runtime type.
    Constructed {
        /// `runtime_type()`.
        runtime_type: String,
    },
    /// `Version()` or `APIVersion()`.
    Version(RuntimeVersion),
    /// `Status()`.
    Status(RuntimeStatus),
    /// `GetPods(all)`, the case's own pods.
    Pods(Vec<Pod>),
    /// `GetPodStatus(...)`.
    PodStatus(Box<PodStatus>),
    /// `KillPod(...)`: every step's result.
    Killed(PodSyncResult),
    /// `GetNetNS(...)`: the path (recorded as `<netns>` or empty: its name is the runtime's).
    Netns(#[serde(serialize_with = "netns_token")] String),
    /// `GetPodContainerID(...)`.
    ContainerId(ContainerId),
    /// `GarbageCollect(...)`: what is left of the case's own objects, in suite terms.
    Collected {
        /// `sandbox ALIAS: STATE`, `container ALIAS: STATE`, `pod log directory POD` and
        /// `log symlink ALIAS`, sorted.
        remains: Vec<String>,
    },
    /// One round of `SyncPod(pod)`: computePodActions' decision, each step's result and the
    /// pod's runtime state after it, each recorded as its line in suite terms.
    Synced {
        /// `kill_pod`, `create_sandbox attempt=N`, `kill NAME`, `start NAME`,
        /// `resize NAME RESOURCE`.
        #[serde(serialize_with = "lines")]
        actions: Vec<ActionSeen>,
        /// `ACTION TARGET: ok` or `ACTION TARGET: ERROR_KIND: message`.
        #[serde(serialize_with = "lines")]
        results: Vec<ResultSeen>,
        /// `sandbox attempt=N: STATE`, then `container NAME: STATE restarts=N exit_code=N`.
        #[serde(serialize_with = "state_lines")]
        state: PodSeen,
    },
    /// `PortForward(pod, port, stream)`: what crossed each connection, in opening order.
    Forwarded {
        /// One exchange per connection.
        connections: Vec<Exchange>,
    },
}

impl Answer {
    /// `Status()` as a reference records it: only the two conditions the contract requires,
    /// RuntimeReady then NetworkReady, with a non-empty reason or message as
    /// [`redact::RUNTIME_TEXT`]. api.proto lets a runtime add conditions of its own (containerd
    /// 1.7 adds `ContainerdHasNoDeprecationWarnings`) and word them as it likes; the kubelet
    /// reads only the two, so a reference that held the rest would hold for one runtime only.
    pub fn status(status: &RuntimeStatus) -> Self {
        let redact = |text: &str| {
            if text.is_empty() {
                String::new()
            } else {
                redact::RUNTIME_TEXT.to_owned()
            }
        };
        let conditions = REQUIRED_CONDITIONS
            .iter()
            .filter_map(|&kind| status.condition(kind))
            .map(|c| RuntimeCondition {
                r#type: c.r#type.clone(),
                status: c.status,
                reason: redact(&c.reason),
                message: redact(&c.message),
            })
            .collect();
        Answer::Status(RuntimeStatus { conditions })
    }
}

/// The runtime conditions api.proto requires of every runtime, in the order recorded.
pub const REQUIRED_CONDITIONS: [&str; 2] = ["RuntimeReady", "NetworkReady"];

/// What one port-forwarded connection carried, as text (lossy UTF-8), so a snapshot shows
/// the bytes themselves rather than counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exchange {
    /// The bytes sent to the pod's port.
    pub sent: String,
    /// The bytes the pod's port answered.
    pub received: String,
}

fn netns_token<S: Serializer>(path: &str, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry("netns", if path.is_empty() { "" } else { "<netns>" })?;
    map.end()
}

/// Values as their lines, one string each.
fn lines<'a, T, S>(items: &'a [T], serializer: S) -> Result<S::Ok, S::Error>
where
    T: std::fmt::Display + 'a,
    S: Serializer,
{
    serializer.collect_seq(items.iter().map(ToString::to_string))
}

/// A pod's state as its lines: the sandboxes', then the containers'.
fn state_lines<S: Serializer>(pod: &PodSeen, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(pod.lines())
}

/// One CRI call a manager call made, as the client logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriCall {
    /// Short method name, e.g. `StopContainer`.
    pub method: String,
    /// The request's identifying fields, one line ("" when it has none).
    pub request: String,
    /// `OK` or `Code: message`.
    pub outcome: String,
}

impl From<CallRecord> for CriCall {
    fn from(record: CallRecord) -> Self {
        Self {
            method: record.method,
            request: record.request,
            outcome: record.outcome,
        }
    }
}

impl std::fmt::Display for CriCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.request.is_empty() {
            write!(f, "{} -> {}", self.method, self.outcome)
        } else {
            write!(f, "{} {} -> {}", self.method, self.request, self.outcome)
        }
    }
}

impl Serialize for CriCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One manager call of a case and everything it caused.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    /// The call in suite terms, e.g. `kill_pod web without spec`.
    pub call: String,
    /// Its answer, when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Answer>,
    /// Its error text, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The CRI calls it made, in the order they were issued.
    pub cri: Vec<CriCall>,
    /// The network teardowns it asked the plugin for (recorded for `kill_pod` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teardown: Option<Vec<TeardownCall>>,
}

impl Observation {
    /// An observation of a call's outcome and the CRI calls it made.
    pub fn new(
        call: impl Into<String>,
        outcome: Result<Answer, String>,
        cri: Vec<CriCall>,
    ) -> Self {
        let (result, error) = match outcome {
            Ok(answer) => (Some(answer), None),
            Err(text) => (None, Some(text)),
        };
        Self {
            call: call.into(),
            result,
            error,
            cri,
            teardown: None,
        }
    }
}

/// A redacted observation list as YAML, the body of a snapshot.
pub fn render(observations: &[Observation], redactor: &Redactor) -> String {
    let tree = redactor.node(tree::node_or_note(observations));
    yaml(&tree)
}

/// Any tree as YAML text.
pub fn yaml(tree: &Node) -> String {
    serde_saphyr::to_string(tree).unwrap_or_else(|err| format!("cannot write YAML: {err}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(kind: &str, status: bool, reason: &str, message: &str) -> RuntimeCondition {
        RuntimeCondition {
            r#type: kind.to_owned(),
            status,
            reason: reason.to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn a_status_records_only_the_required_conditions_in_their_order_without_runtime_words() {
        let status = RuntimeStatus {
            conditions: vec![
                condition(
                    "NetworkReady",
                    false,
                    "NetworkPluginNotReady",
                    "cni not initialized",
                ),
                condition("ContainerdHasNoDeprecationWarnings", true, "", ""),
                condition("RuntimeReady", true, "", ""),
            ],
        };
        let Answer::Status(recorded) = Answer::status(&status) else {
            panic!("not a status");
        };
        assert_eq!(
            recorded.conditions,
            vec![
                condition("RuntimeReady", true, "", ""),
                condition("NetworkReady", false, "<runtime text>", "<runtime text>"),
            ]
        );
    }
}
