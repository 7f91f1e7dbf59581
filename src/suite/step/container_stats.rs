//! `container_stats`: the runtime's ContainerStats for one container (unrecorded), read the way
//! the kubelet's CRI stats provider reads it: the attributes name the container, and the CPU,
//! memory and writable-layer figures are there. Optionally the CPU time is read again until it
//! grows, which only a live cgroup (or the mock's clock) can show. The figure checks live here
//! and serve `list_container_stats` and `pod_sandbox_stats` too.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{expect_eq, mismatch, StepError, World};

/// How often a growth check reads again: short, so a busy container passes in a few reads.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// `container_stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_stats` step: `container`, `expect`"
)]
pub struct ContainerStats {
    /// Container alias.
    pub container: String,
    /// Expectations; without any, the call must succeed and name the container.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ContainerStatsExpect,
}

/// What `container_stats` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_stats` expectation: `error`, `cpu`, `memory`, `writable_layer`, `cpu_grows_within_ms`"
)]
pub struct ContainerStatsExpect {
    /// The call must fail like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// `cpu.usage_core_nano_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Figure>,
    /// `memory.working_set_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Figure>,
    /// `writable_layer.used_bytes` (and its filesystem and inodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writable_layer: Option<Figure>,
    /// A later read's `cpu.usage_core_nano_seconds` must exceed this one's within this many
    /// milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_grows_within_ms: Option<u64>,
}

/// What a stats figure must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Figure {
    /// Not reported: no block, or the block without the figure.
    Absent,
    /// Reported, with a timestamp, any value (0 included).
    Present,
    /// Reported and above 0.
    Nonzero,
}

/// A figure as read from an answer: `None` when it is not reported.
pub(crate) type Reading = Option<u64>;

impl Figure {
    /// Checks `reading` as field `field`.
    pub(crate) fn check(self, field: &str, reading: Reading) -> Result<(), StepError> {
        let holds = match (self, reading) {
            (Figure::Absent, None) => true,
            (Figure::Present, Some(_)) => true,
            (Figure::Nonzero, Some(value)) => value > 0,
            _ => false,
        };
        if holds {
            return Ok(());
        }
        let actual = reading.map_or_else(|| "absent".to_owned(), |value| value.to_string());
        Err(mismatch(field, self.to_string(), actual))
    }
}

/// `usage_core_nano_seconds` of a CPU block that has a timestamp.
pub(crate) fn cpu_reading(cpu: Option<&v1::CpuUsage>) -> Reading {
    let cpu = cpu.filter(|c| c.timestamp != 0)?;
    cpu.usage_core_nano_seconds.as_ref().map(|v| v.value)
}

/// `working_set_bytes` of a memory block that has a timestamp.
pub(crate) fn memory_reading(memory: Option<&v1::MemoryUsage>) -> Reading {
    let memory = memory.filter(|m| m.timestamp != 0)?;
    memory.working_set_bytes.as_ref().map(|v| v.value)
}

/// `used_bytes` of a writable layer that names its filesystem and counts inodes. Its timestamp
/// is not required: containerd reports the layer with timestamp 0 until its snapshot syncer
/// has measured it.
pub(crate) fn layer_reading(layer: Option<&v1::FilesystemUsage>) -> Reading {
    let layer = layer?;
    let named = layer
        .fs_id
        .as_ref()
        .is_some_and(|fs| !fs.mountpoint.is_empty());
    if !named || layer.inodes_used.is_none() {
        return None;
    }
    layer.used_bytes.as_ref().map(|v| v.value)
}

/// Checks the figures one expectation names on one container's stats, fields prefixed with
/// `prefix` (`""` or `stats.web.`).
pub(crate) fn check_figures(
    prefix: &str,
    stats: &v1::ContainerStats,
    cpu: Option<Figure>,
    memory: Option<Figure>,
    writable_layer: Option<Figure>,
) -> Result<(), StepError> {
    if let Some(want) = cpu {
        want.check(&format!("{prefix}cpu"), cpu_reading(stats.cpu.as_ref()))?;
    }
    if let Some(want) = memory {
        want.check(
            &format!("{prefix}memory"),
            memory_reading(stats.memory.as_ref()),
        )?;
    }
    if let Some(want) = writable_layer {
        want.check(
            &format!("{prefix}writable_layer"),
            layer_reading(stats.writable_layer.as_ref()),
        )?;
    }
    Ok(())
}

/// Checks that stats name the container they were asked for: its id and its name, what the
/// kubelet matches them to its pods by.
pub(crate) fn check_attributes(
    prefix: &str,
    stats: &v1::ContainerStats,
    world: &World,
    alias: &str,
) -> Result<(), StepError> {
    let container = world.aliases.container(alias)?;
    let attributes = stats.attributes.as_ref();
    let id = attributes.map_or("", |a| a.id.as_str());
    expect_eq(
        format!("{prefix}attributes.id"),
        &format!("<container:{alias}>"),
        &world.redact(id),
    )?;
    let name = attributes
        .and_then(|a| a.metadata.as_ref())
        .map_or("", |m| m.name.as_str());
    expect_eq(
        format!("{prefix}attributes.metadata.name"),
        &container.name,
        name,
    )
}

