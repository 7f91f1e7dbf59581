//! Suites: declarative YAML files of cases (setup steps, manager calls, expectations) that the
//! runner executes. The suites under `suites/` are embedded in the binary; `--suites DIR` (or one
//! file) adds more. A bad file is reported with file, line and column and the other files still
//! load.

mod embedded;
mod load;
pub mod step;
mod yaml;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Deserialize;

pub use crate::world::PodIdentity;

use crate::manager::KubeletProfile;
pub use embedded::EMBEDDED;
pub use load::{load, load_dir, load_embedded, load_file, parse, Loaded};
pub use step::{CheckError, Step};
pub use yaml::{MAX_DEPTH, MAX_EXPANDED_BYTES, MAX_FILE_BYTES};

/// A suite: cases that check one documented behaviour.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The suite's name, unique; snapshots are named after it.
    pub name: String,
    /// What it checks and which spec rule it follows.
    pub about: String,
    /// Tags every case inherits.
    pub tags: Vec<String>,
    /// The cases, in file order.
    pub cases: Vec<Case>,
    /// The file it came from, as shown to users (`suites/x.yaml` for embedded suites).
    pub source: String,
    /// It is one of the binary's own suites (path and text as embedded): its cases' reference
    /// results are embedded too, rather than read from `--snapshot-dir`.
    pub embedded: bool,
}

/// One case: steps run in order against a fresh state.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Name, unique within its suite.
    pub name: String,
    /// What it shows, optional.
    pub about: Option<String>,
    /// Its own tags plus the suite's.
    pub tags: Vec<String>,
    /// What it needs from the target beyond plain CRI.
    pub needs: Vec<Need>,
    /// The kubelet whose rules its expectations follow, where the seed and today's kubelet
    /// differ (`kubelet: seed|current`); a run under the other `--kubelet` skips it. None: it
    /// holds under either.
    pub kubelet: Option<KubeletProfile>,
    /// Kubelet feature gates the case's manager follows over the run's `--feature-gates`
    /// (`feature_gates: {LegacySidecarContainers: true}`); unknown names are refused.
    pub feature_gates: crate::manager::FeatureGates,
    /// The node's crash-loop cap for today's kubelet
    /// (`crash_loop_back_off: {max_container_restart_period_seconds: 2}`); only with
    /// `kubelet: current`, which the loader checks.
    pub crash_loop_back_off: crate::manager::lifecycle::CrashLoopConfig,
    /// How long the mock's image calls take in this case (`mock_latency: {pull_ms: 50}`); a
    /// real runtime takes its own time, so only the mock reads it. None by default.
    pub mock_latency: MockLatency,
    /// Pod identities the case fixes, by pod alias (others are made unique per run).
    pub pods: BTreeMap<String, PodIdentity>,
    /// Every pod alias the case names, fixed or not (not the empty one), found by the loader's
    /// checks.
    pub mentioned_pods: BTreeSet<String>,
    /// The contract clause its expectations check unless a step names its own
    /// (`clause: ID`, see [`crate::contract`]).
    pub clause: Option<String>,
    /// Each step's own `clause:`, by step index.
    pub step_clauses: Vec<Option<String>>,
    /// The steps.
    pub steps: Vec<Step>,
    /// Line where the case's mapping starts (1-based; the `- ` item's first key), for messages.
    pub line: usize,
    /// Column of that start (1-based, in characters).
    pub column: usize,
    /// Line of each step (1-based), for messages.
    pub step_lines: Vec<usize>,
    /// Column of each step (1-based, in characters).
    pub step_columns: Vec<usize>,
}

impl Case {
    /// True when it needs the mock's control service.
    pub fn needs_mock_control(&self) -> bool {
        self.needs.contains(&Need::MockControl)
    }

    /// True when it declares `need`.
    pub fn needs(&self, need: Need) -> bool {
        self.needs.contains(&need)
    }

