//! The kubelet feature gates that switch a rule the manager ports, with today's defaults (v1.34's;
//! the stored v1.35 feature list's for the crash-loop gates and container restart rules, and
//! v1.36's for list streaming and restarting all containers).
//! A run sets them with `--feature-gates NAME=BOOL,...` and a suite case with `feature_gates:`;
//! only gates known here are accepted, so a typo never silently runs the default rule.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A kubelet feature gate the manager reads.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
pub enum FeatureGate {
    /// Deprecated, off by default since 1.33: a pod without sidecars drives its init containers
    /// through `findNextInitContainerToRun` (one `NextInitContainerToStart`) instead of
    /// `computeInitContainerActions`.
    LegacySidecarContainers,
    /// Beta, on by default since 1.33: a running container whose spec resources differ from
    /// what the runtime reports is resized through UpdateContainerResources, or restarted where
    /// its resize policy says so.
    InPlacePodVerticalScaling,
    /// Alpha in 1.36, off by default: the lists the manager makes (sandboxes, containers) go
    /// through the server-streaming RPCs, falling back to the unary ones for good once the
    /// runtime answers Unimplemented. Read only under today's kubelet; the seed had no streams.
    #[allow(clippy::upper_case_acronyms)]
    CRIListStreaming,
    /// Beta, on by default since 1.35: the crash-loop back-off stops at the node's
    /// `crashLoopBackOff.maxContainerRestartPeriod` (300 s where unset), which is also the first
    /// delay where it is shorter. Read only under today's kubelet.
    KubeletCrashLoopBackOffMax,
    /// Alpha since 1.33, off by default: the crash-loop back-off starts at 1 s and stops at
    /// 60 s. Read only under today's kubelet.
    ReduceDefaultCrashLoopBackOffDecay,
    /// Beta, on by default since 1.35: a regular container's own `restartPolicy` and its
    /// `restartPolicyRules` (by exit code) decide whether it restarts, over the pod's policy.
    ContainerRestartRules,
    /// Beta, on by default in 1.36 (alpha in 1.35): a container whose exit matches a rule with
    /// the `RestartAllContainers` action makes SyncPod stop and remove every init and regular
    /// container of the pod, its sandbox kept, so the pod starts over from its first init
    /// container. Needs `ContainerRestartRules` too.
    RestartAllContainersOnContainerExits,
}

impl FeatureGate {
    /// The gate's name as the kubelet's `--feature-gates` writes it.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Whether today's kubelet has the gate on when nobody sets it.
    pub fn default_enabled(self) -> bool {
        match self {
            Self::LegacySidecarContainers => false,
            Self::InPlacePodVerticalScaling => true,
            Self::CRIListStreaming => false,
            Self::KubeletCrashLoopBackOffMax => true,
            Self::ReduceDefaultCrashLoopBackOffDecay => false,
            Self::ContainerRestartRules => true,
            Self::RestartAllContainersOnContainerExits => true,
        }
    }

