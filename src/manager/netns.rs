//! `get_netns`: the seed's lookup of a ready sandbox's network namespace path. CRI v1 dropped
//! the path from the sandbox status, so it is read from the verbose status's `info` instead.

use std::collections::BTreeMap;

use super::{KubeGenericRuntimeManager, ManagerError};
use crate::cri::labels::MANAGED;
use crate::cri::v1;

impl KubeGenericRuntimeManager {
    /// The network namespace path of a ready sandbox (under the seed's rules, a managed one). A
    /// sandbox that is not ready, or not managed under the seed's rules, is not found. Ports `GetNetNS` (kuberuntime_manager.go, 2016), which read
    /// `linux.namespaces.network` from v1alpha1's status; v1 has no such field, so this asks for
    /// the verbose status and reads the path from its `info` JSON (containerd's
    /// `runtimeSpec.linux.namespaces`, see [`crate::cri::sandbox_netns`]), and a runtime that
    /// does not put it there gets [`ManagerError::NetNsNotSupported`] as the seed's fake did.
    pub async fn get_netns(&self, sandbox_id: &str) -> Result<String, ManagerError> {
        let filter = v1::PodSandboxFilter {
            id: sandbox_id.to_owned(),
            state: Some(v1::PodSandboxStateValue {
                state: v1::PodSandboxState::SandboxReady.into(),
            }),
            // Only the seed's kubelet marks its sandboxes with the managed label.
            label_selector: if self.profile.is_current() {
                BTreeMap::new()
            } else {
                BTreeMap::from([(MANAGED.to_owned(), "true".to_owned())])
            },
        };
        let found = self.list_sandboxes(Some(filter)).await?;
        let sandbox = found.first().ok_or_else(|| ManagerError::SandboxNotFound {
            id: sandbox_id.to_owned(),
        })?;
        let answer = self
            .client
            .pod_sandbox_status_with(&sandbox.id, true)
            .await?;
        netns_path(&answer.info).ok_or_else(|| ManagerError::NetNsNotSupported {
            id: sandbox_id.to_owned(),
        })
    }
}

/// The network namespace path in a verbose status's `info`; `None` when the runtime does not
/// expose one (no JSON info, or a host-network sandbox). An empty path is returned as is (the
/// seed also returned "" without error when the runtime said so).
pub(crate) fn netns_path(info: &BTreeMap<String, String>) -> Option<String> {
    crate::cri::sandbox_netns(info)?.path
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::containerd_shape(
        Some(r#"{"pid":42,"runtimeSpec":{"linux":{"namespaces":[{"type":"network","path":"/var/run/netns/cni-1"}]}}}"#),
        Some("/var/run/netns/cni-1")
    )]
    #[case::top_level_field(
        Some(r#"{"pid":42,"netNamespacePath":"/var/run/netns/cni-1"}"#),
        Some("/var/run/netns/cni-1")
    )]
    #[case::empty_path(Some(r#"{"netNamespacePath":""}"#), Some(""))]
    #[case::no_info_entry(None, None)]
    #[case::field_missing(Some(r#"{"pid":42}"#), None)]
    #[case::field_not_a_string(Some(r#"{"netNamespacePath":7}"#), None)]
    #[case::not_json(Some("netNamespacePath=/x"), None)]
    fn netns_path_reads_the_verbose_info_json(
        #[case] info: Option<&str>,
        #[case] expected: Option<&str>,
    ) {
        let info: BTreeMap<String, String> = info
            .map(|json| ("info".to_owned(), json.to_owned()))
            .into_iter()
            .collect();
        assert_eq!(netns_path(&info).as_deref(), expected);
    }
}