    /// What makes its result depend on the machine rather than the runtime, if anything.
    pub fn environment(&self) -> Option<&'static str> {
        self.needs.iter().find_map(|need| need.environment())
    }

    /// `suite/case`, what `--focus` and `--skip` match.
    pub fn full_name(&self, suite: &Suite) -> String {
        format!("{}/{}", suite.name, self.name)
    }

    /// The clause step `index` checks: its own, else the case's.
    pub fn clause_of(&self, index: usize) -> Option<&str> {
        self.step_clauses
            .get(index)
            .and_then(Option::as_deref)
            .or(self.clause.as_deref())
    }

    /// True when step `index` makes an expectation of the target, so that a failure there is
    /// a verdict on the runtime (at its clause's level) rather than a setup that could not be
    /// made: a manager call or a check, or any step with an `expect:` or its own `clause:`.
    pub fn expects(&self, index: usize) -> bool {
        let Some(step) = self.steps.get(index) else {
            return false;
        };
        if step.precondition() {
            return false;
        }
        matches!(step.kind(), step::Kind::Manager | step::Kind::Check)
            || self.step_clauses.get(index).is_some_and(Option::is_some)
            || step.has_expect()
    }

    /// The line of step `index` (0-based), or the case's line.
    pub fn step_line(&self, index: usize) -> usize {
        self.step_lines.get(index).copied().unwrap_or(self.line)
    }

    /// `line:column` of step `index` (0-based), or of the case.
    pub fn step_position(&self, index: usize) -> (usize, usize) {
        match (self.step_lines.get(index), self.step_columns.get(index)) {
            (Some(&line), Some(&column)) => (line, column),
            _ => (self.line, self.column),
        }
    }
}

/// The time a case has the mock's image calls take, in milliseconds: for a case whose subject
/// is a call in progress (a pull past its deadline, removals that overlap), which a real
/// runtime's calls are on their own. Zero, the default, answers at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockLatency {
    /// Pulling an image the mock does not hold.
    #[serde(default)]
    pub pull_ms: u64,
    /// Removing an image the mock holds.
    #[serde(default)]
    pub remove_ms: u64,
}

/// A capability a case needs from the target, or from the machine it runs on. A case whose
/// need the target lacks is skipped, saying which need and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// The mock runtime's control service (error injection, version, clock, seeding): the
    /// case is mock-only.
    MockControl,
    /// A real process in the container (exec, logs, exit codes, the network): the mock runs
    /// none, so the case skips there.
    Process,
    /// The public registries (e.g. an image pinned by a public digest, which no local mirror
    /// can serve): environment-dependent, run only with `--online`.
    Online,
    /// PodSandboxStats and ListPodSandboxStats, which CRI lets a runtime leave unimplemented
    /// (the kubelet then takes pod stats from cAdvisor): a runtime that answers Unimplemented
    /// is said to lack the feature, and the case skips.
    PodSandboxStats,
    /// AppArmor in the host's kernel, which a runtime needs to confine a container with a
    /// profile: decided on the host before the case runs; a host without it skips the case.
    Apparmor,
    /// SELinux in the host's kernel (selinuxfs mounted), which a runtime needs to label a
    /// container: decided on the host before the case runs; a host without it skips the case.
    Selinux,
    /// User namespaces for pods (`NamespaceOption.userns_options`), as the run's runtime
    /// handler reports them in `Status.runtime_handlers[].features.user_namespaces`.
    UserNamespaces,
    /// Recursive read-only mounts (`Mount.recursive_read_only`), as the run's runtime handler
    /// reports them in `Status.runtime_handlers[].features.recursive_read_only_mounts`.
    RecursiveReadOnlyMounts,
    /// `SupplementalGroupsPolicy` and `ContainerStatus.user`, as the runtime reports them in
    /// `Status.features.supplemental_groups_policy`.
    SupplementalGroupsPolicy,
    /// The RuntimeConfig RPC (the cgroup driver); Unimplemented means the runtime lacks it.
    RuntimeConfig,
    /// GetContainerEvents, the event stream the evented PLEG reads; Unimplemented means the
    /// runtime lacks it.
    ContainerEvents,
    /// ListMetricDescriptors and ListPodSandboxMetrics; Unimplemented means the runtime lacks
    /// them.
    PodSandboxMetrics,
    /// The CRIListStreaming RPCs (StreamPodSandboxes and the other Stream* lists), alpha in
    /// the kubelet v1.36; Unimplemented means the runtime lacks them.
    ListStreaming,
    /// UpdatePodSandboxResources, which the kubelet calls best effort after a pod resize;
    /// Unimplemented means the runtime lacks it.
    SandboxResources,
    /// CheckpointContainer; Unimplemented means the runtime lacks it.
    Checkpoint,
    /// Image volumes (`Mount.image`); a CreateContainer answered Unimplemented means the
    /// runtime lacks them.
    ImageVolumes,
    /// Docker Hub's names: an image named by its short name (`busybox` for
    /// `docker.io/library/busybox:latest`), which only a docker.io name has. A run with
    /// `--registry-prefix` takes every image from its mirror, so it skips the case.
    DockerHubNames,
}