/// Reads the container's CPU time until it exceeds `first` or `within` has passed.
async fn check_cpu_grows(
    world: &World,
    id: &str,
    first: Reading,
    within: Duration,
) -> Result<(), StepError> {
    let Some(first) = first else {
        return Err(mismatch(
            "cpu_grows_within_ms",
            "a first cpu.usage_core_nano_seconds reading",
            "absent",
        ));
    };
    let started = Instant::now();
    let mut last = first;
    loop {
        crate::timing::pause(POLL).await;
        let stats = world.runtime.container_stats(id).await?;
        if let Some(now) = cpu_reading(stats.as_ref().and_then(|s| s.cpu.as_ref())) {
            last = now;
            if now > first {
                return Ok(());
            }
        }
        if started.elapsed() >= within {
            return Err(mismatch(
                "cpu_grows_within_ms",
                format!(
                    "cpu.usage_core_nano_seconds above {first} within {} ms",
                    within.as_millis()
                ),
                format!("{last} after {} ms", started.elapsed().as_millis()),
            ));
        }
    }
}

impl StepDef for ContainerStats {
    const NAME: &'static str = "container_stats";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Reads ContainerStats of a container: its attributes, CPU, memory and writable layer, and optionally that its CPU time grows.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ContainerStatsExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        scope.error(self.expect.error.as_ref())?;
        let figures = self.expect.cpu.is_some()
            || self.expect.memory.is_some()
            || self.expect.writable_layer.is_some()
            || self.expect.cpu_grows_within_ms.is_some();
        if self.expect.error.is_some() && figures {
            return Err(CheckError::error_and_answers("figures"));
        }
        if self.expect.cpu_grows_within_ms == Some(0) {
            return Err(CheckError::zero("cpu_grows_within_ms"));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let result = world.runtime.container_stats(&id).await;
        let Some(stats) = check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        let stats = stats.ok_or_else(|| mismatch("stats", "stats in the answer", "none"))?;
        check_attributes("", &stats, world, &self.container)?;
        let expect = &self.expect;
        check_figures("", &stats, expect.cpu, expect.memory, expect.writable_layer)?;
        if let Some(ms) = expect.cpu_grows_within_ms {
            let first = cpu_reading(stats.cpu.as_ref());
            check_cpu_grows(world, &id, first, Duration::from_millis(ms)).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn value(value: u64) -> Option<v1::UInt64Value> {
        Some(v1::UInt64Value { value })
    }

    #[rstest]
    #[case::absent_holds_without_a_reading(Figure::Absent, None, true)]
    #[case::absent_fails_on_a_zero(Figure::Absent, Some(0), false)]
    #[case::present_takes_a_zero(Figure::Present, Some(0), true)]
    #[case::present_fails_without_a_reading(Figure::Present, None, false)]
    #[case::nonzero_fails_on_a_zero(Figure::Nonzero, Some(0), false)]
    #[case::nonzero_takes_a_positive_value(Figure::Nonzero, Some(7), true)]
    fn a_figure_holds_only_for_the_readings_it_names(
        #[case] want: Figure,
        #[case] reading: Reading,
        #[case] holds: bool,
    ) {
        assert_eq!(want.check("cpu", reading).is_ok(), holds);
    }

    #[test]
    fn a_failed_figure_says_what_was_read() {
        let err = Figure::Nonzero.check("stats.a.cpu", Some(0)).unwrap_err();
        assert_eq!(err.to_string(), "stats.a.cpu: expected nonzero, got 0");
        let err = Figure::Present.check("memory", None).unwrap_err();
        assert_eq!(err.to_string(), "memory: expected present, got absent");
    }

    #[test]
    fn a_cpu_block_without_a_timestamp_reads_as_absent() {
        let stamped = v1::CpuUsage {
            timestamp: 5,
            usage_core_nano_seconds: value(9),
            ..Default::default()
        };
        let unstamped = v1::CpuUsage {
            timestamp: 0,
            ..stamped
        };
        assert_eq!(cpu_reading(Some(&stamped)), Some(9));
        assert_eq!(cpu_reading(Some(&unstamped)), None);
        assert_eq!(cpu_reading(None), None);
    }

    #[test]
    fn a_writable_layer_must_name_its_filesystem_and_count_inodes() {
        let layer = v1::FilesystemUsage {
            timestamp: 0,
            fs_id: Some(v1::FilesystemIdentifier {
                mountpoint: "/var/lib/containerd".to_owned(),
            }),
            used_bytes: value(0),
            inodes_used: value(0),
        };
        assert_eq!(layer_reading(Some(&layer)), Some(0));
        let unnamed = v1::FilesystemUsage {
            fs_id: None,
            ..layer.clone()
        };
        assert_eq!(layer_reading(Some(&unnamed)), None);
        let uncounted = v1::FilesystemUsage {
            inodes_used: None,
            ..layer
        };
        assert_eq!(layer_reading(Some(&uncounted)), None);
    }
}
