//! Container and pod sandbox stats on the mock, shaped as containerd 1.6 answers them: every
//! container listed with its attributes and writable layer, CPU and memory only while its task
//! runs, writable layers as last measured (nothing until the first measurement, 10 s after
//! creation); pod sandbox stats only for READY sandboxes. The figures are made up but plausible and
//! stable: each object gets a CPU rate and memory footprint derived from its id, and CPU time
//! grows with how long it has run by the mock's clock, so repeated calls only ever count up.

use sha2::{Digest, Sha256};

use super::error::RpcError;
use super::image_service::IMAGE_FS_MOUNTPOINT;
use super::index::Filter;
use super::state::{is_host_network, selector, Container, Sandbox, State};
use super::{Defect, Freedom, Inner, MockRuntime};
use crate::cri::v1;

use v1::ContainerState::{ContainerExited, ContainerRunning};
use v1::PodSandboxState::SandboxReady;

const MIB: u64 = 1024 * 1024;
const PAGE: u64 = 4096;
const NANOS_PER_SECOND: u64 = 1_000_000_000;
/// A milli-core: one thousandth of a CPU, in nano-cores.
const MILLICORE: u64 = 1_000_000;

/// The pause process every sandbox runs: a tenth of a milli-core, half a MiB.
const PAUSE_MILLICORES_X10: u64 = 1;
const PAUSE_WORKING_SET: u64 = 512 * 1024;

/// How often containerd measures writable layers (its default `stats_collect_period`).
const LAYER_SYNC_PERIOD: u64 = 10 * NANOS_PER_SECOND;

/// The interface containerd reports pod network stats for.
const DEFAULT_INTERFACE: &str = "eth0";

/// What an object's id fixes about its made-up figures.
#[derive(Debug, Clone, Copy)]
struct Profile {
    /// CPU it burns while running, in tenths of a milli-core (1 to 100 milli-cores).
    millicores_x10: u64,
    /// Memory its process keeps resident, page-aligned (8 to 64 MiB).
    working_set: u64,
    /// Page cache counted in its usage but not its working set (up to 4 MiB).
    inactive_file: u64,
    /// Its writable layer (4 KiB to 256 KiB, 1 to 32 inodes).
    layer_bytes: u64,
    layer_inodes: u64,
    /// Bytes per second its pod network receives and sends.
    rx_rate: u64,
    tx_rate: u64,
}

impl Profile {
    fn of(id: &str) -> Self {
        let digest = Sha256::digest(id.as_bytes());
        let word = |i: usize| {
            let mut bytes = [0_u8; 8];
            bytes.copy_from_slice(&digest[i * 8..i * 8 + 8]);
            u64::from_le_bytes(bytes)
        };
        let (a, b, c, d) = (word(0), word(1), word(2), word(3));
        Self {
            millicores_x10: 10 + a % 991,
            working_set: 8 * MIB + (b % (56 * MIB / PAGE)) * PAGE,
            inactive_file: (c % (4 * MIB / PAGE)) * PAGE,
            layer_bytes: (1 + (c >> 32) % 64) * PAGE,
            layer_inodes: 1 + (d % 32),
            rx_rate: 1024 + (d >> 8) % (15 * 1024),
            tx_rate: 256 + (d >> 24) % (4 * 1024),
        }
    }
}

/// Nanoseconds from `from` to `to`, none if the clock stands before `from`.
fn elapsed(from: i64, to: i64) -> u64 {
    u64::try_from(to.saturating_sub(from)).unwrap_or(0)
}

/// `nanos` of running at `millicores_x10` tenths of a milli-core, in core-nanoseconds.
fn cpu_time(nanos: u64, millicores_x10: u64) -> u64 {
    let core_nanos = u128::from(nanos) * u128::from(millicores_x10) / 10_000;
    u64::try_from(core_nanos).unwrap_or(u64::MAX)
}

/// How long the container's process has run by `now`: until it exited, if it has.
fn running_nanos(container: &Container, now: i64) -> u64 {
    let status = &container.status;
    if status.started_at == 0 {
        return 0;
    }
    if status.state == ContainerRunning as i32 {
        elapsed(status.started_at, now)
    } else if status.state == ContainerExited as i32 {
        elapsed(status.started_at, status.finished_at)
    } else {
        0
    }
}

/// CPU time the container has used by `now`, in core-nanoseconds.
pub(crate) fn cpu_nanos(container: &Container, now: i64) -> u64 {
    cpu_time(
        running_nanos(container, now),
        Profile::of(&container.status.id).millicores_x10,
    )
}

fn value(value: u64) -> Option<v1::UInt64Value> {
    Some(v1::UInt64Value { value })
}

