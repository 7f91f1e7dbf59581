//! `get_pod_status`: the manager's `GetPodStatus(uid, name, namespace)`: the pod's identity, its
//! IP (from the newest sandbox, only while ready), its sandboxes newest first, and its
//! containers' statuses field by field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{check_error, is_default, CheckError, ErrorExpect, Kind, Scope, State, StepDef};
use crate::cri::v1;
use crate::manager::{ContainerStatus, PodStatus};
use crate::observe::Answer;
use crate::world::{expect_eq, show, sorted, StepError, World};

/// `get_pod_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `get_pod_status` step: `pod`, `expect`"
)]
pub struct GetPodStatus {
    /// Pod alias.
    pub pod: String,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: PodStatusExpect,
}

/// The expected pod IP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IpExpect {
    /// No IP.
    None,
    /// The IP the sandbox with this alias reported when it was run.
    Of(String),
}

/// What `get_pod_status` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `get_pod_status` expectation: `error`, `id`, `name`, `namespace`, `ip`, `ips`, `sandboxes`, `containers`, `container_order`, `container`"
)]
pub struct PodStatusExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// The status's pod UID, in suite terms (`<uid:ALIAS>`, or a fixed UID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The status's pod name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The status's namespace (`<namespace>` for the case's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The pod IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<IpExpect>,
    /// Every IP of the newest sandbox while it is ready (primary first), by sandbox alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips: Option<Vec<String>>,
    /// Sandbox statuses, exactly these, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandboxes: Option<Vec<String>>,
    /// Container statuses, exactly these, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<String>>,
    /// Container statuses, exactly these, in the manager's order (newest first per sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_order: Option<Vec<String>>,
    /// Field by field, per container alias.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub container: BTreeMap<String, ContainerExpect>,
}

/// One container status, field by field.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a container status expectation: `name`, `image`, `hash`, `restart_count`, `state`, `exit_code`, `reason`, `message`, `created_at`, `started_at`, `finished_at`"
)]
pub struct ContainerExpect {
    /// The container name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The image as requested (a full reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The `io.kubernetes.container.hash` annotation, read as hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<u64>,
    /// The restart count (the `io.kubernetes.container.restartCount` annotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_count: Option<i32>,
    /// The state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// The exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The runtime's short reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The runtime's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Creation time, whole seconds since the Unix epoch (on the mock's set clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Start time, whole seconds since the Unix epoch; 0 where the kubelet keeps none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// Finish time, whole seconds since the Unix epoch; 0 where the kubelet keeps none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
}

/// The pod status as the case's reference keeps it: only what the contract fixes. Of each
/// sandbox the case ran, the labels and annotations it sent (a runtime may add keys:
/// `sandbox.status.echoes-config`; they are noted at `observed`), no IP once it is not READY
/// (`sandbox.stop.releases-ip` is only observed: api.proto fixes no IP for a stopped
/// sandbox), and no handler name where the case asked for the default one (a runtime may name
/// its default). A seeded sandbox is kept as the case seeded it; one the manager ran keeps the
/// keys the case's sandboxes were sent.
fn reference_view(world: &mut World, status: &PodStatus) -> PodStatus {
    let sent: Vec<&v1::PodSandboxConfig> = world
        .aliases
        .sandboxes
        .iter()
        .filter(|s| s.config.metadata.is_some())
        .map(|s| &s.config)
        .collect();
    let any_sent = |map: fn(&v1::PodSandboxConfig) -> &BTreeMap<String, String>| {
        sent.iter()
            .flat_map(|c| map(c).keys().cloned())
            .collect::<std::collections::BTreeSet<String>>()
    };
    let (any_labels, any_annotations) = (any_sent(|c| &c.labels), any_sent(|c| &c.annotations));
    let mut added = Vec::new();
    let mut view = status.clone();
    for sandbox in &mut view.sandbox_statuses {
        let made = world.aliases.sandboxes.iter().find(|s| s.id == sandbox.id);
        if made.is_some_and(|s| s.config.metadata.is_none()) {
            continue;
        }
        let config = made.map(|s| &s.config);
        let keep = |map: &mut BTreeMap<String, String>,
                    own: Option<&BTreeMap<String, String>>,
                    any: &std::collections::BTreeSet<String>,
                    added: &mut Vec<String>| {
            map.retain(|key, _| {
                let sent = own.map_or_else(|| any.contains(key), |own| own.contains_key(key));
                if !sent {
                    added.push(key.clone());
                }
                sent
            });
        };
        keep(
            &mut sandbox.labels,
            config.map(|c| &c.labels),
            &any_labels,
            &mut added,
        );
        keep(
            &mut sandbox.annotations,
            config.map(|c| &c.annotations),
            &any_annotations,
            &mut added,
        );
        if sandbox.state != v1::PodSandboxState::SandboxReady as i32 {
            sandbox.network = sandbox
                .network
                .take()
                .map(|_| v1::PodSandboxNetworkStatus::default());
        }
        if world.runtime_handler.is_empty() {
            sandbox.runtime_handler.clear();
        }
    }
    added.sort();
    added.dedup();
    if !added.is_empty() {
        world.note_observed(format!(
            "the runtime added keys to the sandboxes' labels or annotations: {}",
            added.join(", ")
        ));
    }
    view
}