    /// The names of every known gate, for error messages.
    pub fn names() -> String {
        <Self as strum::VariantArray>::VARIANTS
            .iter()
            .map(|g| g.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for FeatureGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--feature-gates` value that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// A name the harness does not know.
    #[error("unknown feature gate {name:?} (known: {known})")]
    Unknown {
        /// The name as written.
        name: String,
        /// The known names.
        known: String,
    },
    /// An entry that is not `NAME=true` or `NAME=false`.
    #[error("feature gate entry {entry:?} is not NAME=true or NAME=false")]
    Malformed {
        /// The entry as written.
        entry: String,
    },
}

/// The gates a manager follows: the ones set explicitly, every other at its default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FeatureGates {
    set: BTreeMap<FeatureGate, bool>,
}

impl FeatureGates {
    /// Whether `gate` is on.
    pub fn enabled(&self, gate: FeatureGate) -> bool {
        self.set
            .get(&gate)
            .copied()
            .unwrap_or_else(|| gate.default_enabled())
    }

    /// The same gates with `gate` set to `on`.
    #[must_use]
    pub fn with(mut self, gate: FeatureGate, on: bool) -> Self {
        self.set.insert(gate, on);
        self
    }

    /// These gates with `over`'s explicit settings taking precedence (a case's over the run's).
    #[must_use]
    pub fn overridden_by(&self, over: &Self) -> Self {
        let mut set = self.set.clone();
        set.extend(over.set.iter().map(|(g, on)| (*g, *on)));
        Self { set }
    }

    /// Whether no gate is set explicitly.
    pub fn is_default(&self) -> bool {
        self.set.is_empty()
    }

    /// Every known gate with its effective value, by name: what a report records so a run can
    /// be repeated.
    pub fn effective(&self) -> BTreeMap<&'static str, bool> {
        <FeatureGate as strum::VariantArray>::VARIANTS
            .iter()
            .map(|g| (g.name(), self.enabled(*g)))
            .collect()
    }

    /// The explicitly set gates, by name.
    pub fn explicit(&self) -> BTreeMap<&'static str, bool> {
        self.set.iter().map(|(g, on)| (g.name(), *on)).collect()
    }
}

impl FromStr for FeatureGates {
    type Err = GateError;

    /// Reads the kubelet's `NAME=BOOL,NAME=BOOL` form; an empty string sets nothing.
    fn from_str(text: &str) -> Result<Self, GateError> {
        let mut gates = Self::default();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let malformed = || GateError::Malformed {
                entry: entry.to_owned(),
            };
            let (name, value) = entry.split_once('=').ok_or_else(malformed)?;
            let gate = FeatureGate::from_str(name.trim()).map_err(|_| GateError::Unknown {
                name: name.trim().to_owned(),
                known: FeatureGate::names(),
            })?;
            let on = match value.trim() {
                "true" => true,
                "false" => false,
                _ => return Err(malformed()),
            };
            gates.set.insert(gate, on);
        }
        Ok(gates)
    }
}

impl std::fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries: Vec<String> = self.set.iter().map(|(g, on)| format!("{g}={on}")).collect();
        f.write_str(&entries.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn unset_gates_take_today_s_defaults() {
        let gates = FeatureGates::default();
        assert!(!gates.enabled(FeatureGate::LegacySidecarContainers));
        assert!(gates.enabled(FeatureGate::InPlacePodVerticalScaling));
        assert_eq!(
            gates.effective(),
            BTreeMap::from([
                ("CRIListStreaming", false),
                ("ContainerRestartRules", true),
                ("InPlacePodVerticalScaling", true),
                ("KubeletCrashLoopBackOffMax", true),
                ("LegacySidecarContainers", false),
                ("ReduceDefaultCrashLoopBackOffDecay", false),
                ("RestartAllContainersOnContainerExits", true)
            ])
        );
    }

    #[rstest]
    #[case::one("LegacySidecarContainers=true", &[(FeatureGate::LegacySidecarContainers, true)])]
    #[case::two_with_spaces(
        " LegacySidecarContainers=true , InPlacePodVerticalScaling=false ",
        &[(FeatureGate::LegacySidecarContainers, true), (FeatureGate::InPlacePodVerticalScaling, false)]
    )]
    #[case::empty("", &[])]
    fn the_kubelet_s_flag_form_is_read(#[case] text: &str, #[case] set: &[(FeatureGate, bool)]) {
        let gates: FeatureGates = text.parse().unwrap();
        for (gate, on) in set {
            assert_eq!(gates.enabled(*gate), *on);
        }
        assert_eq!(gates.explicit().len(), set.len());
        let again: FeatureGates = gates.to_string().parse().unwrap();
        assert_eq!(again, gates);
    }

    #[rstest]
    #[case::unknown("SidecarContainers=true", "unknown feature gate \"SidecarContainers\" (known: LegacySidecarContainers, InPlacePodVerticalScaling, CRIListStreaming, KubeletCrashLoopBackOffMax, ReduceDefaultCrashLoopBackOffDecay, ContainerRestartRules, RestartAllContainersOnContainerExits)")]
    #[case::no_value("LegacySidecarContainers", "not NAME=true")]
    #[case::not_a_bool("LegacySidecarContainers=yes", "not NAME=true")]
    fn bad_entries_are_refused(#[case] text: &str, #[case] message: &str) {
        let err = text.parse::<FeatureGates>().unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }

    #[test]
    fn a_case_s_gates_override_the_run_s() {
        let run: FeatureGates = "LegacySidecarContainers=true,InPlacePodVerticalScaling=false"
            .parse()
            .unwrap();
        let case: FeatureGates = "InPlacePodVerticalScaling=true".parse().unwrap();
        let both = run.overridden_by(&case);
        assert!(both.enabled(FeatureGate::LegacySidecarContainers));
        assert!(both.enabled(FeatureGate::InPlacePodVerticalScaling));
    }

    #[test]
    fn gates_read_from_a_suite_map() {
        let gates: FeatureGates =
            serde_saphyr::from_str("{LegacySidecarContainers: true}").unwrap();
        assert!(gates.enabled(FeatureGate::LegacySidecarContainers));
        assert!(serde_saphyr::from_str::<FeatureGates>("{Nope: true}").is_err());
    }
}