impl Need {
    /// The name suites write.
    pub fn name(self) -> &'static str {
        match self {
            Need::MockControl => "mock_control",
            Need::Process => "process",
            Need::Online => "online",
            Need::PodSandboxStats => "pod_sandbox_stats",
            Need::Apparmor => "apparmor",
            Need::Selinux => "selinux",
            Need::UserNamespaces => "user_namespaces",
            Need::RecursiveReadOnlyMounts => "recursive_read_only_mounts",
            Need::SupplementalGroupsPolicy => "supplemental_groups_policy",
            Need::RuntimeConfig => "runtime_config",
            Need::ContainerEvents => "container_events",
            Need::PodSandboxMetrics => "pod_sandbox_metrics",
            Need::ListStreaming => "list_streaming",
            Need::SandboxResources => "sandbox_resources",
            Need::Checkpoint => "checkpoint",
            Need::ImageVolumes => "image_volumes",
            Need::DockerHubNames => "docker_hub_names",
        }
    }

    /// True for a need the runtime answers in `Status` (its features, or its runtime
    /// handlers' features): decided before the case runs, by asking the target.
    pub fn in_status(self) -> bool {
        matches!(
            self,
            Need::UserNamespaces | Need::RecursiveReadOnlyMounts | Need::SupplementalGroupsPolicy
        )
    }

    /// The CRI methods whose Unimplemented answer means the runtime lacks this optional
    /// feature (none for the needs decided before the case runs).
    pub fn methods(self) -> &'static [&'static str] {
        match self {
            Need::PodSandboxStats => &["PodSandboxStats", "ListPodSandboxStats"],
            Need::RuntimeConfig => &["RuntimeConfig"],
            Need::ContainerEvents => &["GetContainerEvents"],
            Need::PodSandboxMetrics => &["ListMetricDescriptors", "ListPodSandboxMetrics"],
            Need::SandboxResources => &["UpdatePodSandboxResources"],
            Need::Checkpoint => &["CheckpointContainer"],
            Need::ListStreaming => &[
                "StreamPodSandboxes",
                "StreamContainers",
                "StreamContainerStats",
                "StreamPodSandboxStats",
                "StreamPodSandboxMetrics",
                "StreamImages",
            ],
            Need::ImageVolumes => &["CreateContainer"],
            _ => &[],
        }
    }

    /// Why a case with this need depends on its environment rather than on the runtime alone,
    /// for the label reports carry; `None` for needs about the runtime.
    pub fn environment(self) -> Option<&'static str> {
        match self {
            Need::Online => Some("needs the public registries (internet access)"),
            Need::Apparmor => Some("needs AppArmor in the host's kernel"),
            Need::Selinux => Some("needs SELinux in the host's kernel"),
            Need::DockerHubNames => {
                Some("names an image by a Docker Hub short name, which no mirror's name is")
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A suite file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The path cannot be read as a suite file or directory; `problem` says why.
    #[error("cannot read suite path {}: {problem}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        problem: ReadProblem,
    },
    /// The text is not YAML, or the YAML does not match the suite format.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// The file as shown to users.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong and where in the suite (case, step, key), with the valid choices
        /// where there are any; control characters are escaped.
        message: String,
    },
    /// The file parses but a case is inconsistent (an unknown alias, a mock step without the
    /// mark, a duplicate name).
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        /// The file as shown to users.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Two files of one directory define the same suite.
    #[error("suite `{suite}` is defined in both {first} and {second}")]
    Duplicate {
        /// The suite name.
        suite: String,
        /// The file seen first.
        first: String,
        /// The other file.
        second: String,
    },
    /// The filters select none of the loaded cases, so a run would check nothing.
    #[error("no case selected: {}", nothing_selected(filters, *cases))]
    NothingSelected {
        /// The filters as the user gave them, e.g. "`--focus nomatch`"; empty for none.
        filters: String,
        /// How many cases were loaded.
        cases: usize,
    },
}

