//! The mock's object model: pod sandboxes and containers kept as the CRI statuses it answers
//! with, pulled images, the names they reserve, and the counters that mint ids and pod IPs.
//! Objects are kept in insertion order, which is the order lists answer in (oldest first).

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

use super::error::RpcError;
use crate::cri::v1;

/// A pod sandbox as the mock holds it.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    /// Everything PodSandboxStatus answers.
    pub(crate) status: v1::PodSandboxStatus,
    /// The name this sandbox reserves, if it holds one (seeded ones may not).
    pub(crate) name: Option<String>,
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
}

/// All objects of one mock instance.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Sandboxes, oldest first.
    pub(crate) sandboxes: Vec<Sandbox>,
    /// Containers, oldest first.
    pub(crate) containers: Vec<Container>,
    /// Pulled images, in pull order.
    pub(crate) images: Vec<v1::Image>,
    /// Reserved sandbox name -> holder id.
    sandbox_names: HashMap<String, String>,
    /// Reserved container name -> holder id.
    container_names: HashMap<String, String>,
    sandboxes_minted: u64,
    containers_minted: u64,
    ips_minted: u32,
}

/// The outcome of looking an id up among several ids.
#[derive(Debug, PartialEq, Eq)]
enum Lookup {
    /// The id, or the one id it prefixes, at this index.
    Found(usize),
    /// Nothing matches.
    Missing,
    /// The prefix matches more than one id.
    Ambiguous,
}

