//! Which kubelet the manager behaves as where the 2016 seed and today's kubelet disagree on a
//! rule already ported. The seed is the default, so a run checks what it always checked; a
//! run under `--kubelet current` holds the runtime to what today's kubelet relies on.

use serde::{Deserialize, Serialize};

/// The kubelet whose rules the manager follows. Where the seed and today's kubelet differ
/// (the book's kubelet profiles page lists every rule; kubelet rules: #killpod, #getpodstatus,
/// #getpods), among others:
/// - kill: a StopContainer or StopPodSandbox answered NotFound is already stopped, so success
///   ([`Current`](Self::Current)) or a failed step ([`Seed`](Self::Seed));
/// - pod status: a ContainerStatus answered NotFound skips that container, or fails the call;
/// - pod list: pods carry their sandbox's `created_at` and come newest first, or carry 0 and
///   come in the order they were first seen.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum KubeletProfile {
    /// The 2016 seed's `kuberuntime` (CRI v1alpha1), which the port follows by default.
    #[default]
    Seed,
    /// Today's kubelet (about 1.33/1.34, CRI v1).
    Current,
}

impl KubeletProfile {
    /// The name the flag and suites write (`seed`, `current`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// True under today's kubelet.
    pub fn is_current(self) -> bool {
        self == Self::Current
    }

    /// Whether a CRI failure means "already gone" to this kubelet in the places where today's
    /// kubelet forgives it (a stop during kill, a container status while gathering the pod's).
    pub(crate) fn forgives(self, code: tonic::Code) -> bool {
        self.is_current() && code == tonic::Code::NotFound
    }
}

impl std::fmt::Display for KubeletProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::seed_never(KubeletProfile::Seed, tonic::Code::NotFound, false)]
    #[case::current_not_found(KubeletProfile::Current, tonic::Code::NotFound, true)]
    #[case::current_other_code(KubeletProfile::Current, tonic::Code::Internal, false)]
    #[case::current_unavailable(KubeletProfile::Current, tonic::Code::Unavailable, false)]
    fn only_today_s_kubelet_forgives_only_not_found(
        #[case] profile: KubeletProfile,
        #[case] code: tonic::Code,
        #[case] expected: bool,
    ) {
        assert_eq!(profile.forgives(code), expected);
    }

    #[test]
    fn the_default_is_the_seed_and_names_round_trip_through_serde() {
        assert_eq!(KubeletProfile::default(), KubeletProfile::Seed);
        for profile in [KubeletProfile::Seed, KubeletProfile::Current] {
            let text = serde_saphyr::to_string(&profile).unwrap_or_default();
            assert_eq!(text.trim(), profile.name());
            let back: KubeletProfile = serde_saphyr::from_str(profile.name()).unwrap();
            assert_eq!(back, profile);
        }
    }
}
