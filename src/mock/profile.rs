//! The mock's profiles: `containerd`, which answers as containerd does wherever the CRI contract
//! leaves room, and `other-runtime`, which takes every freedom the contract grants (the
//! `freedoms:` of `src/contract/clauses.yaml`, read from there) and refuses requests that lack
//! what the kubelet always sends, as CRI-O with a signature policy does. A profile is a set of
//! freedoms and whether requests are held to the kubelet's, so a test can take each freedom alone.

use std::collections::BTreeSet;

use super::error::RpcError;
use crate::cri::v1;

/// Which profile a mock answers with, as `--mock-profile` names it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    clap::ValueEnum,
    strum::Display,
)]
#[strum(serialize_all = "kebab-case")]
pub enum ProfileName {
    /// containerd's answers wherever the contract leaves room.
    #[default]
    Containerd,
    /// Every freedom the contract grants, and the kubelet's requests required.
    OtherRuntime,
}

/// One freedom a clause of the contract grants: a way of answering that is not containerd's and
/// that the clause allows. Each is named, by its id, in `clauses.yaml` beside its clause.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Freedom {
    /// Sandboxes carry a label the config did not (`io.kubernetes.container.name: POD`).
    SandboxLabelsAdded,
    /// Containers carry a label the config did not.
    ContainerLabelsAdded,
    /// A stopped sandbox keeps reporting its IP.
    StoppedSandboxKeepsIp,
    /// StopContainer sends the stop signal first even at timeout 0.
    StopSignalFirst,
    /// StopContainer of a CREATED container leaves it EXITED.
    StopCreatedExits,
    /// ExecSync past its timeout answers a non-zero exit code, not an error.
    ExecTimeoutExitCode,
    /// GetContainerEvents ends at once, sending nothing.
    EventsOff,
    /// PodSandboxStats' CPU and memory carry a timestamp and no figures.
    PodStatsTimestampOnly,
    /// ContainerStats of an id the runtime does not have answers Unknown.
    RemovedStatsUnknown,
    /// RuntimeConfig answers the systemd cgroup driver.
    CgroupDriverSystemd,
    /// Lists answer newest first.
    ListsNewestFirst,
    /// Image ids are the bare hex of the config digest, without `sha256:`.
    ImageIdBareHex,
    /// PullImage of a missing repository or tag fails with Unknown, in other words.
    PullMissingUnknown,
    /// PullImage of a malformed reference fails with InvalidArgument.
    PullMalformedInvalidArgument,
    /// CreateContainer with a group and no user fails with InvalidArgument.
    GroupWithoutUserInvalidArgument,
    /// StartContainer of an id the runtime does not have fails with Unknown.
    StartUnknownUnknown,
    /// ReopenContainerLog of a container that is not running succeeds.
    ReopenNotRunningSucceeds,
    /// The deprecated `seccomp_profile_path` is ignored.
    SeccompProfilePathIgnored,
    /// A new network namespace reads `net.ipv4.ip_unprivileged_port_start` 0.
    UnprivilegedPortStartZero,
    /// A streaming list sends one item per message.
    StreamOneItemPerMessage,
    /// A terminal session's output passes a second terminal, so each line end arrives as
    /// `\r\r\n`.
    TerminalNested,
}

impl Freedom {
    /// Every freedom the contract grants, by its id in `clauses.yaml`; an id the mock does not
    /// know is left out (a test holds the two lists equal).
    pub fn granted() -> BTreeSet<Freedom> {
        crate::contract::contract()
            .freedoms()
            .filter_map(|(_, freedom)| freedom.id.parse().ok())
            .collect()
    }
}

/// How one mock answers: the freedoms it takes, and whether it holds requests to the kubelet's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MockProfile {
    /// The profile it was made from (only a test picks freedoms one by one).
    pub name: ProfileName,
    /// The freedoms it takes.
    pub freedoms: BTreeSet<Freedom>,
    /// Refuse a request that lacks a field the kubelet always sets (see [`Requirement`]).
    pub kubelet_requests: bool,
}