impl StepDef for GetPodStatus {
    const NAME: &'static str = "get_pod_status";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str =
        "`GetPodStatus(uid, name, namespace)`: the pod's IP, sandboxes and container statuses.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<PodStatusExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())?;
        scope.pod(&self.pod)?;
        for alias in self
            .expect
            .sandboxes
            .iter()
            .flatten()
            .chain(self.expect.ips.iter().flatten())
        {
            scope.sandbox(alias)?;
        }
        if let Some(IpExpect::Of(alias)) = &self.expect.ip {
            scope.sandbox(alias)?;
        }
        let containers = self.expect.containers.iter().flatten();
        let ordered = self.expect.container_order.iter().flatten();
        for alias in containers
            .chain(ordered)
            .chain(self.expect.container.keys())
        {
            scope.container(alias)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let pod = world.ids.pod(&self.pod);
        let result = manager
            .get_pod_status(&pod.uid, &pod.name, &pod.namespace)
            .await;
        let reference = result.as_ref().ok().map(|s| reference_view(world, s));
        world.observe(format!("get_pod_status {}", self.pod), &result, |_| {
            Answer::PodStatus(Box::new(reference.clone().unwrap_or_default()))
        });
        let Some(status) = check_error(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        let expect = &self.expect;
        if let Some(id) = &expect.id {
            expect_eq("id", id, &world.redact(&status.id))?;
        }
        if let Some(name) = &expect.name {
            expect_eq("name", name, &status.name)?;
        }
        if let Some(namespace) = &expect.namespace {
            expect_eq("namespace", namespace, &world.redact(&status.namespace))?;
        }
        if let Some(ip) = &expect.ip {
            let actual = if status.ip.is_empty() {
                "none".to_owned()
            } else {
                world.recorder.redactor.ip_token(&status.ip)
            };
            let wanted = match ip {
                IpExpect::None => "none".to_owned(),
                IpExpect::Of(alias) => format!("<ip:{alias}>"),
            };
            expect_eq("ip", &wanted, &actual)?;
        }
        if let Some(wanted) = &expect.ips {
            let wanted: Vec<String> = wanted.iter().map(|a| format!("<ip:{a}>")).collect();
            let actual: Vec<String> = newest_ready_ips(&status.sandbox_statuses)
                .iter()
                .map(|ip| world.recorder.redactor.ip_token(ip))
                .collect();
            expect_eq("ips", &show(&wanted), &show(&actual))?;
        }
        if let Some(wanted) = &expect.sandboxes {
            let actual: Vec<String> = status
                .sandbox_statuses
                .iter()
                .map(|s| world.alias_of(&s.id))
                .collect();
            expect_eq("sandboxes (newest first)", &show(wanted), &show(&actual))?;
        }
        let in_order: Vec<String> = status
            .container_statuses
            .iter()
            .map(|c| world.alias_of(&c.id.id))
            .collect();
        if let Some(wanted) = &expect.containers {
            expect_eq(
                "containers",
                &show(&sorted(wanted.iter().cloned())),
                &show(&sorted(in_order.iter().cloned())),
            )?;
        }
        if let Some(wanted) = &expect.container_order {
            expect_eq("container_order", &show(wanted), &show(&in_order))?;
        }
        for (alias, want) in &expect.container {
            let field = format!("container.{alias}");
            let got = status
                .container_statuses
                .iter()
                .find(|c| world.alias_of(&c.id.id) == *alias)
                .ok_or_else(|| {
                    crate::world::mismatch(
                        &field,
                        "present",
                        format!("absent (containers: {})", show(&in_order)),
                    )
                })?;
            check_container(&field, want, got)?;
        }
        Ok(())
    }
}

/// The newest sandbox's IPs while it is ready: the kubelet's pod IPs.
fn newest_ready_ips(newest_first: &[v1::PodSandboxStatus]) -> Vec<String> {
    newest_first
        .first()
        .filter(|s| s.state == v1::PodSandboxState::SandboxReady as i32)
        .and_then(|s| s.network.as_ref())
        .filter(|n| !n.ip.is_empty())
        .map(|n| {
            std::iter::once(n.ip.clone())
                .chain(n.additional_ips.iter().map(|ip| ip.ip.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn check_container(
    field: &str,
    want: &ContainerExpect,
    got: &ContainerStatus,
) -> Result<(), StepError> {
    let check = |name: &str, wanted: Option<String>, actual: String| match wanted {
        Some(wanted) => expect_eq(format!("{field}.{name}"), &wanted, &actual),
        None => Ok(()),
    };
    check("name", want.name.clone(), got.name.clone())?;
    check("image", want.image.clone(), got.image.clone())?;
    check(
        "hash",
        want.hash.map(|h| h.to_string()),
        got.hash.to_string(),
    )?;
    check(
        "restart_count",
        want.restart_count.map(|n| n.to_string()),
        got.restart_count.to_string(),
    )?;
    check(
        "state",
        want.state.map(|s| s.0.name().to_owned()),
        got.state.name().to_owned(),
    )?;
    check(
        "exit_code",
        want.exit_code.map(|n| n.to_string()),
        got.exit_code.to_string(),
    )?;
    check("reason", want.reason.clone(), got.reason.clone())?;
    check("message", want.message.clone(), got.message.clone())?;
    let seconds = |name: &str, wanted: Option<i64>, nanos: i64| {
        check(
            name,
            wanted.map(|s| s.to_string()),
            nanos.div_euclid(1_000_000_000).to_string(),
        )
    };
    seconds("created_at", want.created_at, got.created_at)?;
    seconds("started_at", want.started_at, got.started_at)?;
    seconds("finished_at", want.finished_at, got.finished_at)
}