/// Finds `given` among `ids`: an exact match wins, else a prefix matching exactly one id.
fn lookup<'a>(ids: impl Iterator<Item = &'a str> + Clone, given: &str) -> Lookup {
    if given.is_empty() {
        return Lookup::Missing;
    }
    if let Some(index) = ids.clone().position(|id| id == given) {
        return Lookup::Found(index);
    }
    let mut matches = ids.enumerate().filter(|(_, id)| id.starts_with(given));
    match (matches.next(), matches.next()) {
        (Some((index, _)), None) => Lookup::Found(index),
        (None, _) => Lookup::Missing,
        (Some(_), Some(_)) => Lookup::Ambiguous,
    }
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

/// True when every pair of `selector` is among `labels`.
pub(crate) fn labels_match(
    selector: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

impl State {
    /// The index of the sandbox `id` names (full id or unique prefix).
    pub(crate) fn find_sandbox(&self, id: &str) -> Result<usize, RpcError> {
        match lookup(self.sandboxes.iter().map(|s| s.status.id.as_str()), id) {
            Lookup::Found(index) => Ok(index),
            Lookup::Missing => Err(RpcError::SandboxNotFound { id: id.to_owned() }),
            Lookup::Ambiguous => Err(RpcError::AmbiguousId {
                kind: "sandbox",
                prefix: id.to_owned(),
            }),
        }
    }

    /// The index of the container `id` names (full id or unique prefix).
    pub(crate) fn find_container(&self, id: &str) -> Result<usize, RpcError> {
        match lookup(self.containers.iter().map(|c| c.status.id.as_str()), id) {
            Lookup::Found(index) => Ok(index),
            Lookup::Missing => Err(RpcError::ContainerNotFound { id: id.to_owned() }),
            Lookup::Ambiguous => Err(RpcError::AmbiguousId {
                kind: "container",
                prefix: id.to_owned(),
            }),
        }
    }

    /// The full sandbox id a list filter's id means: the id it uniquely prefixes, else the
    /// filter as given (which then only matches exactly), as containerd filters.
    pub(crate) fn sandbox_filter_id(&self, given: &str) -> String {
        match lookup(self.sandboxes.iter().map(|s| s.status.id.as_str()), given) {
            Lookup::Found(index) => self.sandboxes[index].status.id.clone(),
            Lookup::Missing | Lookup::Ambiguous => given.to_owned(),
        }
    }

    /// The full container id a list filter's id means (see `sandbox_filter_id`).
    pub(crate) fn container_filter_id(&self, given: &str) -> String {
        match lookup(self.containers.iter().map(|c| c.status.id.as_str()), given) {
            Lookup::Found(index) => self.containers[index].status.id.clone(),
            Lookup::Missing | Lookup::Ambiguous => given.to_owned(),
        }
    }

    /// The full sandbox id a container filter's pod_sandbox_id means; seeded containers may
    /// name sandboxes that do not exist, so their ids count as known too.
    pub(crate) fn container_sandbox_filter_id(&self, given: &str) -> String {
        // An exact id (what the kubelet sends) needs no prefix resolution; skipping the
        // collect-and-sort of every id keeps GetPodStatus fast with thousands of pods.
        if self.find_exact_sandbox(given).is_some()
            || self.containers.iter().any(|c| c.pod_sandbox_id == given)
        {
            return given.to_owned();
        }
        let mut known: Vec<&str> = self
            .sandboxes
            .iter()
            .map(|s| s.status.id.as_str())
            .chain(self.containers.iter().map(|c| c.pod_sandbox_id.as_str()))
            .collect();
        known.sort_unstable();
        known.dedup();
        match lookup(known.iter().copied(), given) {
            Lookup::Found(index) => known[index].to_owned(),
            Lookup::Missing | Lookup::Ambiguous => given.to_owned(),
        }
    }

    /// A fresh sandbox id, never one in use (seeded objects may hold any id).
    pub(crate) fn mint_sandbox_id(&mut self) -> String {
        loop {
            let id = hex_id(&format!("sandbox-{}", self.sandboxes_minted));
            self.sandboxes_minted += 1;
            if self.find_exact_sandbox(&id).is_none() {
                return id;
            }
        }
    }

    /// A fresh container id, never one in use.
    pub(crate) fn mint_container_id(&mut self) -> String {
        loop {
            let id = hex_id(&format!("container-{}", self.containers_minted));
            self.containers_minted += 1;
            if self.find_exact_container(&id).is_none() {
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
    pub(crate) fn find_exact_sandbox(&self, id: &str) -> Option<usize> {
        self.sandboxes.iter().position(|s| s.status.id == id)
    }

    /// The container with exactly this id.
    pub(crate) fn find_exact_container(&self, id: &str) -> Option<usize> {
        self.containers.iter().position(|c| c.status.id == id)
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

    /// Removes the sandbox at `index` with its containers, freeing their names.
    pub(crate) fn remove_sandbox(&mut self, index: usize) {
        let sandbox = self.sandboxes.remove(index);
        if let Some(name) = &sandbox.name {
            self.sandbox_names.remove(name);
        }
        let (gone, kept): (Vec<Container>, Vec<Container>) = std::mem::take(&mut self.containers)
            .into_iter()
            .partition(|c| c.pod_sandbox_id == sandbox.status.id);
        self.containers = kept;
        for container in gone {
            if let Some(name) = &container.name {
                self.container_names.remove(name);
            }
        }
    }

    /// Removes the container at `index`, freeing its name.
    pub(crate) fn remove_container(&mut self, index: usize) {
        let container = self.containers.remove(index);
        if let Some(name) = &container.name {
            self.container_names.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::exact_wins_over_prefix(&["ab", "abc"], "ab", Lookup::Found(0))]
    #[case::unique_prefix(&["abc", "def"], "d", Lookup::Found(1))]
    #[case::shared_prefix(&["abc", "abd"], "ab", Lookup::Ambiguous)]
    #[case::no_match(&["abc"], "x", Lookup::Missing)]
    #[case::empty_is_no_id(&["abc"], "", Lookup::Missing)]
    fn ids_resolve_exactly_or_by_unique_prefix(
        #[case] ids: &[&str],
        #[case] given: &str,
        #[case] expected: Lookup,
    ) {
        assert_eq!(lookup(ids.iter().copied(), given), expected);
    }

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

    #[test]
    fn a_label_selector_needs_every_pair() {
        let labels: BTreeMap<String, String> =
            [("a".into(), "1".into()), ("b".into(), "2".into())].into();
        let partial: BTreeMap<String, String> = [("a".into(), "1".into())].into();
        let wrong: BTreeMap<String, String> =
            [("a".into(), "1".into()), ("b".into(), "3".into())].into();
        assert!(labels_match(&partial, &labels));
        assert!(labels_match(&BTreeMap::new(), &labels));
        assert!(!labels_match(&wrong, &labels));
    }
}
