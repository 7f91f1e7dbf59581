//! The facts of the node a run ran on, for the report: which machine, kernel, OS image and
//! runtime. A fleet's merged report groups nodes by them, so each run states them itself
//! rather than leaving the collector to guess from pod names.

use serde::{Deserialize, Serialize};

use crate::cri::v1;

/// The node a run ran on and the runtime it ran against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// The node's name: `NODE_NAME` (as a pod's Downward API sets it), else the hostname.
    pub name: String,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// The OS image (`PRETTY_NAME` of /etc/os-release); none when the file is missing or
    /// lacks it (a scratch image without the host's /etc mounted).
    pub os_image: Option<String>,
    /// The runtime's name from its Version answer; none when the run never got one (the
    /// endpoint could not be reached).
    pub runtime_name: Option<String>,
    /// The runtime's version from its Version answer; none as for `runtime_name`.
    pub runtime_version: Option<String>,
}

impl Node {
    /// Reads this machine's facts; `version` is the runtime's Version answer, if there was one.
    pub fn read(version: Option<&v1::VersionResponse>) -> Self {
        let uname = rustix::system::uname();
        let hostname = uname.nodename().to_string_lossy().into_owned();
        Self {
            name: node_name(std::env::var("NODE_NAME").ok(), hostname),
            kernel: uname.release().to_string_lossy().into_owned(),
            os_image: std::fs::read_to_string("/etc/os-release")
                .ok()
                .and_then(|text| pretty_name(&text)),
            runtime_name: version.map(|v| v.runtime_name.clone()),
            runtime_version: version.map(|v| v.runtime_version.clone()),
        }
    }
}

/// `NODE_NAME` when set and not blank, else the hostname.
fn node_name(from_env: Option<String>, hostname: String) -> String {
    from_env
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or(hostname)
}

/// `PRETTY_NAME` of an os-release file (shell-style assignment, value maybe quoted); none when
/// the file does not set it or sets it empty.
fn pretty_name(os_release: &str) -> Option<String> {
    let value = os_release
        .lines()
        .find_map(|line| line.trim().strip_prefix("PRETTY_NAME="))?;
    let value = value.trim();
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
        .unwrap_or(value);
    // os-release(5) allows backslash escapes inside double quotes.
    let mut out = String::with_capacity(unquoted.len());
    let mut chars = unquoted.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::downward_api(Some("node-7"), "host", "node-7")]
    #[case::unset(None, "host", "host")]
    #[case::blank(Some("  "), "host", "host")]
    fn the_node_name_comes_from_node_name_else_the_hostname(
        #[case] env: Option<&str>,
        #[case] hostname: &str,
        #[case] expected: &str,
    ) {
        assert_eq!(node_name(env.map(Into::into), hostname.into()), expected);
    }

    #[rstest]
    #[case::double_quoted(
        "NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
        Some("Debian GNU/Linux 12 (bookworm)")
    )]
    #[case::single_quoted("PRETTY_NAME='Alpine Linux v3.20'", Some("Alpine Linux v3.20"))]
    #[case::bare("PRETTY_NAME=Flatcar", Some("Flatcar"))]
    #[case::escaped(r#"PRETTY_NAME="say \"hi\"""#, Some("say \"hi\""))]
    #[case::missing("NAME=x\nID=y\n", None)]
    #[case::empty("PRETTY_NAME=\"\"", None)]
    fn the_os_image_is_the_pretty_name_of_os_release(
        #[case] text: &str,
        #[case] expected: Option<&str>,
    ) {
        assert_eq!(pretty_name(text).as_deref(), expected);
    }

    #[test]
    fn a_runtime_answer_names_the_runtime_and_none_leaves_it_unknown() {
        let version = crate::mock::default_version();
        let node = Node::read(Some(&version));
        assert_eq!(node.runtime_name.as_deref(), Some("cri-harness-mock"));
        assert_eq!(node.runtime_version, Some(version.runtime_version));
        assert!(!node.kernel.is_empty());
        let node = Node::read(None);
        assert_eq!(node.runtime_name, None);
        assert_eq!(node.runtime_version, None);
    }
}
