//! The mock's object model: pod sandboxes and containers kept as the CRI statuses it answers
//! with, pulled images, the names they reserve, and the counters that mint ids and pod IPs.
//! Objects are kept in insertion order, which is the order lists answer in (oldest first), in
//! tables indexed by id, state, label and sandbox (see `index`). Timed exits wait here until
//! the mock's clock reaches them.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

use super::error::RpcError;
use super::index::{prefixed, Indexed, Key, Lookup, Table};
use crate::cri::v1;

/// A pod sandbox as the mock holds it.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    /// Everything PodSandboxStatus answers.
    pub(crate) status: v1::PodSandboxStatus,
    /// The name this sandbox reserves, if it holds one (seeded ones may not).
    pub(crate) name: Option<String>,
    /// CPU time of its containers already removed, in nanoseconds, so the pod's CPU usage
    /// never goes down when one goes (a pod cgroup keeps counting what its children used).
    pub(crate) retired_cpu_nanos: u64,
    /// The container ports of its config's port mappings: the ports its pod "listens" on for
    /// PortForward (none for seeded sandboxes).
    pub(crate) ports: Vec<u16>,
    /// What its containers see of the pod: its hostname and the resolv.conf the runtime
    /// writes for it (empty for seeded sandboxes).
    pub(crate) pod: super::process::PodFiles,
}

/// A container as the mock holds it.
#[derive(Debug, Clone)]
pub(crate) struct Container {
    /// Its sandbox's full id (the sandbox need not exist for seeded containers).
    pub(crate) pod_sandbox_id: String,
    /// Everything ContainerStatus answers.
    pub(crate) status: v1::ContainerStatus,
    /// The name this container reserves, if it holds one.
    pub(crate) name: Option<String>,
    /// Its memory limit in bytes (0: unlimited), from its config or UpdateContainerResources.
    pub(crate) memory_limit: i64,
    /// The process it runs, as Attach sees it.
    pub(crate) process: Process,
    /// Its mounts, as its execs see them.
    pub(crate) mounts: std::sync::Arc<crate::mock::mounts::MountTable>,
}

/// A container's modelled main process: its command line and how its stdio was set up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Process {
    /// Command then args, as configured (empty: the image's default).
    pub(crate) argv: Vec<String>,
    /// The container keeps its stdin open.
    pub(crate) stdin: bool,
    /// The container runs on a terminal.
    pub(crate) tty: bool,
    /// Who it runs as and what confines it, as exec'd commands see it too.
    pub(crate) identity: super::process::Identity,
}

impl Indexed for Sandbox {
    fn id(&self) -> &str {
        &self.status.id
    }
    fn state(&self) -> i32 {
        self.status.state
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.status.labels
    }
    fn group(&self) -> Option<&str> {
        None
    }
}

impl Indexed for Container {
    fn id(&self) -> &str {
        &self.status.id
    }
    fn state(&self) -> i32 {
        self.status.state
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.status.labels
    }
    fn group(&self) -> Option<&str> {
        Some(&self.pod_sandbox_id)
    }
}

/// A container's process that ends by itself at an instant of the mock's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TimedExit {
    /// The container's full id.
    pub(crate) container_id: String,
    /// When, in Unix nanoseconds of the mock's clock.
    pub(crate) at: i64,
    /// The exit code its status then reports.
    pub(crate) exit_code: i32,
    /// The reason its status then reports.
    pub(crate) reason: String,
}

/// All objects of one mock instance.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Sandboxes, oldest first. Add and remove them through `State` so names stay reserved.
    pub(crate) sandboxes: Table<Sandbox>,
    /// Containers, oldest first, grouped by sandbox id.
    pub(crate) containers: Table<Container>,
    /// Pulled images, in pull order.
    pub(crate) images: Vec<v1::Image>,
    /// Reserved sandbox name -> holder id.
    sandbox_names: HashMap<String, String>,
    /// Reserved container name -> holder id.
    container_names: HashMap<String, String>,
    sandboxes_minted: u64,
    containers_minted: u64,
    ips_minted: u32,
    /// Exits still to come, in the order they were asked for.
    timed_exits: Vec<TimedExit>,
    /// Image id -> when the RemoveImage under way for it ends (real time: removal latency).
    pub(crate) images_removing: HashMap<String, std::time::Instant>,
    /// Images removed that ListImages still answers: only with the defect that models a
    /// runtime whose image list lags behind its removals.
    pub(crate) images_listed_after_removal: Vec<v1::Image>,
}