impl MockProfile {
    /// The profile `name` names: containerd's takes nothing; the other runtime's takes every
    /// freedom the contract grants and requires the kubelet's requests.
    pub fn named(name: ProfileName) -> Self {
        match name {
            ProfileName::Containerd => Self::default(),
            ProfileName::OtherRuntime => Self {
                name,
                freedoms: Freedom::granted(),
                kubelet_requests: true,
            },
        }
    }

    /// containerd's profile with `freedom` alone taken: for tests that show one freedom changes
    /// no `must` verdict.
    pub fn only(freedom: Freedom) -> Self {
        Self {
            name: ProfileName::Containerd,
            freedoms: BTreeSet::from([freedom]),
            kubelet_requests: false,
        }
    }

    /// True when this profile takes `freedom`.
    pub fn takes(&self, freedom: Freedom) -> bool {
        self.freedoms.contains(&freedom)
    }
}

/// A field the kubelet's generate functions always set (kubernetes/kubernetes
/// `pkg/kubelet/kuberuntime`: `generatePodSandboxConfig`, `generatePodSandboxLinuxConfig`,
/// `generateContainerConfig`, `generateLinuxContainerConfig`), which the other-runtime profile
/// refuses a request without, as a runtime relying on it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Requirement {
    /// `PodSandboxConfig.metadata` with the pod's name, namespace and uid.
    SandboxMetadata,
    /// `PodSandboxConfig.log_directory` (`BuildPodLogsDirectory`).
    SandboxLogDirectory,
    /// `PodSandboxConfig.hostname` on the pod network (api.proto: empty only in the node's).
    SandboxHostname,
    /// `LinuxPodSandboxConfig.security_context.namespace_options`.
    SandboxNamespaceOptions,
    /// `LinuxPodSandboxConfig.cgroup_parent`, when given, in the form the reported cgroup
    /// driver takes (a `.slice` for systemd, a path for cgroupfs).
    CgroupParentForm,
    /// `ContainerConfig.metadata` with the container's name.
    ContainerMetadata,
    /// `ImageSpec.user_specified_image`, the image as the pod spec names it.
    UserSpecifiedImage,
    /// `ContainerConfig.log_path` (`containerName/restartCount.log`).
    ContainerLogPath,
    /// `LinuxContainerConfig.security_context.namespace_options`.
    ContainerNamespaceOptions,
    /// `CreateContainerRequest.sandbox_config`, the pod's config sent again.
    CreateSandboxConfig,
}

impl Requirement {
    /// The request field it names, as the refusal says.
    pub fn field(self) -> &'static str {
        match self {
            Requirement::SandboxMetadata => "config.metadata (name, namespace, uid)",
            Requirement::SandboxLogDirectory => "config.log_directory",
            Requirement::SandboxHostname => "config.hostname",
            Requirement::SandboxNamespaceOptions => {
                "config.linux.security_context.namespace_options"
            }
            Requirement::CgroupParentForm => "config.linux.cgroup_parent",
            Requirement::ContainerMetadata => "config.metadata.name",
            Requirement::UserSpecifiedImage => "config.image.user_specified_image",
            Requirement::ContainerLogPath => "config.log_path",
            Requirement::ContainerNamespaceOptions => {
                "config.linux.security_context.namespace_options"
            }
            Requirement::CreateSandboxConfig => "sandbox_config",
        }
    }

    /// Why it is required, as the refusal says.
    fn why(self) -> &'static str {
        match self {
            Requirement::SandboxMetadata => "the kubelet names every pod",
            Requirement::SandboxLogDirectory => "the kubelet gives every pod a log directory",
            Requirement::SandboxHostname => {
                "a hostname may be empty only in the node's network namespace"
            }
            Requirement::SandboxNamespaceOptions => "the kubelet states every pod's namespaces",
            Requirement::CgroupParentForm => "it must take the reported cgroup driver's form",
            Requirement::ContainerMetadata => "the kubelet names every container",
            Requirement::UserSpecifiedImage => {
                "cannot verify the image's signature without the name the pod gives it"
            }
            Requirement::ContainerLogPath => "the kubelet gives every container a log path",
            Requirement::ContainerNamespaceOptions => {
                "the kubelet states every container's namespaces"
            }
            Requirement::CreateSandboxConfig => "the kubelet sends the pod's config along",
        }
    }
}