fn is_running(container: &Container) -> bool {
    container.status.state == ContainerRunning as i32
}

/// Memory figures of a footprint under an optional limit, in containerd's shape (available
/// bytes are 0 when unlimited).
fn memory(
    now: i64,
    working_set: u64,
    inactive_file: u64,
    limit: i64,
    faults: u64,
) -> v1::MemoryUsage {
    let limit = u64::try_from(limit).unwrap_or(0);
    v1::MemoryUsage {
        timestamp: now,
        working_set_bytes: value(working_set),
        available_bytes: value(limit.saturating_sub(working_set)),
        usage_bytes: value(working_set + inactive_file),
        rss_bytes: value(working_set / 4 * 3 / PAGE * PAGE),
        page_faults: value(working_set / PAGE + faults),
        major_page_faults: value(0),
        psi: None,
    }
}

/// A container's writable layer at `now`. containerd measures layers in the background, once
/// every `stats_collect_period` (10 s by default), and answers from the last measurement: until
/// a container's first one its layer reads 0 bytes and 0 inodes at timestamp 0. The mock
/// measures each layer every period from the container's creation.
fn writable_layer(profile: &Profile, created_at: i64, now: i64) -> v1::FilesystemUsage {
    let periods = elapsed(created_at, now) / LAYER_SYNC_PERIOD;
    let (timestamp, bytes, inodes) = if periods == 0 {
        (0, 0, 0)
    } else {
        let measured = periods.saturating_mul(LAYER_SYNC_PERIOD);
        let at = created_at.saturating_add(i64::try_from(measured).unwrap_or(i64::MAX));
        (at, profile.layer_bytes, profile.layer_inodes)
    };
    v1::FilesystemUsage {
        timestamp,
        fs_id: Some(v1::FilesystemIdentifier {
            mountpoint: IMAGE_FS_MOUNTPOINT.to_owned(),
        }),
        used_bytes: value(bytes),
        inodes_used: value(inodes),
    }
}

/// One container's stats at `now`.
fn container_stats(container: &Container, now: i64) -> v1::ContainerStats {
    let status = &container.status;
    let profile = Profile::of(&status.id);
    let (cpu, memory) = if is_running(container) {
        let running = running_nanos(container, now);
        let cpu = v1::CpuUsage {
            timestamp: now,
            usage_core_nano_seconds: value(cpu_time(running, profile.millicores_x10)),
            // The rate is constant, so any two samples give this average; containerd answers
            // 0 on a container's first sample, having nothing to average over yet.
            usage_nano_cores: value(profile.millicores_x10 * MILLICORE / 10),
            psi: None,
        };
        let faults = running / NANOS_PER_SECOND;
        let memory = memory(
            now,
            profile.working_set,
            profile.inactive_file,
            container.memory_limit,
            faults,
        );
        (Some(cpu), Some(memory))
    } else {
        // No task, no metrics: containerd lists the container without CPU and memory.
        (None, None)
    };
    v1::ContainerStats {
        attributes: Some(v1::ContainerAttributes {
            id: status.id.clone(),
            metadata: status.metadata.clone(),
            labels: status.labels.clone(),
            annotations: status.annotations.clone(),
        }),
        cpu,
        memory,
        writable_layer: Some(writable_layer(&profile, status.created_at, now)),
        swap: None,
        io: None,
    }
}