/// 64 hex characters, stable for a given seed.
fn hex_id(seed: &str) -> String {
    hex::encode(Sha256::digest(seed.as_bytes()))
}

/// The name a sandbox reserves: `<name>_<namespace>_<uid>_<attempt>`.
pub(crate) fn sandbox_name(metadata: &v1::PodSandboxMetadata) -> String {
    format!(
        "{}_{}_{}_{}",
        metadata.name, metadata.namespace, metadata.uid, metadata.attempt
    )
}

/// The name a container reserves: `<name>_<sandbox name>_<namespace>_<uid>_<attempt>`.
pub(crate) fn container_name(
    metadata: &v1::ContainerMetadata,
    sandbox: &v1::PodSandboxMetadata,
) -> String {
    format!(
        "{}_{}_{}_{}_{}",
        metadata.name, sandbox.name, sandbox.namespace, sandbox.uid, metadata.attempt
    )
}

/// A list filter's label selector, or none when it selects everything.
pub(crate) fn selector(labels: &BTreeMap<String, String>) -> Option<&BTreeMap<String, String>> {
    (!labels.is_empty()).then_some(labels)
}

impl State {
    /// The sandbox `id` names (full id or unique prefix).
    pub(crate) fn find_sandbox(&self, id: &str) -> Result<Key, RpcError> {
        match self.sandboxes.lookup(id) {
            Lookup::Found(key) => Ok(key),
            Lookup::Missing => Err(RpcError::SandboxNotFound { id: id.to_owned() }),
            Lookup::Ambiguous => Err(RpcError::AmbiguousId {
                kind: "sandbox",
                prefix: id.to_owned(),
            }),
        }
    }

    /// The container `id` names (full id or unique prefix).
    pub(crate) fn find_container(&self, id: &str) -> Result<Key, RpcError> {
        match self.containers.lookup(id) {
            Lookup::Found(key) => Ok(key),
            Lookup::Missing => Err(RpcError::ContainerNotFound { id: id.to_owned() }),
            Lookup::Ambiguous => Err(RpcError::AmbiguousId {
                kind: "container",
                prefix: id.to_owned(),
            }),
        }
    }

    /// The container `id` names, refused as containerd's ContainerStats and
    /// UpdateContainerResources refuse an unknown one (without naming it).
    pub(crate) fn find_container_tersely(&self, id: &str) -> Result<Key, RpcError> {
        self.find_container(id).map_err(|err| match err {
            RpcError::ContainerNotFound { id } => RpcError::NoSuchContainer { id },
            other => other,
        })
    }

    /// The full sandbox id a list filter's id means: the id it uniquely prefixes, else the
    /// filter as given (which then only matches exactly), as containerd filters.
    pub(crate) fn sandbox_filter_id<'a>(&'a self, given: &'a str) -> &'a str {
        match self.sandboxes.lookup(given) {
            Lookup::Found(key) => &self.sandboxes[key].status.id,
            Lookup::Missing | Lookup::Ambiguous => given,
        }
    }

    /// The full container id a list filter's id means (see `sandbox_filter_id`).
    pub(crate) fn container_filter_id<'a>(&'a self, given: &'a str) -> &'a str {
        match self.containers.lookup(given) {
            Lookup::Found(key) => &self.containers[key].status.id,
            Lookup::Missing | Lookup::Ambiguous => given,
        }
    }

    /// The full sandbox id a container filter's pod_sandbox_id means; seeded containers may
    /// name sandboxes that do not exist, so their ids count as known too.
    pub(crate) fn container_sandbox_filter_id<'a>(&'a self, given: &'a str) -> &'a str {
        let groups = self.containers.groups();
        if given.is_empty()
            || self.sandboxes.find_exact(given).is_some()
            || groups.contains_key(given)
        {
            return given;
        }
        // The known ids are the union of both: two distinct prefixed ids make it ambiguous.
        let mut known: Vec<&str> = prefixed(groups, given)
            .map(|(id, _)| id)
            .take(2)
            .chain(
                self.sandboxes
                    .iter_prefixed(given)
                    .map(|(_, s)| s.status.id.as_str())
                    .take(2),
            )
            .collect();
        known.sort_unstable();
        known.dedup();
        match known.as_slice() {
            [only] => only,
            _ => given,
        }
    }

