//! `pod_sandbox_stats`: the runtime's PodSandboxStats for one sandbox (unrecorded), read as the
//! kubelet reads it when it takes pod stats from CRI: the attributes name the sandbox, the pod's
//! CPU, memory, network and process figures are there, and its containers' stats are listed.

use serde::{Deserialize, Serialize};

use super::container_stats::{check_attributes, cpu_reading, memory_reading, Figure, Reading};
use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{expect_eq, mismatch, show, sorted, StepError, World};

/// `pod_sandbox_stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `pod_sandbox_stats` step: `sandbox`, `expect`"
)]
pub struct PodSandboxStats {
    /// Sandbox alias.
    pub sandbox: String,
    /// Expectations; without any, the call must succeed and name the sandbox.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: PodSandboxStatsExpect,
}

/// What `pod_sandbox_stats` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `pod_sandbox_stats` expectation: `error`, `cpu`, `memory`, `network`, `process_count`, `containers`"
)]
pub struct PodSandboxStatsExpect {
    /// The call must fail like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// `linux.cpu.usage_core_nano_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Figure>,
    /// `linux.memory.working_set_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Figure>,
    /// `linux.network.default_interface.rx_bytes` (a named interface).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Figure>,
    /// `linux.process.process_count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_count: Option<Figure>,
    /// Exactly these container aliases are listed in `linux.containers`, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<String>>,
}

/// `rx_bytes` of a default interface that has a name. The block's timestamp is not required:
/// containerd 1.6 leaves it 0.
fn network_reading(network: Option<&v1::NetworkUsage>) -> Reading {
    let interface = network?
        .default_interface
        .as_ref()
        .filter(|i| !i.name.is_empty())?;
    interface.rx_bytes.as_ref().map(|v| v.value)
}

/// `process_count` of a timestamped process block.
fn process_reading(process: Option<&v1::ProcessUsage>) -> Reading {
    let process = process.filter(|p| p.timestamp != 0)?;
    process.process_count.as_ref().map(|v| v.value)
}

impl StepDef for PodSandboxStats {
    const NAME: &'static str = "pod_sandbox_stats";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Reads PodSandboxStats of a sandbox: its attributes, CPU, memory, network and process figures, and which containers it lists.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<PodSandboxStatsExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.sandbox(&self.sandbox)?;
        scope.error(self.expect.error.as_ref())?;
        for alias in self.expect.containers.iter().flatten() {
            scope.container(alias)?;
        }
        let expect = &self.expect;
        let answers = expect.cpu.is_some()
            || expect.memory.is_some()
            || expect.network.is_some()
            || expect.process_count.is_some()
            || expect.containers.is_some();
        if expect.error.is_some() && answers {
            return Err(CheckError::error_and_answers("figures"));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.sandbox(&self.sandbox)?.id.clone();
        let result = world.runtime.pod_sandbox_stats(&id).await;
        let Some(stats) = check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        let stats = stats.ok_or_else(|| mismatch("stats", "stats in the answer", "none"))?;
        let attributes = stats.attributes.as_ref();
        expect_eq(
            "attributes.id",
            &format!("<sandbox:{}>", self.sandbox),
            &world.redact(attributes.map_or("", |a| a.id.as_str())),
        )?;
        let linux = stats.linux.unwrap_or_default();
        let expect = &self.expect;
        if let Some(want) = expect.cpu {
            want.check("cpu", cpu_reading(linux.cpu.as_ref()))?;
        }
        if let Some(want) = expect.memory {
            want.check("memory", memory_reading(linux.memory.as_ref()))?;
        }
        if let Some(want) = expect.network {
            want.check("network", network_reading(linux.network.as_ref()))?;
        }
        if let Some(want) = expect.process_count {
            want.check("process_count", process_reading(linux.process.as_ref()))?;
        }
        if let Some(wanted) = &expect.containers {
            let listed = sorted(
                linux
                    .containers
                    .iter()
                    .map(|c| world.alias_of(c.attributes.as_ref().map_or("", |a| a.id.as_str()))),
            );
            expect_eq(
                "containers",
                &show(&sorted(wanted.iter().cloned())),
                &show(&listed),
            )?;
            for container in &linux.containers {
                let id = container.attributes.as_ref().map_or("", |a| a.id.as_str());
                let alias = world.alias_of(id);
                check_attributes(&format!("containers.{alias}."), container, world, &alias)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_block_counts_only_with_a_named_default_interface() {
        let named = v1::NetworkUsage {
            timestamp: 0,
            default_interface: Some(v1::NetworkInterfaceUsage {
                name: "eth0".to_owned(),
                rx_bytes: Some(v1::UInt64Value { value: 3 }),
                ..Default::default()
            }),
            interfaces: Vec::new(),
        };
        assert_eq!(network_reading(Some(&named)), Some(3));
        let mut unnamed = named.clone();
        if let Some(interface) = unnamed.default_interface.as_mut() {
            interface.name.clear();
        }
        assert_eq!(network_reading(Some(&unnamed)), None);
        assert_eq!(network_reading(None), None);
    }
}
