//! One-line summaries of CRI requests: the identifying fields (ids, filters, timeouts) and
//! nothing bulky. The client's call log and the mock's call log share them, so both read alike.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::v1;

/// A short, stable, single-line description of a request.
pub trait RequestSummary {
    /// The summary; empty when the request has nothing identifying.
    fn summary(&self) -> String;
}

fn labels(map: &BTreeMap<String, String>) -> String {
    let inner: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", inner.join(","))
}

fn sandbox_state(state: i32) -> &'static str {
    v1::PodSandboxState::try_from(state).map_or("INVALID", |s| s.as_str_name())
}

fn container_state(state: i32) -> &'static str {
    v1::ContainerState::try_from(state).map_or("INVALID", |s| s.as_str_name())
}

fn metadata_name(name: &str, namespace: &str, uid: &str, attempt: u32) -> String {
    format!("{namespace}/{name} uid={uid} attempt={attempt}")
}

impl RequestSummary for v1::VersionRequest {
    fn summary(&self) -> String {
        format!("version={:?}", self.version)
    }
}

impl RequestSummary for v1::StatusRequest {
    fn summary(&self) -> String {
        if self.verbose {
            "verbose".into()
        } else {
            String::new()
        }
    }
}

impl RequestSummary for v1::RunPodSandboxRequest {
    fn summary(&self) -> String {
        let Some(config) = &self.config else {
            return "config=none".into();
        };
        let mut out = match &config.metadata {
            Some(m) => metadata_name(&m.name, &m.namespace, &m.uid, m.attempt),
            None => "metadata=none".into(),
        };
        let network = config
            .linux
            .as_ref()
            .and_then(|l| l.security_context.as_ref())
            .and_then(|s| s.namespace_options.as_ref())
            .map(|n| n.network);
        if network == Some(v1::NamespaceMode::Node as i32) {
            out.push_str(" network=NODE");
        }
        if !self.runtime_handler.is_empty() {
            let _ = write!(out, " handler={}", self.runtime_handler);
        }
        // Sysctls show as sent: the kubelet's `/`-to-dot conversion is visible in the record.
        let sysctls = config.linux.as_ref().map(|l| &l.sysctls);
        if let Some(sysctls) = sysctls.filter(|s| !s.is_empty()) {
            let _ = write!(out, " sysctls={}", labels(sysctls));
        }
        out
    }
}

impl RequestSummary for v1::StopPodSandboxRequest {
    fn summary(&self) -> String {
        format!("id={}", self.pod_sandbox_id)
    }
}

impl RequestSummary for v1::RemovePodSandboxRequest {
    fn summary(&self) -> String {
        format!("id={}", self.pod_sandbox_id)
    }
}

impl RequestSummary for v1::PodSandboxStatusRequest {
    fn summary(&self) -> String {
        let verbose = if self.verbose { " verbose" } else { "" };
        format!("id={}{verbose}", self.pod_sandbox_id)
    }
}

impl RequestSummary for v1::ListPodSandboxRequest {
    fn summary(&self) -> String {
        let Some(filter) = &self.filter else {
            return "filter=none".into();
        };
        let mut parts = Vec::new();
        if !filter.id.is_empty() {
            parts.push(format!("id={}", filter.id));
        }
        if let Some(state) = &filter.state {
            parts.push(format!("state={}", sandbox_state(state.state)));
        }
        if !filter.label_selector.is_empty() {
            parts.push(format!("labels={}", labels(&filter.label_selector)));
        }
        format!("filter{{{}}}", parts.join(" "))
    }
}

impl RequestSummary for v1::CreateContainerRequest {
    fn summary(&self) -> String {
        let name = self
            .config
            .as_ref()
            .and_then(|c| c.metadata.as_ref())
            .map_or_else(
                || "metadata=none".to_owned(),
                |m| format!("name={} attempt={}", m.name, m.attempt),
            );
        format!("sandbox={} {name}", self.pod_sandbox_id)
    }
}

impl RequestSummary for v1::StartContainerRequest {
    fn summary(&self) -> String {
        format!("id={}", self.container_id)
    }
}

impl RequestSummary for v1::StopContainerRequest {
    fn summary(&self) -> String {
        format!("id={} timeout={}", self.container_id, self.timeout)
    }
}

impl RequestSummary for v1::RemoveContainerRequest {
    fn summary(&self) -> String {
        format!("id={}", self.container_id)
    }
}

impl RequestSummary for v1::ContainerStatusRequest {
    fn summary(&self) -> String {
        format!("id={}", self.container_id)
    }
}

impl RequestSummary for v1::ListContainersRequest {
    fn summary(&self) -> String {
        let Some(filter) = &self.filter else {
            return "filter=none".into();
        };
        let mut parts = Vec::new();
        if !filter.id.is_empty() {
            parts.push(format!("id={}", filter.id));
        }
        if !filter.pod_sandbox_id.is_empty() {
            parts.push(format!("sandbox={}", filter.pod_sandbox_id));
        }
        if let Some(state) = &filter.state {
            parts.push(format!("state={}", container_state(state.state)));
        }
        if !filter.label_selector.is_empty() {
            parts.push(format!("labels={}", labels(&filter.label_selector)));
        }
        format!("filter{{{}}}", parts.join(" "))
    }
}

fn image_name(spec: &Option<v1::ImageSpec>) -> String {
    spec.as_ref()
        .map_or_else(|| "image=none".to_owned(), |s| format!("image={}", s.image))
}

impl RequestSummary for v1::PullImageRequest {
    fn summary(&self) -> String {
        image_name(&self.image)
    }
}

impl RequestSummary for v1::ListImagesRequest {
    fn summary(&self) -> String {
        self.filter
            .as_ref()
            .map_or_else(String::new, |f| image_name(&f.image))
    }
}

impl RequestSummary for v1::ImageStatusRequest {
    fn summary(&self) -> String {
        image_name(&self.image)
    }
}

impl RequestSummary for v1::RemoveImageRequest {
    fn summary(&self) -> String {
        image_name(&self.image)
    }
}

impl RequestSummary for v1::ImageFsInfoRequest {
    fn summary(&self) -> String {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_filters_summarise_in_label_order() {
        let request = v1::ListPodSandboxRequest {
            filter: Some(v1::PodSandboxFilter {
                id: String::new(),
                state: Some(v1::PodSandboxStateValue {
                    state: v1::PodSandboxState::SandboxReady as i32,
                }),
                label_selector: [
                    ("b".to_owned(), "2".to_owned()),
                    ("a".to_owned(), "1".to_owned()),
                ]
                .into_iter()
                .collect(),
            }),
        };
        assert_eq!(
            request.summary(),
            "filter{state=SANDBOX_READY labels={a=1,b=2}}"
        );
    }

    #[test]
    fn a_missing_filter_says_so() {
        assert_eq!(
            v1::ListContainersRequest { filter: None }.summary(),
            "filter=none"
        );
    }
}