/// A READY sandbox's stats at `now`: its pause process plus its containers. `stamped_only`
/// leaves the pod's CPU and memory blocks with their timestamp alone, as a runtime that
/// finds no cgroup of the pod's own (CRI-O under cgroupfs) answers them.
fn sandbox_stats(
    state: &State,
    sandbox: &Sandbox,
    now: i64,
    stamped_only: bool,
) -> v1::PodSandboxStats {
    let status = &sandbox.status;
    let age = elapsed(status.created_at, now);
    let containers: Vec<&Container> = state
        .containers
        .in_group(&status.id)
        .map(|(_, c)| c)
        .collect();
    let running: Vec<&Container> = containers
        .iter()
        .copied()
        .filter(|c| is_running(c))
        .collect();
    let cpu_used = containers
        .iter()
        .map(|c| cpu_nanos(c, now))
        .fold(cpu_time(age, PAUSE_MILLICORES_X10), u64::saturating_add)
        .saturating_add(sandbox.retired_cpu_nanos);
    let rate = running
        .iter()
        .map(|c| Profile::of(&c.status.id).millicores_x10)
        .sum::<u64>()
        + PAUSE_MILLICORES_X10;
    let profiles: Vec<Profile> = running.iter().map(|c| Profile::of(&c.status.id)).collect();
    let working_set = PAUSE_WORKING_SET + profiles.iter().map(|p| p.working_set).sum::<u64>();
    let inactive_file = profiles.iter().map(|p| p.inactive_file).sum::<u64>();
    let faults = running
        .iter()
        .map(|c| running_nanos(c, now) / NANOS_PER_SECOND)
        .sum::<u64>();
    // containerd reads the pod's network namespace; a host-network pod has none it reports.
    let network = (!is_host_network(status)).then(|| {
        let own = Profile::of(&status.id);
        let seconds = age / NANOS_PER_SECOND;
        v1::NetworkUsage {
            // containerd 1.6 fills in the interfaces but leaves the block's timestamp unset.
            timestamp: 0,
            default_interface: Some(v1::NetworkInterfaceUsage {
                name: DEFAULT_INTERFACE.to_owned(),
                rx_bytes: value(seconds.saturating_mul(own.rx_rate)),
                rx_errors: value(0),
                tx_bytes: value(seconds.saturating_mul(own.tx_rate)),
                tx_errors: value(0),
            }),
            interfaces: Vec::new(),
        }
    });
    let (cpu, memory) = if stamped_only {
        (
            v1::CpuUsage {
                timestamp: now,
                ..Default::default()
            },
            v1::MemoryUsage {
                timestamp: now,
                ..Default::default()
            },
        )
    } else {
        (
            v1::CpuUsage {
                timestamp: now,
                usage_core_nano_seconds: value(cpu_used),
                usage_nano_cores: value(rate * MILLICORE / 10),
                psi: None,
            },
            memory(now, working_set, inactive_file, 0, faults),
        )
    };
    v1::PodSandboxStats {
        attributes: Some(v1::PodSandboxAttributes {
            id: status.id.clone(),
            metadata: status.metadata.clone(),
            labels: status.labels.clone(),
            annotations: status.annotations.clone(),
        }),
        linux: Some(v1::LinuxPodSandboxStats {
            cpu: Some(cpu),
            memory: Some(memory),
            network,
            // containerd counts the processes of running containers (one each here), not the
            // pause process.
            process: Some(v1::ProcessUsage {
                timestamp: now,
                process_count: value(running.len() as u64),
            }),
            containers: containers.iter().map(|c| container_stats(c, now)).collect(),
            io: None,
        }),
        windows: None,
    }
}

pub(crate) fn container_stats_rpc(
    inner: &mut Inner,
    request: v1::ContainerStatsRequest,
) -> Result<v1::ContainerStatsResponse, RpcError> {
    let other_code = MockRuntime::takes(inner, Freedom::RemovedStatsUnknown);
    let key = inner
        .state
        .find_container_tersely(&request.container_id)
        .map_err(|err| match err {
            RpcError::NoSuchContainer { id } if other_code => RpcError::IdDoesNotExist {
                kind: "container",
                id,
            },
            other => other,
        })?;
    let container = &inner.state.containers[key];
    if !is_running(container) {
        // containerd asks the task service for the one task's metrics and gets none.
        return Err(RpcError::NoTaskMetrics {
            id: container.status.id.clone(),
        });
    }
    let now = inner.clock.now();
    Ok(v1::ContainerStatsResponse {
        stats: Some(container_stats(&inner.state.containers[key], now)),
    })
}

pub(crate) fn list_container_stats(
    inner: &mut Inner,
    request: v1::ListContainerStatsRequest,
) -> Result<v1::ListContainerStatsResponse, RpcError> {
    let now = inner.clock.now();
    let ignores_labels = MockRuntime::has(inner, Defect::ListContainerStatsIgnoresLabelFilter);
    let state = &inner.state;
    let mut filter = request.filter.unwrap_or_default();
    if ignores_labels {
        filter.label_selector.clear();
    }
    // containerd resolves both ids among its own objects: the sandbox id only among sandboxes.
    let wanted = Filter {
        id: (!filter.id.is_empty()).then(|| state.container_filter_id(&filter.id)),
        group: (!filter.pod_sandbox_id.is_empty())
            .then(|| state.sandbox_filter_id(&filter.pod_sandbox_id)),
        state: None,
        labels: selector(&filter.label_selector),
    };
    let mut stats: Vec<v1::ContainerStats> = state
        .containers
        .select(wanted)
        .map(|(_, c)| container_stats(c, now))
        .collect();
    if MockRuntime::takes(inner, Freedom::ListsNewestFirst) {
        stats.reverse();
    }
    Ok(v1::ListContainerStatsResponse { stats })
}

