//! What the kubelet always puts in RunPodSandbox and CreateContainer, which a mock told which
//! kubelet it serves refuses to go without: the runner tells every mock it starts, so each
//! embedded case proves on the wire that its requests look like that kubelet's. A runtime
//! may rely on any of these (CRI-O refuses a CreateContainer without `user_specified_image`
//! when it verifies signatures); none is the contract's to demand, so a plain mock asks for
//! nothing.
//!
//! Always set by `generatePodSandboxConfig`: the pod's name, uid and namespace, a log
//! directory, the namespaces, and a seccomp profile (RuntimeDefault for the sandbox). By
//! `generateContainerConfig`: the container's name, the image both as resolved and as the
//! user wrote it, a log path when its sandbox has a log directory, the namespaces and a
//! seccomp profile. Labels: the seed kubelet writes `io.kubernetes.managed=true` on everything
//! and reads nothing without it; today's kubelet never writes it.

use super::error::RpcError;
use super::MockRuntime;
use crate::cri::{labels, v1};

/// The kubelet whose requests a mock expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletWire {
    /// The 2016 seed's: it marks every object `io.kubernetes.managed=true`.
    Seed,
    /// Today's: it never writes that label.
    Current,
}

impl MockRuntime {
    /// This mock, refusing RunPodSandbox and CreateContainer requests that lack what `kubelet`
    /// always sends (InvalidArgument, naming the field).
    #[must_use]
    pub fn expecting_kubelet(self, kubelet: KubeletWire) -> Self {
        self.lock().kubelet_wire = Some(kubelet);
        self
    }
}

/// Why `config` is not a sandbox config `kubelet` would send.
pub(crate) fn sandbox_lacks(
    kubelet: KubeletWire,
    config: &v1::PodSandboxConfig,
) -> Result<(), RpcError> {
    const METHOD: &str = "RunPodSandbox";
    let metadata = config.metadata.clone().unwrap_or_default();
    let context = config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref());
    let missing = [
        ("config.metadata.name", metadata.name.is_empty()),
        ("config.metadata.uid", metadata.uid.is_empty()),
        ("config.metadata.namespace", metadata.namespace.is_empty()),
        ("config.log_directory", config.log_directory.is_empty()),
        (
            "config.linux.security_context.namespace_options",
            context.and_then(|c| c.namespace_options.as_ref()).is_none(),
        ),
        (
            "config.linux.security_context.seccomp",
            context.is_none_or(|c| c.seccomp.is_none() && deprecated_path(c).is_empty()),
        ),
    ];
    first_missing(METHOD, &missing)?;
    managed_label(METHOD, kubelet, &config.labels)
}

/// Why `request` is not a CreateContainer `kubelet` would send.
pub(crate) fn container_lacks(
    kubelet: KubeletWire,
    request: &v1::CreateContainerRequest,
) -> Result<(), RpcError> {
    const METHOD: &str = "CreateContainer";
    let config = request.config.clone().unwrap_or_default();
    let image = config.image.clone().unwrap_or_default();
    let context = config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref());
    let logs = request
        .sandbox_config
        .as_ref()
        .is_some_and(|s| !s.log_directory.is_empty());
    let missing = [
        (
            "config.metadata.name",
            config.metadata.as_ref().is_none_or(|m| m.name.is_empty()),
        ),
        ("config.image.image", image.image.is_empty()),
        (
            "config.image.user_specified_image",
            image.user_specified_image.is_empty(),
        ),
        ("config.log_path", logs && config.log_path.is_empty()),
        (
            "config.linux.security_context.namespace_options",
            context.and_then(|c| c.namespace_options.as_ref()).is_none(),
        ),
        (
            "config.linux.security_context.seccomp",
            context.is_none_or(|c| c.seccomp.is_none() && container_path(c).is_empty()),
        ),
        ("sandbox_config", request.sandbox_config.is_none()),
    ];
    first_missing(METHOD, &missing)?;
    managed_label(METHOD, kubelet, &config.labels)
}

/// The deprecated profile path, which a case about that field sends instead of a profile.
#[allow(deprecated)]
fn deprecated_path(context: &v1::LinuxSandboxSecurityContext) -> &str {
    &context.seccomp_profile_path
}

/// The container's deprecated profile path, as [`deprecated_path`].
#[allow(deprecated)]
fn container_path(context: &v1::LinuxContainerSecurityContext) -> &str {
    &context.seccomp_profile_path
}

