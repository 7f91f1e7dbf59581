//! Call-log summaries for the CRI requests the mock's call log names by an id, or by nothing,
//! and for the streaming lists, summarised as their unary twins.

use crate::cri::v1;
use crate::cri::RequestSummary;

/// Implements `RequestSummary` from the request's id field, or as empty.
macro_rules! summarise {
    ($($request:ident => $field:ident as $label:literal;)*) => {
        $(impl RequestSummary for v1::$request {
            fn summary(&self) -> String {
                format!(concat!($label, "={}"), self.$field)
            }
        })*
    };
    ($($request:ident;)*) => {
        $(impl RequestSummary for v1::$request {
            fn summary(&self) -> String {
                String::new()
            }
        })*
    };
}

summarise! {
    ReopenContainerLogRequest => container_id as "id";
    ExecSyncRequest => container_id as "id";
    ExecRequest => container_id as "id";
    AttachRequest => container_id as "id";
    PortForwardRequest => pod_sandbox_id as "sandbox";
    ContainerStatsRequest => container_id as "id";
    PodSandboxStatsRequest => pod_sandbox_id as "sandbox";
    CheckpointContainerRequest => container_id as "id";
}

summarise! {
    StreamContainerStatsRequest;
    StreamPodSandboxStatsRequest;
    UpdateRuntimeConfigRequest;
    GetEventsRequest;
    ListMetricDescriptorsRequest;
    ListPodSandboxMetricsRequest;
    StreamPodSandboxMetricsRequest;
    RuntimeConfigRequest;
}

/// The CPU and memory figures of Linux resources, as a recorded resize shows them.
fn linux_figures(l: &v1::LinuxContainerResources) -> String {
    format!(
        "cpu_shares={} cpu_quota={} cpu_period={} memory_limit={}",
        l.cpu_shares, l.cpu_quota, l.cpu_period, l.memory_limit_in_bytes
    )
}

/// The id and the Linux resources asked for, so a recorded resize shows what it sent.
impl RequestSummary for v1::UpdateContainerResourcesRequest {
    fn summary(&self) -> String {
        let mut out = format!("id={}", self.container_id);
        if let Some(l) = &self.linux {
            out.push(' ');
            out.push_str(&linux_figures(l));
        }
        out
    }
}

/// The sandbox and the pod-level resources sent, with the overhead where it is not empty.
impl RequestSummary for v1::UpdatePodSandboxResourcesRequest {
    fn summary(&self) -> String {
        let mut out = format!("sandbox={}", self.pod_sandbox_id);
        if let Some(l) = &self.resources {
            out.push(' ');
            out.push_str(&linux_figures(l));
        }
        match &self.overhead {
            Some(o) if *o != v1::LinuxContainerResources::default() => {
                out.push_str(" overhead: ");
                out.push_str(&linux_figures(o));
            }
            _ => {}
        }
        out
    }
}

// The streaming lists carry the same filters as their unary twins; summarise them alike.
impl RequestSummary for v1::StreamPodSandboxesRequest {
    fn summary(&self) -> String {
        v1::ListPodSandboxRequest {
            filter: self.filter.clone(),
        }
        .summary()
    }
}

// The stats lists filter by a subset of their twins' fields; summarise them alike too.
impl RequestSummary for v1::ListContainerStatsRequest {
    fn summary(&self) -> String {
        v1::ListContainersRequest {
            filter: self.filter.as_ref().map(|f| v1::ContainerFilter {
                id: f.id.clone(),
                pod_sandbox_id: f.pod_sandbox_id.clone(),
                label_selector: f.label_selector.clone(),
                ..Default::default()
            }),
        }
        .summary()
    }
}

impl RequestSummary for v1::ListPodSandboxStatsRequest {
    fn summary(&self) -> String {
        v1::ListPodSandboxRequest {
            filter: self.filter.as_ref().map(|f| v1::PodSandboxFilter {
                id: f.id.clone(),
                label_selector: f.label_selector.clone(),
                ..Default::default()
            }),
        }
        .summary()
    }
}

impl RequestSummary for v1::StreamContainersRequest {
    fn summary(&self) -> String {
        v1::ListContainersRequest {
            filter: self.filter.clone(),
        }
        .summary()
    }
}

impl RequestSummary for v1::StreamImagesRequest {
    fn summary(&self) -> String {
        v1::ListImagesRequest {
            filter: self.filter.clone(),
        }
        .summary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmodelled_requests_name_their_target() {
        let exec = v1::ExecSyncRequest {
            container_id: "abc".into(),
            ..Default::default()
        };
        let forward = v1::PortForwardRequest {
            pod_sandbox_id: "def".into(),
            port: vec![80],
        };
        assert_eq!(
            (exec.summary(), forward.summary()),
            ("id=abc".into(), "sandbox=def".into())
        );
    }

    #[test]
    fn stream_requests_summarise_like_their_list_twins() {
        let filter = v1::ContainerFilter {
            id: "abc".into(),
            ..Default::default()
        };
        let stream = v1::StreamContainersRequest {
            filter: Some(filter.clone()),
        };
        let list = v1::ListContainersRequest {
            filter: Some(filter),
        };
        assert_eq!(stream.summary(), list.summary());
    }

    #[test]
    fn stats_lists_summarise_their_filters_like_the_lists() {
        let stats = v1::ListContainerStatsRequest {
            filter: Some(v1::ContainerStatsFilter {
                pod_sandbox_id: "abc".into(),
                ..Default::default()
            }),
        };
        let list = v1::ListContainersRequest {
            filter: Some(v1::ContainerFilter {
                pod_sandbox_id: "abc".into(),
                ..Default::default()
            }),
        };
        assert_eq!(stats.summary(), list.summary());
        assert_eq!(
            v1::ListPodSandboxStatsRequest { filter: None }.summary(),
            "filter=none"
        );
    }
}
