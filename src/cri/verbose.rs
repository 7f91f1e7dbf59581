//! Runtime details that CRI v1 only carries in verbose status answers (`info["info"]`, a JSON
//! document whose shape is the runtime's own). Read here once, for the manager's `get_netns`,
//! the runner's network checks and the steps that need a process id (`connect` from a pod,
//! `stop_container`), in containerd's shape (which the mock also answers in).

use std::collections::BTreeMap;

/// Key of the verbose-status `info` entry holding the runtime's JSON details.
const INFO_KEY: &str = "info";

/// What a verbose PodSandboxStatus says about the sandbox's network namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxNetns {
    /// The namespace's path, from `runtimeSpec.linux.namespaces[type=network].path` (containerd)
    /// or a top-level `netNamespacePath`; `None` for host-network sandboxes, which have none.
    pub path: Option<String>,
    /// `netNamespaceClosed`: whether the runtime has released the namespace; `None` when the
    /// runtime does not say.
    pub closed: Option<bool>,
}

/// The process id a verbose PodSandboxStatus or ContainerStatus `info` map names (containerd's
/// `pid`: the pause process of a sandbox, the first process of a container); `None` when it
/// names none, or 0 (the process has ended).
pub fn process_id(info: &BTreeMap<String, String>) -> Option<u32> {
    let details: serde_json::Value = serde_json::from_str(info.get(INFO_KEY)?).ok()?;
    let pid = details.get("pid")?.as_u64()?;
    u32::try_from(pid).ok().filter(|&pid| pid > 0)
}

/// Parses the network namespace details of a verbose PodSandboxStatus `info` map; `None` when
/// there is no `info` entry or it is not JSON (the runtime exposes nothing we can read).
pub fn sandbox_netns(info: &BTreeMap<String, String>) -> Option<SandboxNetns> {
    let details: serde_json::Value = serde_json::from_str(info.get(INFO_KEY)?).ok()?;
    let from_spec = details
        .pointer("/runtimeSpec/linux/namespaces")
        .and_then(|namespaces| namespaces.as_array())
        .and_then(|namespaces| {
            namespaces
                .iter()
                .find(|ns| ns.get("type").and_then(|t| t.as_str()) == Some("network"))
        })
        .and_then(|ns| ns.get("path"))
        .and_then(|path| path.as_str());
    let path = from_spec
        .or_else(|| details.get("netNamespacePath").and_then(|p| p.as_str()))
        .map(str::to_owned);
    let closed = details.get("netNamespaceClosed").and_then(|c| c.as_bool());
    Some(SandboxNetns { path, closed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn info(json: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(INFO_KEY.to_owned(), json.to_owned())])
    }

    #[rstest]
    #[case::containerd_pod_network(
        r#"{"netNamespaceClosed":false,"runtimeSpec":{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"/run/netns/cni-1"}]}}}"#,
        Some("/run/netns/cni-1"),
        Some(false)
    )]
    #[case::containerd_after_stop_keeps_the_path_and_says_closed(
        r#"{"netNamespaceClosed":true,"runtimeSpec":{"linux":{"namespaces":[{"type":"network","path":"/run/netns/cni-1"}]}}}"#,
        Some("/run/netns/cni-1"),
        Some(true)
    )]
    #[case::containerd_host_network_has_no_network_namespace(
        r#"{"netNamespaceClosed":false,"runtimeSpec":{"linux":{"namespaces":[{"type":"pid"},{"type":"ipc"}]}}}"#,
        None,
        Some(false)
    )]
    #[case::top_level_path(r#"{"netNamespacePath":"/x"}"#, Some("/x"), None)]
    #[case::path_not_a_string(r#"{"netNamespacePath":7}"#, None, None)]
    fn reads_the_netns_from_verbose_info(
        #[case] json: &str,
        #[case] path: Option<&str>,
        #[case] closed: Option<bool>,
    ) {
        let netns = sandbox_netns(&info(json)).expect("JSON info");
        assert_eq!(netns.path.as_deref(), path);
        assert_eq!(netns.closed, closed);
    }

    #[rstest]
    #[case::no_info_entry(BTreeMap::new())]
    #[case::not_json(info("netNamespacePath=/x"))]
    fn unreadable_info_is_none(#[case] info: BTreeMap<String, String>) {
        assert_eq!(sandbox_netns(&info), None);
    }
}