/// The refusal of a request whose checks in `checked` found requirements missing (none: no
/// refusal): every one is named, so a request builder learns all it lacks at once.
fn refusal(method: &'static str, checked: &[(Requirement, bool)]) -> Result<(), RpcError> {
    let fields: Vec<String> = checked
        .iter()
        .filter(|(_, missed)| *missed)
        .map(|(r, _)| format!("{} is required ({})", r.field(), r.why()))
        .collect();
    if fields.is_empty() {
        return Ok(());
    }
    Err(RpcError::KubeletFieldMissing {
        method,
        missing: fields.join("; "),
    })
}

/// The refusal of a RunPodSandbox config that misses requirements, naming each; `systemd`
/// says which cgroup driver the mock reports.
pub(crate) fn check_sandbox(config: &v1::PodSandboxConfig, systemd: bool) -> Result<(), RpcError> {
    let metadata = config.metadata.clone().unwrap_or_default();
    let linux = config.linux.clone().unwrap_or_default();
    let options = linux
        .security_context
        .as_ref()
        .and_then(|s| s.namespace_options.as_ref());
    let node_network = options.is_some_and(|o| o.network == v1::NamespaceMode::Node as i32);
    let parent = linux.cgroup_parent.trim_end_matches('/');
    let unnamed =
        metadata.name.is_empty() || metadata.namespace.is_empty() || metadata.uid.is_empty();
    refusal(
        "RunPodSandbox",
        &[
            (Requirement::SandboxMetadata, unnamed),
            (
                Requirement::SandboxLogDirectory,
                config.log_directory.is_empty(),
            ),
            (Requirement::SandboxNamespaceOptions, options.is_none()),
            (
                Requirement::SandboxHostname,
                !node_network && config.hostname.is_empty(),
            ),
            (
                Requirement::CgroupParentForm,
                !parent.is_empty() && parent.ends_with(".slice") != systemd,
            ),
        ],
    )
}

/// The refusal of a CreateContainer request that misses requirements, naming each.
pub(crate) fn check_container(request: &v1::CreateContainerRequest) -> Result<(), RpcError> {
    let config = request.config.clone().unwrap_or_default();
    let namespaces = config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|s| s.namespace_options.as_ref());
    refusal(
        "CreateContainer",
        &[
            (
                Requirement::ContainerMetadata,
                config.metadata.as_ref().is_none_or(|m| m.name.is_empty()),
            ),
            (
                Requirement::UserSpecifiedImage,
                config
                    .image
                    .as_ref()
                    .is_none_or(|i| i.user_specified_image.is_empty()),
            ),
            (Requirement::ContainerLogPath, config.log_path.is_empty()),
            (Requirement::ContainerNamespaceOptions, namespaces.is_none()),
            (
                Requirement::CreateSandboxConfig,
                request.sandbox_config.is_none(),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;

    use super::*;

    #[test]
    fn the_other_runtime_takes_every_freedom_the_contract_grants_and_the_mock_knows_each() {
        let named: BTreeSet<String> = crate::contract::contract()
            .freedoms()
            .map(|(_, f)| f.id.clone())
            .collect();
        let known: BTreeSet<String> = Freedom::VARIANTS.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            named, known,
            "clauses.yaml's freedoms and mock::Freedom differ"
        );
        let other = MockProfile::named(ProfileName::OtherRuntime);
        assert_eq!(other.freedoms.len(), Freedom::VARIANTS.len());
        assert!(other.kubelet_requests);
        assert_eq!(
            MockProfile::named(ProfileName::Containerd),
            MockProfile::default()
        );
    }

    #[test]
    fn profile_names_read_as_the_flag_writes_them() {
        use clap::ValueEnum;
        let names: Vec<String> = ProfileName::value_variants()
            .iter()
            .map(|p| p.to_possible_value().unwrap().get_name().to_owned())
            .collect();
        assert_eq!(names, ["containerd", "other-runtime"]);
        assert_eq!(ProfileName::OtherRuntime.to_string(), "other-runtime");
    }
}
