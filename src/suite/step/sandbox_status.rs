//! `sandbox_status`: the runtime's `PodSandboxStatus` of one of the case's sandboxes (by full id
//! or a prefix of it), checked field by field: state, creation time, pod IP, and whether the
//! metadata, labels, annotations and namespace options come back exactly as they were sent.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{check_call, is_default, CheckError, ErrorExpect, Kind, SandboxState, Scope, StepDef};
use crate::cri::{labels, v1};
use crate::world::{expect_eq, mismatch, StepError, World};

/// `sandbox_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `sandbox_status` step: `sandbox`, `id_prefix`, `expect`"
)]
pub struct SandboxStatus {
    /// Sandbox alias.
    pub sandbox: String,
    /// Ask by the first this many characters of the id instead of the whole id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<usize>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: SandboxStatusExpect,
}

/// Whether a value is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Presence {
    /// Set, not empty.
    Present,
    /// Empty.
    Absent,
}

/// What `sandbox_status` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `sandbox_status` expectation: `error`, `state`, `created`, `ip`, `echoes_config`, `labels`, `annotations`"
)]
pub struct SandboxStatusExpect {
    /// The call fails like this (e.g. `code: NotFound` after removal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// The sandbox's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SandboxState>,
    /// `created_at` is set (non-zero and not in the future), or is zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// Whether the status reports a pod IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<Presence>,
    /// Metadata and namespace options are those sent; labels and annotations hold every entry
    /// sent (a runtime may add its own).
    #[serde(default, skip_serializing_if = "is_default")]
    pub echoes_config: bool,
    /// The labels besides the harness's own (run, case and pod labels): at least these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The annotations: at least these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The label keys the harness writes itself, which `labels:` expectations leave out.
const OWN_LABELS: [&str; 7] = [
    labels::RUN_ID,
    labels::CASE,
    labels::MANAGED,
    labels::POD_UID,
    labels::POD_NAME,
    labels::POD_NAMESPACE,
    labels::CONTAINER_NAME,
];

/// The labels of `all` the suite wrote itself: all but the harness's own.
pub(super) fn suite_labels(all: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    all.iter()
        .filter(|(k, _)| !OWN_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A map as suites write it, `{a: b, c: d}`.
pub(super) fn show_map(map: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", pairs.join(", "))
}

/// Checks that a map the runtime echoes holds every entry sent. The contract gives a subset:
/// a runtime may add keys of its own, which are noted as observed, never required or refused.
pub(super) fn expect_map(
    world: &mut World,
    field: &str,
    expected: &BTreeMap<String, String>,
    actual: &BTreeMap<String, String>,
) -> Result<(), StepError> {
    let missing = expected
        .iter()
        .any(|(key, value)| actual.get(key) != Some(value));
    if missing {
        return Err(mismatch(
            field,
            format!("at least {}", show_map(expected)),
            show_map(actual),
        ));
    }
    let added: BTreeMap<String, String> = actual
        .iter()
        .filter(|(key, _)| !expected.contains_key(*key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !added.is_empty() {
        world.note_observed(format!("{field}: the runtime added {}", show_map(&added)));
    }
    Ok(())
}

/// Checks a CRI timestamp (Unix nanoseconds) is set and not later than now.
pub(super) fn expect_set_time(field: &str, nanos: i64) -> Result<(), StepError> {
    let now = now_nanos();
    if nanos <= 0 {
        return Err(mismatch(field, "set", nanos.to_string()));
    }
    if i128::from(nanos) > now {
        return Err(mismatch(
            field,
            "a time not in the future",
            format!("{nanos}, {} ns after now", i128::from(nanos) - now),
        ));
    }
    Ok(())
}

/// Now, in Unix nanoseconds.
pub(super) fn now_nanos() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// The id to ask by: the whole id, or its first `prefix` characters.
pub(super) fn by_prefix(id: &str, prefix: Option<usize>) -> &str {
    match prefix {
        Some(n) => id.get(..n).unwrap_or(id),
        None => id,
    }
}

/// Checks that an id prefix length asks for something shorter than an id and not empty.
pub(super) fn check_prefix(prefix: Option<usize>) -> Result<(), CheckError> {
    match prefix {
        Some(0) => Err(CheckError::rule(
            "id_prefix",
            "0 characters name nothing; omit it for the whole id",
        )),
        Some(n) if n >= 64 => Err(CheckError::rule(
            "id_prefix",
            format!("{n} characters is the whole id; omit it or give fewer than 64"),
        )),
        _ => Ok(()),
    }
}

/// The CRI state of a suite's sandbox state.
pub(super) fn sandbox_state(state: SandboxState) -> v1::PodSandboxState {
    match state {
        SandboxState::Ready => v1::PodSandboxState::SandboxReady,
        SandboxState::NotReady => v1::PodSandboxState::SandboxNotready,
    }
}

/// A sandbox state as suites write it.
pub(super) fn sandbox_state_name(state: i32) -> &'static str {
    match v1::PodSandboxState::try_from(state) {
        Ok(v1::PodSandboxState::SandboxReady) => "ready",
        Ok(v1::PodSandboxState::SandboxNotready) => "not_ready",
        Err(_) => "unknown",
    }
}

impl StepDef for SandboxStatus {
    const NAME: &'static str = "sandbox_status";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "CRI `PodSandboxStatus` of a sandbox (by id or id prefix): state, times, IP, echoed config.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<SandboxStatusExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.sandbox(&self.sandbox)?;
        check_prefix(self.id_prefix)?;
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let sandbox = world.aliases.sandbox(&self.sandbox)?.clone();
        let asked = by_prefix(&sandbox.id, self.id_prefix);
        let result = world.runtime.pod_sandbox_status(asked).await;
        let Some(answer) = check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        let status = answer
            .status
            .ok_or_else(|| mismatch("status", "a status", "an answer without one".to_owned()))?;
        let expect = &self.expect;
        expect_eq(
            "id",
            &world.alias_of(&sandbox.id),
            &world.alias_of(&status.id),
        )?;
        if let Some(state) = expect.state {
            expect_eq(
                "state",
                sandbox_state_name(sandbox_state(state) as i32),
                sandbox_state_name(status.state),
            )?;
        }
        match expect.created {
            Some(true) => expect_set_time("created_at", status.created_at)?,
            Some(false) => expect_eq("created_at", "0", &status.created_at.to_string())?,
            None => {}
        }
        if let Some(ip) = expect.ip {
            let actual = status.network.as_ref().map_or("", |n| n.ip.as_str());
            let presence = if actual.is_empty() {
                Presence::Absent
            } else {
                Presence::Present
            };
            if presence != ip {
                return Err(mismatch(
                    "ip",
                    ip.to_string(),
                    format!("{presence} ({actual:?})"),
                ));
            }
        }
        if expect.echoes_config {
            echoes(world, &sandbox.config, &status)?;
        }
        if let Some(wanted) = &expect.labels {
            expect_map(world, "labels", wanted, &suite_labels(&status.labels))?;
        }
        if let Some(wanted) = &expect.annotations {
            expect_map(world, "annotations", wanted, &status.annotations)?;
        }
        Ok(())
    }
}

/// Checks that the status repeats the config the sandbox was run with.
fn echoes(
    world: &mut World,
    config: &v1::PodSandboxConfig,
    status: &v1::PodSandboxStatus,
) -> Result<(), StepError> {
    let Some(sent) = &config.metadata else {
        return Err(StepError::Unsupported(
            "echoes_config: the sandbox was seeded, not run, so no config was sent".to_owned(),
        ));
    };
    let got = status.metadata.clone().unwrap_or_default();
    // Messages are redacted where they are reported, so raw values are compared and shown.
    expect_eq("metadata.name", &sent.name, &got.name)?;
    expect_eq("metadata.namespace", &sent.namespace, &got.namespace)?;
    expect_eq("metadata.uid", &sent.uid, &got.uid)?;
    expect_eq(
        "metadata.attempt",
        &sent.attempt.to_string(),
        &got.attempt.to_string(),
    )?;
    expect_map(world, "labels", &config.labels, &status.labels)?;
    expect_map(
        world,
        "annotations",
        &config.annotations,
        &status.annotations,
    )?;
    let sent_options = config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|s| s.namespace_options.clone())
        .unwrap_or_default();
    let got_options = status
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.clone())
        .unwrap_or_default();
    let show = |o: &v1::NamespaceOption| {
        let mode = |m: i32| v1::NamespaceMode::try_from(m).map_or("?", |m| m.as_str_name());
        format!(
            "network {}, pid {}, ipc {}",
            mode(o.network),
            mode(o.pid),
            mode(o.ipc)
        )
    };
    if sent_options != got_options {
        return Err(mismatch(
            "namespace_options",
            show(&sent_options),
            show(&got_options),
        ));
    }
    Ok(())
}
