//! The registries the mock pulls from: every one by default, as the harness's CI points every
//! registry name at one local registry; or, given an allow-list, only those hosts, as a runtime
//! that reaches nothing but its own mirror (an air-gapped node, Docker behind cri-dockerd for a
//! non-docker.io name). A pull of any other registry's name fails as a pull of a manifest the
//! registry lacks does, with the mock's NotFound.

use std::collections::BTreeSet;

use super::error::RpcError;
use super::MockRuntime;
use crate::images::Reference;

/// The registry hosts a mock pulls from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryAllowList {
    /// Hosts as references write them (`127.0.0.1:5000`); none: every registry.
    hosts: Option<BTreeSet<String>>,
}

impl RegistryAllowList {
    /// Every registry answers.
    pub fn every() -> Self {
        Self::default()
    }

    /// Only `hosts` answer (Docker Hub's `index.docker.io` is `docker.io`); an empty list is
    /// every registry, as the flag left out is.
    pub fn only<I, S>(hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let hosts: BTreeSet<String> = hosts
            .into_iter()
            .map(Into::into)
            .map(|h| {
                if h == "index.docker.io" {
                    "docker.io".to_owned()
                } else {
                    h
                }
            })
            .collect();
        Self {
            hosts: (!hosts.is_empty()).then_some(hosts),
        }
    }

    /// True when a pull of `reference` may reach its registry.
    pub fn admits(&self, reference: &Reference) -> bool {
        let host = reference
            .repository
            .split_once('/')
            .map_or("", |(host, _)| host);
        self.hosts.as_ref().is_none_or(|hosts| hosts.contains(host))
    }

    /// The allowed hosts, for messages (empty: every registry).
    pub fn hosts(&self) -> Vec<&str> {
        self.hosts.iter().flatten().map(String::as_str).collect()
    }

    /// The refusal of a pull this list does not admit, or none.
    pub(crate) fn check(&self, reference: &Reference) -> Result<(), RpcError> {
        if self.admits(reference) {
            return Ok(());
        }
        Err(RpcError::ManifestNotFound {
            image: reference.to_full(),
        })
    }
}

impl MockRuntime {
    /// This mock, pulling only from the registries `allowed` admits.
    pub fn with_registries(self, allowed: RegistryAllowList) -> Self {
        self.lock().registries = allowed;
        self
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::the_mirror("127.0.0.1:5000/cri-harness/digest:1", true)]
    #[case::a_mirror_path_with_a_host_in_it(
        "127.0.0.1:5000/registry.k8s.io/cri-harness/two-registries:1",
        true
    )]
    #[case::another_port("127.0.0.1:5001/cri-harness/digest:1", false)]
    #[case::localhost("localhost/cri-harness/digest:1", false)]
    #[case::registry_k8s_io("registry.k8s.io/pause:3.9", false)]
    #[case::a_short_name("busybox", false)]
    fn only_the_listed_registries_are_admitted(#[case] reference: &str, #[case] admitted: bool) {
        let allowed = RegistryAllowList::only(["127.0.0.1:5000"]);
        let parsed = Reference::parse(reference);
        assert_eq!(allowed.admits(&parsed), admitted, "{reference}");
        assert_eq!(allowed.check(&parsed).is_ok(), admitted);
        assert!(RegistryAllowList::every().admits(&parsed));
    }

    #[test]
    fn docker_hub_is_one_host_by_either_name_and_an_empty_list_admits_all() {
        let hub = RegistryAllowList::only(["index.docker.io"]);
        assert!(hub.admits(&Reference::parse("busybox")));
        assert_eq!(hub.hosts(), ["docker.io"]);
        assert_eq!(
            RegistryAllowList::only(Vec::<String>::new()),
            RegistryAllowList::every()
        );
    }
}