    /// A fresh sandbox id, never one in use (seeded objects may hold any id).
    pub(crate) fn mint_sandbox_id(&mut self) -> String {
        loop {
            let id = hex_id(&format!("sandbox-{}", self.sandboxes_minted));
            self.sandboxes_minted += 1;
            if self.sandboxes.find_exact(&id).is_none() {
                return id;
            }
        }
    }

    /// A fresh container id, never one in use.
    pub(crate) fn mint_container_id(&mut self) -> String {
        loop {
            let id = hex_id(&format!("container-{}", self.containers_minted));
            self.containers_minted += 1;
            if self.containers.find_exact(&id).is_none() {
                return id;
            }
        }
    }

    /// The next pod IP from 10.88.0.0/16, starting at 10.88.0.2 (.1 is the bridge's), like
    /// containerd's default CNI range. It wraps after 65,533 sandboxes.
    pub(crate) fn mint_pod_ip(&mut self) -> String {
        const HOSTS: u32 = 65_533; // 10.88.0.2 ..= 10.88.255.254
        let offset = 2 + self.ips_minted % HOSTS;
        self.ips_minted = self.ips_minted.wrapping_add(1);
        format!("10.88.{}.{}", offset >> 8, offset & 0xff)
    }

    /// The sandbox with exactly this id.
    pub(crate) fn find_exact_sandbox(&self, id: &str) -> Option<Key> {
        self.sandboxes.find_exact(id)
    }

    /// The container with exactly this id.
    pub(crate) fn find_exact_container(&self, id: &str) -> Option<Key> {
        self.containers.find_exact(id)
    }

    /// Reserves a sandbox name for `id`, failing while another sandbox holds it.
    pub(crate) fn reserve_sandbox_name(&mut self, name: &str, id: &str) -> Result<(), RpcError> {
        match self.sandbox_names.get(name) {
            Some(holder) => Err(RpcError::SandboxNameReserved {
                name: name.to_owned(),
                holder: holder.clone(),
            }),
            None => {
                self.sandbox_names.insert(name.to_owned(), id.to_owned());
                Ok(())
            }
        }
    }

    /// Reserves a container name for `id`, failing while another container holds it.
    pub(crate) fn reserve_container_name(&mut self, name: &str, id: &str) -> Result<(), RpcError> {
        match self.container_names.get(name) {
            Some(holder) => Err(RpcError::ContainerNameReserved {
                name: name.to_owned(),
                holder: holder.clone(),
            }),
            None => {
                self.container_names.insert(name.to_owned(), id.to_owned());
                Ok(())
            }
        }
    }

    /// Adds a sandbox holding `name` (already reserved, if any) as the newest one.
    pub(crate) fn insert_sandbox(
        &mut self,
        status: v1::PodSandboxStatus,
        name: Option<String>,
    ) -> Key {
        self.sandboxes.insert(Sandbox {
            status,
            name,
            retired_cpu_nanos: 0,
            ports: Vec::new(),
            pod: super::process::PodFiles::default(),
        })
    }

    /// Adds a container of `pod_sandbox_id` holding `name` (already reserved, if any).
    pub(crate) fn insert_container(
        &mut self,
        pod_sandbox_id: String,
        status: v1::ContainerStatus,
        name: Option<String>,
        memory_limit: i64,
    ) -> Key {
        self.containers.insert(Container {
            pod_sandbox_id,
            status,
            name,
            memory_limit,
            process: Process::default(),
            mounts: std::sync::Arc::default(),
        })
    }

    /// Schedules a container's exit; a later one for the same container replaces it.
    pub(crate) fn schedule_exit(&mut self, exit: TimedExit) {
        self.timed_exits
            .retain(|e| e.container_id != exit.container_id);
        self.timed_exits.push(exit);
    }

    /// True while some exit is still to come, so callers need not read the clock otherwise.
    pub(crate) fn has_timed_exits(&self) -> bool {
        !self.timed_exits.is_empty()
    }