pub(crate) fn pod_sandbox_stats(
    inner: &mut Inner,
    request: v1::PodSandboxStatsRequest,
) -> Result<v1::PodSandboxStatsResponse, RpcError> {
    let given = request.pod_sandbox_id;
    let key = inner.state.find_sandbox(&given).map_err(|err| match err {
        RpcError::SandboxNotFound { id } => RpcError::NoSuchSandbox { id },
        other => other,
    })?;
    let sandbox = &inner.state.sandboxes[key];
    if sandbox.status.state != SandboxReady as i32 {
        return Err(RpcError::SandboxNotReady {
            given,
            id: sandbox.status.id.clone(),
        });
    }
    let now = inner.clock.now();
    let stamped_only = MockRuntime::takes(inner, Freedom::PodStatsTimestampOnly);
    let sandbox = &inner.state.sandboxes[key];
    Ok(v1::PodSandboxStatsResponse {
        stats: Some(sandbox_stats(&inner.state, sandbox, now, stamped_only)),
    })
}

pub(crate) fn list_pod_sandbox_stats(
    inner: &mut Inner,
    request: v1::ListPodSandboxStatsRequest,
) -> Result<v1::ListPodSandboxStatsResponse, RpcError> {
    let now = inner.clock.now();
    let stamped_only = MockRuntime::takes(inner, Freedom::PodStatsTimestampOnly);
    let newest_first = MockRuntime::takes(inner, Freedom::ListsNewestFirst);
    let state = &inner.state;
    let filter = request.filter.unwrap_or_default();
    // Only READY sandboxes have stats. containerd 1.6 skips the others when a filter is given
    // and fails the whole list on them when none is; the mock skips them either way, as later
    // containerd releases do, so one stopped pod does not hide every other pod's stats.
    let wanted = Filter {
        id: (!filter.id.is_empty()).then(|| state.sandbox_filter_id(&filter.id)),
        group: None,
        state: Some(SandboxReady as i32),
        labels: selector(&filter.label_selector),
    };
    let mut stats: Vec<v1::PodSandboxStats> = state
        .sandboxes
        .select(wanted)
        .map(|(_, s)| sandbox_stats(state, s, now, stamped_only))
        .collect();
    if newest_first {
        stats.reverse();
    }
    Ok(v1::ListPodSandboxStatsResponse { stats })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_stay_within_their_ranges() {
        for n in 0..500 {
            let p = Profile::of(&format!("id-{n}"));
            assert!((10..=1000).contains(&p.millicores_x10), "{p:?}");
            assert!((8 * MIB..64 * MIB).contains(&p.working_set), "{p:?}");
            assert_eq!(p.working_set % PAGE, 0);
            assert!(p.inactive_file < 4 * MIB && p.layer_inodes >= 1, "{p:?}");
        }
    }

    #[test]
    fn cpu_time_counts_a_core_fraction_of_elapsed_time() {
        // 100 milli-cores for 2 s is 0.2 core-seconds.
        assert_eq!(cpu_time(2 * NANOS_PER_SECOND, 1000), 200_000_000);
        assert_eq!(cpu_time(0, 1000), 0);
        assert_eq!(elapsed(10, 5), 0);
    }

    #[test]
    fn a_writable_layer_reads_zero_until_its_first_measurement() {
        let profile = Profile::of("layer");
        let created = 5 * NANOS_PER_SECOND as i64;
        let fresh = writable_layer(&profile, created, created + 9 * NANOS_PER_SECOND as i64);
        assert_eq!(
            (fresh.timestamp, fresh.used_bytes, fresh.inodes_used),
            (0, value(0), value(0))
        );
        assert!(fresh
            .fs_id
            .is_some_and(|fs| fs.mountpoint == IMAGE_FS_MOUNTPOINT));
        let measured = writable_layer(&profile, created, created + 25 * NANOS_PER_SECOND as i64);
        assert_eq!(measured.timestamp, created + 20 * NANOS_PER_SECOND as i64);
        assert_eq!(measured.used_bytes, value(profile.layer_bytes));
        assert_eq!(measured.inodes_used, value(profile.layer_inodes));
        assert!(profile.layer_bytes > 0 && profile.layer_inodes > 0);
    }

    #[test]
    fn memory_is_available_only_under_a_limit() {
        let unlimited = memory(1, 8 * MIB, MIB, 0, 0);
        let limited = memory(1, 8 * MIB, MIB, 64 * MIB as i64, 0);
        assert_eq!(unlimited.available_bytes, value(0));
        assert_eq!(limited.available_bytes, value(56 * MIB));
        assert_eq!(limited.usage_bytes, value(9 * MIB));
    }
}