/// Why a suite path cannot be read. The message follows "cannot read suite path X: ".
#[derive(Debug, thiserror::Error)]
pub enum ReadProblem {
    /// Nothing is at the path.
    #[error("no such file or directory")]
    Missing,
    /// A symbolic link whose target does not exist.
    #[error("it is a symbolic link to {}, which does not exist", .0.display())]
    DanglingLink(PathBuf),
    /// A directory where a file is expected (a `*.yaml` directory inside a suite directory).
    #[error("it is a directory, not a suite file")]
    Directory,
    /// A FIFO, socket or device: never opened, since reading one could block or never end.
    #[error("it is a {0}, not a regular file")]
    NotAFile(&'static str),
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("it has {size} bytes, more than the {max} a suite file may have", max = MAX_FILE_BYTES)]
    TooLarge {
        /// Its size, or the bytes read before giving up.
        size: u64,
    },
    /// Opening or reading failed for another reason (permission denied, an I/O error).
    #[error("{0}")]
    Io(std::io::Error),
}

/// Checks that `selects` picks at least one loaded case; `filters` describes the filters for
/// the message (e.g. "`--focus nomatch`"). A run or `--list` that selects nothing is an error:
/// it would pass while checking nothing.
pub fn ensure_selected(
    suites: &[Suite],
    selects: impl Fn(&Suite, &Case) -> bool,
    filters: &str,
) -> Result<usize, SuiteError> {
    let selected = suites
        .iter()
        .map(|suite| suite.cases.iter().filter(|c| selects(suite, c)).count())
        .sum();
    if selected > 0 {
        return Ok(selected);
    }
    Err(SuiteError::NothingSelected {
        filters: filters.to_owned(),
        cases: suites.iter().map(|s| s.cases.len()).sum(),
    })
}

fn nothing_selected(filters: &str, cases: usize) -> String {
    match (filters.is_empty(), cases) {
        (_, 0) => "no suite loaded a case".to_owned(),
        (true, _) => format!("none of the {cases} loaded cases"),
        (false, 1) => format!("{filters} match not even the one loaded case"),
        (false, _) => format!("{filters} match none of the {cases} loaded cases"),
    }
}

/// All tags of all cases, sorted, for `--tags` help and errors.
pub fn all_tags(suites: &[Suite]) -> BTreeSet<String> {
    suites
        .iter()
        .flat_map(|s| s.cases.iter())
        .flat_map(|c| c.tags.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selecting_no_case_is_an_error_that_names_the_filters() {
        let loaded = load_embedded();
        let all = loaded.suites.iter().map(|s| s.cases.len()).sum::<usize>();
        assert_eq!(
            ensure_selected(&loaded.suites, |_, _| true, "").unwrap(),
            all
        );
        let err = ensure_selected(&loaded.suites, |_, _| false, "`--focus nomatch`").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no case selected: `--focus nomatch` match none of the {all} loaded cases")
        );
        let err = ensure_selected(&[], |_, _| true, "").unwrap_err();
        assert_eq!(err.to_string(), "no case selected: no suite loaded a case");
    }
}