    /// Ends the process of every container whose exit is due at `now`: a running one turns
    /// EXITED with the exit's code and reason, finished at the exit's instant (never before it
    /// started). A due exit of a container that is not running then (never started, stopped
    /// or removed meanwhile) is dropped: there is no process left to end.
    pub(crate) fn apply_due_exits(&mut self, now: i64) {
        let (due, later): (Vec<TimedExit>, Vec<TimedExit>) = std::mem::take(&mut self.timed_exits)
            .into_iter()
            .partition(|exit| exit.at <= now);
        self.timed_exits = later;
        for exit in due {
            let Some(key) = self.containers.find_exact(&exit.container_id) else {
                continue;
            };
            self.containers.update(key, |c| {
                let status = &mut c.status;
                if status.state != v1::ContainerState::ContainerRunning as i32 {
                    return;
                }
                status.state = v1::ContainerState::ContainerExited as i32;
                status.finished_at = exit.at.max(status.started_at);
                status.exit_code = exit.exit_code;
                status.reason = exit.reason;
            });
        }
    }

    /// Removes the sandbox at `key` with its containers, freeing their names.
    pub(crate) fn remove_sandbox(&mut self, key: Key) {
        let Some(sandbox) = self.sandboxes.remove(key) else {
            return;
        };
        if let Some(name) = &sandbox.name {
            self.sandbox_names.remove(name);
        }
        let gone: Vec<Key> = self
            .containers
            .in_group(&sandbox.status.id)
            .map(|(key, _)| key)
            .collect();
        for key in gone {
            if let Some(container) = self.containers.remove(key) {
                if let Some(name) = &container.name {
                    self.container_names.remove(name);
                }
            }
        }
    }

    /// The running container `id` names, refused as containerd refuses Exec, Attach and
    /// ExecSync: `not_found` words an unknown id, and a container in another state is refused.
    pub(crate) fn running_container(
        &self,
        id: &str,
        not_found: impl FnOnce(String) -> RpcError,
    ) -> Result<&Container, RpcError> {
        let key = self.find_container(id).map_err(|err| match err {
            RpcError::ContainerNotFound { id } => not_found(id),
            other => other,
        })?;
        let container = &self.containers[key];
        if container.status.state != v1::ContainerState::ContainerRunning as i32 {
            return Err(RpcError::StreamNotRunning {
                id: container.status.id.clone(),
                state: v1::ContainerState::try_from(container.status.state)
                    .map_or("CONTAINER_UNKNOWN", |s| s.as_str_name()),
            });
        }
        Ok(container)
    }

    /// Removes the container at `key`, freeing its name; its sandbox keeps the CPU time it had
    /// used (`used`, in core-nanoseconds).
    pub(crate) fn remove_container(&mut self, key: Key, used: u64) {
        let Some(container) = self.containers.remove(key) else {
            return;
        };
        if let Some(name) = &container.name {
            self.container_names.remove(name);
        }
        if let Some(sandbox) = self.sandboxes.find_exact(&container.pod_sandbox_id) {
            self.sandboxes.update(sandbox, |s| {
                s.retired_cpu_nanos = s.retired_cpu_nanos.saturating_add(used);
            });
        }
    }
}

/// True for a sandbox in the node's network namespace.
pub(crate) fn is_host_network(status: &v1::PodSandboxStatus) -> bool {
    status
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .is_some_and(|o| o.network == v1::NamespaceMode::Node as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_64_hex_and_distinct() {
        let mut state = State::default();
        let ids = [
            state.mint_sandbox_id(),
            state.mint_sandbox_id(),
            state.mint_container_id(),
        ];
        assert!(ids
            .iter()
            .all(|id| id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit())));
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    }

    #[test]
    fn pod_ips_count_up_from_dot_two_across_octets() {
        let mut state = State::default();
        let first = state.mint_pod_ip();
        for _ in 0..252 {
            state.mint_pod_ip();
        }
        assert_eq!(
            (first.as_str(), state.mint_pod_ip().as_str()),
            ("10.88.0.2", "10.88.0.255")
        );
        assert_eq!(state.mint_pod_ip(), "10.88.1.0");
    }
}
