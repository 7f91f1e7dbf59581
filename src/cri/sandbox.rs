//! One way to make a pod sandbox config for the harness's own pods (suite steps, benchmarks,
//! fuzzing, property runs, tests): the pod's metadata, its labels, and, when asked, the
//! kubelet's namespaces with the hostname the kubelet would give and the seccomp profile it
//! always sends a sandbox. The manager builds its own from a full pod spec instead
//! (`manager::lifecycle::sandbox_config`).

use std::collections::BTreeMap;

use super::{namespace_options, v1};

/// A pod sandbox config under construction: [`PodSandbox::new`], then the parts a caller
/// needs, then [`PodSandbox::build`].
#[derive(Debug, Clone)]
#[must_use]
pub struct PodSandbox {
    config: v1::PodSandboxConfig,
}

impl PodSandbox {
    /// Pod `namespace/name` with `uid`, attempt 0, nothing else set.
    pub fn new(name: &str, namespace: &str, uid: &str) -> Self {
        PodSandbox {
            config: v1::PodSandboxConfig {
                metadata: Some(v1::PodSandboxMetadata {
                    name: name.to_owned(),
                    uid: uid.to_owned(),
                    namespace: namespace.to_owned(),
                    attempt: 0,
                }),
                ..Default::default()
            },
        }
    }

    /// The sandbox's attempt (how many times the kubelet made it before).
    pub fn attempt(mut self, attempt: u32) -> Self {
        if let Some(metadata) = self.config.metadata.as_mut() {
            metadata.attempt = attempt;
        }
        self
    }

    /// The kubelet's namespaces for a pod on the pod network, or the node's when
    /// `host_network`, and the hostname it gives: the pod's name, none on the node's network.
    /// The kubelet always sends a seccomp profile too, and for the sandbox it is
    /// `RuntimeDefault` whatever the pod asks (`generatePodSandboxLinuxConfig`); a later
    /// [`PodSandbox::security`] may still name another, as a case about the field does.
    pub fn network(mut self, host_network: bool) -> Self {
        let security = self.security_context();
        security.namespace_options = Some(namespace_options(host_network));
        security.seccomp.get_or_insert_with(|| v1::SecurityProfile {
            profile_type: v1::security_profile::ProfileType::RuntimeDefault as i32,
            localhost_ref: String::new(),
        });
        self.config.hostname = if host_network {
            String::new()
        } else {
            self.config
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default()
        };
        self
    }

    /// Adds `labels`, over any of the same key.
    pub fn labels(mut self, labels: impl IntoIterator<Item = (String, String)>) -> Self {
        self.config.labels.extend(labels);
        self
    }

    /// The hostname (the kubelet sends none for a pod on the node's network).
    pub fn hostname(mut self, hostname: impl Into<String>) -> Self {
        self.config.hostname = hostname.into();
        self
    }

    /// Adds `annotations`, over any of the same key.
    pub fn annotations(mut self, annotations: impl IntoIterator<Item = (String, String)>) -> Self {
        self.config.annotations.extend(annotations);
        self
    }

    /// The DNS config the runtime writes into the pod's resolv.conf.
    pub fn dns(mut self, dns: Option<v1::DnsConfig>) -> Self {
        self.config.dns_config = dns;
        self
    }

    /// The pod's port mappings.
    pub fn port_mappings(mut self, ports: Vec<v1::PortMapping>) -> Self {
        self.config.port_mappings = ports;
        self
    }

    /// Sysctls for the pod's namespaces.
    pub fn sysctls(mut self, sysctls: BTreeMap<String, String>) -> Self {
        self.linux().sysctls = sysctls;
        self
    }

    /// The whole pod-level security context. One without namespaces keeps those of
    /// [`PodSandbox::network`], and one without a seccomp profile keeps its profile unless it
    /// sets the deprecated `seccomp_profile_path` instead.
    #[allow(deprecated)]
    pub fn security(mut self, mut context: v1::LinuxSandboxSecurityContext) -> Self {
        let given = self.security_context();
        if context.namespace_options.is_none() {
            context.namespace_options = given.namespace_options.clone();
        }
        if context.seccomp.is_none() && context.seccomp_profile_path.is_empty() {
            context.seccomp = given.seccomp.clone();
        }
        *given = context;
        self
    }

    /// The pod's log directory.
    pub fn log_directory(mut self, directory: impl Into<String>) -> Self {
        self.config.log_directory = directory.into();
        self
    }

    /// The pod's cgroup parent (empty: the runtime's default).
    pub fn cgroup_parent(mut self, parent: impl Into<String>) -> Self {
        self.linux().cgroup_parent = parent.into();
        self
    }

    /// Sends no seccomp profile at all when `nil`, for a case about exactly that (critest's
    /// nil-profile spec); no kubelet does.
    pub fn nil_seccomp(mut self, nil: bool) -> Self {
        if nil {
            self.security_context().seccomp = None;
        }
        self
    }

    /// The config.
    pub fn build(self) -> v1::PodSandboxConfig {
        self.config
    }

    fn linux(&mut self) -> &mut v1::LinuxPodSandboxConfig {
        self.config.linux.get_or_insert_with(Default::default)
    }

    fn security_context(&mut self) -> &mut v1::LinuxSandboxSecurityContext {
        self.linux()
            .security_context
            .get_or_insert_with(Default::default)
    }
}

impl From<PodSandbox> for v1::PodSandboxConfig {
    fn from(sandbox: PodSandbox) -> Self {
        sandbox.build()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_pod_network_sandbox_gets_the_kubelets_namespaces_and_its_name_as_hostname() {
        let config = PodSandbox::new("web", "ns", "u1")
            .attempt(2)
            .network(false)
            .labels(labels(&[("a", "1")]))
            .cgroup_parent("/kubepods")
            .build();
        let metadata = config.metadata.as_ref().unwrap();
        assert_eq!(
            (
                metadata.name.as_str(),
                metadata.namespace.as_str(),
                metadata.uid.as_str()
            ),
            ("web", "ns", "u1")
        );
        assert_eq!(metadata.attempt, 2);
        assert_eq!(config.hostname, "web");
        assert_eq!(config.labels, labels(&[("a", "1")]));
        let linux = config.linux.unwrap();
        assert_eq!(linux.cgroup_parent, "/kubepods");
        assert_eq!(
            linux.security_context.unwrap().namespace_options,
            Some(namespace_options(false))
        );
    }

    #[test]
    fn a_host_network_sandbox_has_no_hostname_and_the_nodes_network() {
        let config = PodSandbox::new("web", "ns", "u1").network(true).build();
        assert_eq!(config.hostname, "");
        let options = config
            .linux
            .unwrap()
            .security_context
            .unwrap()
            .namespace_options;
        assert_eq!(options.unwrap().network, v1::NamespaceMode::Node as i32);
    }

    #[test]
    fn without_parts_only_the_metadata_is_set() {
        let config = PodSandbox::new("web", "ns", "u1").build();
        assert_eq!(config.linux, None);
        assert_eq!(config.hostname, "");
        assert!(config.labels.is_empty());
    }
}