fn first_missing(method: &'static str, fields: &[(&'static str, bool)]) -> Result<(), RpcError> {
    match fields.iter().find(|(_, missing)| *missing) {
        Some((field, _)) => Err(RpcError::UnlikeKubelet {
            method,
            what: format!("{field} is empty, and the kubelet always sets it"),
        }),
        None => Ok(()),
    }
}

fn managed_label(
    method: &'static str,
    kubelet: KubeletWire,
    labels: &std::collections::BTreeMap<String, String>,
) -> Result<(), RpcError> {
    let marked = labels.get(labels::MANAGED).is_some_and(|v| v == "true");
    match (kubelet, marked) {
        (KubeletWire::Seed, false) => Err(RpcError::UnlikeKubelet {
            method,
            what: format!(
                "config.labels lack {}=true, which the seed kubelet writes on everything",
                labels::MANAGED
            ),
        }),
        (KubeletWire::Current, _) if labels.contains_key(labels::MANAGED) => {
            Err(RpcError::UnlikeKubelet {
                method,
                what: format!(
                    "config.labels hold {}, which today's kubelet never writes",
                    labels::MANAGED
                ),
            })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::{namespace_options, Container, PodSandbox};

    fn sandbox(kubelet: KubeletWire) -> v1::PodSandboxConfig {
        let mut labels = std::collections::BTreeMap::new();
        if kubelet == KubeletWire::Seed {
            labels.insert(labels::MANAGED.to_owned(), "true".to_owned());
        }
        PodSandbox::new("web", "ns", "u1")
            .network(false)
            .log_directory("/logs/web")
            .labels(labels)
            .build()
    }

    fn request(kubelet: KubeletWire) -> v1::CreateContainerRequest {
        let config = Container::new("app", "busybox:1", namespace_options(false))
            .log_path("app/0.log")
            .labels(sandbox(kubelet).labels)
            .build();
        v1::CreateContainerRequest {
            pod_sandbox_id: "s1".to_owned(),
            config: Some(config),
            sandbox_config: Some(sandbox(kubelet)),
        }
    }

    fn refusal(result: Result<(), RpcError>) -> String {
        result.expect_err("refused").to_string()
    }

    #[test]
    fn the_builders_requests_are_the_kubelets_under_either_profile() {
        for kubelet in [KubeletWire::Seed, KubeletWire::Current] {
            assert!(sandbox_lacks(kubelet, &sandbox(kubelet)).is_ok());
            assert!(container_lacks(kubelet, &request(kubelet)).is_ok());
        }
    }

    #[test]
    fn a_container_without_the_users_image_name_is_refused_naming_the_field() {
        let mut request = request(KubeletWire::Current);
        if let Some(image) = request.config.as_mut().and_then(|c| c.image.as_mut()) {
            image.user_specified_image.clear();
        }
        let why = refusal(container_lacks(KubeletWire::Current, &request));
        assert!(why.contains("config.image.user_specified_image"), "{why}");
    }

    #[test]
    fn a_sandbox_without_a_log_directory_or_a_profile_is_refused() {
        let mut config = sandbox(KubeletWire::Seed);
        config.log_directory.clear();
        let why = refusal(sandbox_lacks(KubeletWire::Seed, &config));
        assert!(why.contains("config.log_directory"), "{why}");
        let mut config = sandbox(KubeletWire::Seed);
        if let Some(context) = config
            .linux
            .as_mut()
            .and_then(|l| l.security_context.as_mut())
        {
            context.seccomp = None;
        }
        let why = refusal(sandbox_lacks(KubeletWire::Seed, &config));
        assert!(why.contains("seccomp"), "{why}");
    }

    #[test]
    fn a_container_of_a_sandbox_with_logs_needs_a_log_path() {
        let mut request = request(KubeletWire::Seed);
        if let Some(config) = request.config.as_mut() {
            config.log_path.clear();
        }
        let why = refusal(container_lacks(KubeletWire::Seed, &request));
        assert!(why.contains("config.log_path"), "{why}");
    }

    #[test]
    fn the_managed_label_goes_with_the_seed_only() {
        let why = refusal(sandbox_lacks(
            KubeletWire::Current,
            &sandbox(KubeletWire::Seed),
        ));
        assert!(why.contains("never writes"), "{why}");
        let why = refusal(container_lacks(
            KubeletWire::Seed,
            &request(KubeletWire::Current),
        ));
        assert!(why.contains("seed kubelet writes"), "{why}");
    }
}
