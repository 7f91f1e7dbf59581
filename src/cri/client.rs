//! A typed CRI client over one channel per service. Every call gets the per-call deadline, an
//! error that names the method and the endpoint, and, when a [`CallLog`] is attached, a record
//! made when the call is issued (so concurrent calls log in issue order, which is stable).
//! Each call runs inside a `cri_call` debug span (field `method`), so a subscriber can time the
//! runtime's share of a manager operation without a second client. The calls that make an
//! object (RunPodSandbox, CreateContainer, StartContainer, PullImage) run to their answer or
//! deadline even when their caller is dropped, and [`CriClient::settle_in_flight`] waits for
//! them: a cleanup after an interruption then sees what they made.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::task::TaskTracker;
use tonic::transport::Channel;
use tracing::Instrument as _;

use super::summary::RequestSummary;
use super::v1;
use super::v1::image_service_client::ImageServiceClient;
use super::v1::runtime_service_client::RuntimeServiceClient;

/// Message size limit for both directions, the kubelet's 16 MiB (tonic's default is 4 MiB).
pub const MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// A CRI call that failed: the runtime answered with an error status or not at all in time.
#[derive(Debug, Clone, thiserror::Error)]
#[error("CRI {method} on {endpoint}: {}", describe(*code, message))]
pub struct CallError {
    /// Short CRI method name, e.g. `StopPodSandbox`.
    pub method: &'static str,
    /// The endpoint the call went to.
    pub endpoint: String,
    /// gRPC status code; `DeadlineExceeded` also for our own per-call deadline.
    pub code: tonic::Code,
    /// The runtime's message (or ours, for a deadline).
    pub message: String,
}

fn describe(code: tonic::Code, message: &str) -> String {
    if message.is_empty() {
        format!("{code:?}")
    } else {
        format!("{code:?}: {message}")
    }
}

impl CallError {
    /// True when the runtime said the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code == tonic::Code::NotFound
    }
}

/// One CRI call as recorded in a [`CallLog`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallRecord {
    /// Short CRI method name.
    pub method: String,
    /// One-line summary of the request's identifying fields.
    pub request: String,
    /// `OK`, or the status code's name followed by the message.
    pub outcome: String,
}

/// Shared, ordered record of the calls made through clients that carry it.
#[derive(Debug, Clone, Default)]
pub struct CallLog(Arc<Mutex<Vec<CallRecord>>>);

impl CallLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Removes and returns every record so far.
    pub fn take(&self) -> Vec<CallRecord> {
        std::mem::take(&mut *self.lock())
    }

    /// Copies every record so far.
    pub fn records(&self) -> Vec<CallRecord> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CallRecord>> {
        // A panic while holding the lock leaves a consistent vector; keep using it.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn start(&self, method: &str, request: String) -> usize {
        let mut records = self.lock();
        records.push(CallRecord {
            method: method.to_owned(),
            request,
            outcome: "pending".to_owned(),
        });
        records.len() - 1
    }

    fn finish(&self, slot: usize, outcome: String) {
        // `take` may have emptied the log meanwhile; then the record is simply gone.
        if let Some(record) = self.lock().get_mut(slot) {
            record.outcome = outcome;
        }
    }
}

/// A CRI client for one runtime endpoint and one image endpoint (often the same socket).
#[derive(Debug, Clone)]
pub struct CriClient {
    runtime: RuntimeServiceClient<Channel>,
    image: ImageServiceClient<Channel>,
    endpoint: String,
    timeout: Duration,
    log: Option<CallLog>,
    /// The object-making calls issued through this client (and its clones) still in flight.
    in_flight: TaskTracker,
}

/// What [`CriClient::settle_in_flight`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// Object-making calls still in flight when the wait began.
    pub waited_for: usize,
    /// Every one of them returned (answered or ran out of its deadline) within the bound.
    pub settled: bool,
}

impl CriClient {
    /// Wraps connected channels. `endpoint` is only used in messages; `timeout` bounds each call.
    pub fn new(
        runtime: Channel,
        image: Channel,
        endpoint: impl Into<String>,
        timeout: Duration,
    ) -> Self {
        Self {
            runtime: RuntimeServiceClient::new(runtime)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
            image: ImageServiceClient::new(image)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
            endpoint: endpoint.into(),
            timeout,
            log: None,
            in_flight: TaskTracker::new(),
        }
    }

    /// The same client with its own record of object-making calls in flight, so that a
    /// case's cleanup waits for its own calls only, not those of cases running beside it.
    pub fn with_own_in_flight(&self) -> Self {
        Self {
            in_flight: TaskTracker::new(),
            ..self.clone()
        }
    }

    /// Waits, at most `bound`, for the object-making calls in flight through this client to
    /// return. Each has its own deadline (the per-call timeout), so the wait ends by then even
    /// with a longer bound.
    pub async fn settle_in_flight(&self, bound: Duration) -> InFlight {
        let waited_for = self.in_flight.len();
        self.in_flight.close();
        let settled = tokio::time::timeout(bound, self.in_flight.wait())
            .await
            .is_ok();
        // Reopened: the cleanup that follows, or a later case, may issue more.
        self.in_flight.reopen();
        InFlight {
            waited_for,
            settled,
        }
    }

    /// The same client, recording every call it makes into `log`.
    pub fn with_call_log(&self, log: CallLog) -> Self {
        Self {
            log: Some(log),
            ..self.clone()
        }
    }

    /// The same client with another per-call deadline.
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout,
            ..self.clone()
        }
    }

    /// The endpoint this client talks to, as given.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The per-call deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The generated RuntimeService client, for calls this wrapper does not cover.
    pub fn runtime_service(&self) -> RuntimeServiceClient<Channel> {
        self.runtime.clone()
    }

    /// The generated ImageService client, for calls this wrapper does not cover.
    pub fn image_service(&self) -> ImageServiceClient<Channel> {
        self.image.clone()
    }

    async fn call<Req, Resp, Fut>(
        &self,
        method: &'static str,
        request: Req,
        send: impl FnOnce(Req) -> Fut,
    ) -> Result<Resp, CallError>
    where
        Req: RequestSummary,
        Fut: Future<Output = Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let slot = self
            .log
            .as_ref()
            .map(|log| (log, log.start(method, request.summary())));
        tracing::debug!(method, request = %request.summary(), "CRI call");
        let span = tracing::debug_span!("cri_call", method);
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(self.timeout, send(request))
            .instrument(span)
            .await;
        crate::timing::cri_call(started.elapsed());
        let result = match answer {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(CallError {
                method,
                endpoint: self.endpoint.clone(),
                code: status.code(),
                message: status.message().to_owned(),
            }),
            Err(_) => Err(CallError {
                method,
                endpoint: self.endpoint.clone(),
                code: tonic::Code::DeadlineExceeded,
                message: format!("no answer within {:?}", self.timeout),
            }),
        };
        if let Some((log, slot)) = slot {
            let outcome = match &result {
                Ok(_) => "OK".to_owned(),
                Err(err) => describe(err.code, &err.message),
            };
            log.finish(slot, outcome);
        }
        result
    }

    /// [`CriClient::call`] for a call that makes an object: sent from a task of its own, so it
    /// runs to its answer or deadline even if the caller is dropped (an interrupted case), and
    /// tracked until then. A runtime may well finish a call its caller gave up on; waiting for
    /// the answer tells the cleanup when it can list what the call made.
    async fn call_detached<Req, Resp, Fut>(
        &self,
        method: &'static str,
        request: Req,
        send: impl FnOnce(Req) -> Fut,
    ) -> Result<Resp, CallError>
    where
        Req: RequestSummary,
        Resp: Send + 'static,
        Fut: Future<Output = Result<tonic::Response<Resp>, tonic::Status>> + Send + 'static,
    {
        let timeout = self.timeout;
        let tracker = self.in_flight.clone();
        self.call(method, request, move |request| {
            let task = tracker.spawn(tokio::time::timeout(timeout, send(request)));
            async move {
                match task.await {
                    Ok(Ok(answer)) => answer,
                    // Our own deadline, said as `call` says it.
                    Ok(Err(_)) => Err(tonic::Status::deadline_exceeded(format!(
                        "no answer within {timeout:?}"
                    ))),
                    Err(join) => Err(tonic::Status::cancelled(format!(
                        "the call's task ended without an answer: {join}"
                    ))),
                }
            }
        })
        .await
    }

    /// [`CriClient::call`] for a CRIListStreaming RPC: the whole stream, to its end, within
    /// one deadline (the kubelet times the entire stream and drops a partial one), answered as
    /// the items of each message in the order they came. An error status on the stream, at
    /// its start or after some messages, is the call's error.
    async fn call_stream<Req, Msg, Item, Fut>(
        &self,
        method: &'static str,
        request: Req,
        send: impl FnOnce(Req) -> Fut,
        items: fn(Msg) -> Vec<Item>,
    ) -> Result<Vec<Vec<Item>>, CallError>
    where
        Req: RequestSummary,
        Fut: Future<Output = Result<tonic::Response<tonic::Streaming<Msg>>, tonic::Status>>,
    {
        self.call(method, request, |r| async move {
            let mut stream = send(r).await?.into_inner();
            let mut messages = Vec::new();
            while let Some(message) = stream.message().await? {
                messages.push(items(message));
            }
            Ok(tonic::Response::new(messages))
        })
        .await
    }

    /// `RuntimeService/Version`.
    pub async fn version(&self, version: &str) -> Result<v1::VersionResponse, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::VersionRequest {
            version: version.to_owned(),
        };
        self.call(
            "Version",
            request,
            |r| async move { client.version(r).await },
        )
        .await
    }

    /// `RuntimeService/Status`.
    pub async fn status(&self, verbose: bool) -> Result<v1::StatusResponse, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StatusRequest { verbose };
        self.call("Status", request, |r| async move { client.status(r).await })
            .await
    }

    /// `RuntimeService/RunPodSandbox`; answers the new sandbox's id.
    pub async fn run_pod_sandbox(
        &self,
        config: v1::PodSandboxConfig,
        runtime_handler: &str,
    ) -> Result<String, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::RunPodSandboxRequest {
            config: Some(config),
            runtime_handler: runtime_handler.to_owned(),
        };
        let response = self
            .call_detached("RunPodSandbox", request, |r| async move {
                client.run_pod_sandbox(r).await
            })
            .await?;
        Ok(response.pod_sandbox_id)
    }

    /// `RuntimeService/StopPodSandbox`.
    pub async fn stop_pod_sandbox(&self, pod_sandbox_id: &str) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StopPodSandboxRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
        };
        self.call("StopPodSandbox", request, |r| async move {
            client.stop_pod_sandbox(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/RemovePodSandbox`.
    pub async fn remove_pod_sandbox(&self, pod_sandbox_id: &str) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::RemovePodSandboxRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
        };
        self.call("RemovePodSandbox", request, |r| async move {
            client.remove_pod_sandbox(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/PodSandboxStatus` (not verbose).
    pub async fn pod_sandbox_status(
        &self,
        pod_sandbox_id: &str,
    ) -> Result<v1::PodSandboxStatusResponse, CallError> {
        self.pod_sandbox_status_with(pod_sandbox_id, false).await
    }

    /// `RuntimeService/PodSandboxStatus`; verbose answers carry the runtime's `info` map.
    pub async fn pod_sandbox_status_with(
        &self,
        pod_sandbox_id: &str,
        verbose: bool,
    ) -> Result<v1::PodSandboxStatusResponse, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::PodSandboxStatusRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
            verbose,
        };
        self.call("PodSandboxStatus", request, |r| async move {
            client.pod_sandbox_status(r).await
        })
        .await
    }

    /// `RuntimeService/ListPodSandbox`.
    pub async fn list_pod_sandbox(
        &self,
        filter: Option<v1::PodSandboxFilter>,
    ) -> Result<Vec<v1::PodSandbox>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ListPodSandboxRequest { filter };
        let response = self
            .call("ListPodSandbox", request, |r| async move {
                client.list_pod_sandbox(r).await
            })
            .await?;
        Ok(response.items)
    }

    /// `RuntimeService/CreateContainer`; answers the new container's id.
    pub async fn create_container(
        &self,
        pod_sandbox_id: &str,
        config: v1::ContainerConfig,
        sandbox_config: v1::PodSandboxConfig,
    ) -> Result<String, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::CreateContainerRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        };
        let response = self
            .call_detached("CreateContainer", request, |r| async move {
                client.create_container(r).await
            })
            .await?;
        Ok(response.container_id)
    }

    /// `RuntimeService/StartContainer`.
    pub async fn start_container(&self, container_id: &str) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StartContainerRequest {
            container_id: container_id.to_owned(),
        };
        self.call_detached("StartContainer", request, |r| async move {
            client.start_container(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/StopContainer` with a grace period in seconds.
    pub async fn stop_container(&self, container_id: &str, timeout: i64) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StopContainerRequest {
            container_id: container_id.to_owned(),
            timeout,
        };
        // The runtime may legitimately wait out the grace period before answering.
        let this = self.with_timeout(self.timeout + Duration::from_secs(timeout.max(0) as u64));
        this.call("StopContainer", request, |r| async move {
            client.stop_container(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/RemoveContainer`.
    pub async fn remove_container(&self, container_id: &str) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::RemoveContainerRequest {
            container_id: container_id.to_owned(),
        };
        self.call("RemoveContainer", request, |r| async move {
            client.remove_container(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/ListContainers`.
    pub async fn list_containers(
        &self,
        filter: Option<v1::ContainerFilter>,
    ) -> Result<Vec<v1::Container>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ListContainersRequest { filter };
        let response = self
            .call("ListContainers", request, |r| async move {
                client.list_containers(r).await
            })
            .await?;
        Ok(response.containers)
    }

    /// `RuntimeService/ContainerStatus` (not verbose).
    pub async fn container_status(
        &self,
        container_id: &str,
    ) -> Result<v1::ContainerStatusResponse, CallError> {
        self.container_status_as(container_id, false).await
    }

    /// `RuntimeService/ContainerStatus` with `verbose`: the status and the runtime's `info`
    /// (containerd: the process's `pid` and the OCI spec, as JSON under `info`).
    pub async fn container_status_verbose(
        &self,
        container_id: &str,
    ) -> Result<v1::ContainerStatusResponse, CallError> {
        self.container_status_as(container_id, true).await
    }

    async fn container_status_as(
        &self,
        container_id: &str,
        verbose: bool,
    ) -> Result<v1::ContainerStatusResponse, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ContainerStatusRequest {
            container_id: container_id.to_owned(),
            verbose,
        };
        self.call("ContainerStatus", request, |r| async move {
            client.container_status(r).await
        })
        .await
    }

    /// `RuntimeService/ExecSync`: runs `cmd` in the container and waits for it, up to
    /// `timeout` (zero: the runtime's own bound). The call's deadline is the exec's timeout
    /// plus the per-call one, so a runtime that honours the timeout answers in time.
    pub async fn exec_sync(
        &self,
        container_id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<v1::ExecSyncResponse, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ExecSyncRequest {
            container_id: container_id.to_owned(),
            cmd,
            timeout: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        };
        self.with_timeout(self.timeout.saturating_add(timeout))
            .call(
                "ExecSync",
                request,
                |r| async move { client.exec_sync(r).await },
            )
            .await
    }

    /// `RuntimeService/Exec`: the URL of the runtime's streaming server where the command
    /// runs once a client connects (see [`crate::streaming`]).
    pub async fn exec(&self, request: v1::ExecRequest) -> Result<String, CallError> {
        let mut client = self.runtime.clone();
        let answer = self
            .call("Exec", request, |r| async move { client.exec(r).await })
            .await?;
        Ok(answer.url)
    }

    /// `RuntimeService/Attach`: the URL where a client attaches to the container's process.
    pub async fn attach(&self, request: v1::AttachRequest) -> Result<String, CallError> {
        let mut client = self.runtime.clone();
        let answer = self
            .call("Attach", request, |r| async move { client.attach(r).await })
            .await?;
        Ok(answer.url)
    }

    /// `RuntimeService/PortForward`: the URL where a client forwards `ports` of the sandbox.
    pub async fn port_forward(
        &self,
        pod_sandbox_id: &str,
        ports: &[u16],
    ) -> Result<String, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::PortForwardRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
            port: ports.iter().map(|&p| i32::from(p)).collect(),
        };
        let answer = self
            .call("PortForward", request, |r| async move {
                client.port_forward(r).await
            })
            .await?;
        Ok(answer.url)
    }

    /// `RuntimeService/UpdateContainerResources` with the Linux resources given.
    pub async fn update_container_resources(
        &self,
        container_id: &str,
        linux: Option<v1::LinuxContainerResources>,
    ) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::UpdateContainerResourcesRequest {
            container_id: container_id.to_owned(),
            linux,
            ..Default::default()
        };
        self.call("UpdateContainerResources", request, |r| async move {
            client.update_container_resources(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/UpdatePodSandboxResources`: the pod-level resources after a resize.
    pub async fn update_pod_sandbox_resources(
        &self,
        pod_sandbox_id: &str,
        overhead: Option<v1::LinuxContainerResources>,
        resources: Option<v1::LinuxContainerResources>,
    ) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::UpdatePodSandboxResourcesRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
            overhead,
            resources,
        };
        self.call("UpdatePodSandboxResources", request, |r| async move {
            client.update_pod_sandbox_resources(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/UpdateRuntimeConfig` with the node's pod CIDR, as the kubelet sends it.
    pub async fn update_runtime_config(&self, pod_cidr: &str) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::UpdateRuntimeConfigRequest {
            runtime_config: Some(v1::RuntimeConfig {
                network_config: Some(v1::NetworkConfig {
                    pod_cidr: pod_cidr.to_owned(),
                }),
            }),
        };
        self.call("UpdateRuntimeConfig", request, |r| async move {
            client.update_runtime_config(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/CheckpointContainer` into `location`, within `timeout` seconds (0: the
    /// runtime's default).
    pub async fn checkpoint_container(
        &self,
        container_id: &str,
        location: &str,
        timeout: i64,
    ) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::CheckpointContainerRequest {
            container_id: container_id.to_owned(),
            location: location.to_owned(),
            timeout,
        };
        self.call("CheckpointContainer", request, |r| async move {
            client.checkpoint_container(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/ReopenContainerLog`.
    pub async fn reopen_container_log(&self, container_id: &str) -> Result<(), CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ReopenContainerLogRequest {
            container_id: container_id.to_owned(),
        };
        self.call("ReopenContainerLog", request, |r| async move {
            client.reopen_container_log(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/ContainerStats`; `None` when the runtime answers no stats.
    pub async fn container_stats(
        &self,
        container_id: &str,
    ) -> Result<Option<v1::ContainerStats>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ContainerStatsRequest {
            container_id: container_id.to_owned(),
        };
        let response = self
            .call("ContainerStats", request, |r| async move {
                client.container_stats(r).await
            })
            .await?;
        Ok(response.stats)
    }

    /// `RuntimeService/ListContainerStats`; `None` sends no filter at all.
    pub async fn list_container_stats(
        &self,
        filter: Option<v1::ContainerStatsFilter>,
    ) -> Result<Vec<v1::ContainerStats>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ListContainerStatsRequest { filter };
        let response = self
            .call("ListContainerStats", request, |r| async move {
                client.list_container_stats(r).await
            })
            .await?;
        Ok(response.stats)
    }

    /// `RuntimeService/PodSandboxStats`; `None` when the runtime answers no stats.
    pub async fn pod_sandbox_stats(
        &self,
        pod_sandbox_id: &str,
    ) -> Result<Option<v1::PodSandboxStats>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::PodSandboxStatsRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
        };
        let response = self
            .call("PodSandboxStats", request, |r| async move {
                client.pod_sandbox_stats(r).await
            })
            .await?;
        Ok(response.stats)
    }

    /// `RuntimeService/ListPodSandboxStats`; `None` sends no filter at all.
    pub async fn list_pod_sandbox_stats(
        &self,
        filter: Option<v1::PodSandboxStatsFilter>,
    ) -> Result<Vec<v1::PodSandboxStats>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ListPodSandboxStatsRequest { filter };
        let response = self
            .call("ListPodSandboxStats", request, |r| async move {
                client.list_pod_sandbox_stats(r).await
            })
            .await?;
        Ok(response.stats)
    }

    /// `RuntimeService/RuntimeConfig`: the runtime's cgroup driver, for the kubelet to build
    /// its cgroups by.
    pub async fn runtime_config(&self) -> Result<v1::RuntimeConfigResponse, CallError> {
        let mut client = self.runtime.clone();
        self.call(
            "RuntimeConfig",
            v1::RuntimeConfigRequest {},
            |r| async move { client.runtime_config(r).await },
        )
        .await
    }

    /// `RuntimeService/ListMetricDescriptors`.
    pub async fn list_metric_descriptors(&self) -> Result<Vec<v1::MetricDescriptor>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ListMetricDescriptorsRequest {};
        let response = self
            .call("ListMetricDescriptors", request, |r| async move {
                client.list_metric_descriptors(r).await
            })
            .await?;
        Ok(response.descriptors)
    }

    /// `RuntimeService/ListPodSandboxMetrics`.
    pub async fn list_pod_sandbox_metrics(&self) -> Result<Vec<v1::PodSandboxMetrics>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::ListPodSandboxMetricsRequest {};
        let response = self
            .call("ListPodSandboxMetrics", request, |r| async move {
                client.list_pod_sandbox_metrics(r).await
            })
            .await?;
        Ok(response.pod_metrics)
    }

    /// `ImageService/PullImage`; answers the image reference the runtime stored.
    pub async fn pull_image(&self, image: &str) -> Result<String, CallError> {
        let mut client = self.image.clone();
        let request = v1::PullImageRequest {
            image: Some(image_spec(image)),
            ..Default::default()
        };
        let response = self
            .call_detached("PullImage", request, |r| async move {
                client.pull_image(r).await
            })
            .await?;
        Ok(response.image_ref)
    }

    /// `ImageService/ListImages`, optionally for one image.
    pub async fn list_images(&self, image: Option<&str>) -> Result<Vec<v1::Image>, CallError> {
        let mut client = self.image.clone();
        let request = v1::ListImagesRequest {
            filter: image.map(|image| v1::ImageFilter {
                image: Some(image_spec(image)),
            }),
        };
        let response = self
            .call("ListImages", request, |r| async move {
                client.list_images(r).await
            })
            .await?;
        Ok(response.images)
    }

    /// `ImageService/ImageStatus`; `None` when the runtime does not have the image.
    pub async fn image_status(&self, image: &str) -> Result<Option<v1::Image>, CallError> {
        let mut client = self.image.clone();
        let request = v1::ImageStatusRequest {
            image: Some(image_spec(image)),
            verbose: false,
        };
        let response = self
            .call("ImageStatus", request, |r| async move {
                client.image_status(r).await
            })
            .await?;
        Ok(response.image)
    }

    /// `ImageService/RemoveImage`.
    pub async fn remove_image(&self, image: &str) -> Result<(), CallError> {
        let mut client = self.image.clone();
        let request = v1::RemoveImageRequest {
            image: Some(image_spec(image)),
        };
        self.call("RemoveImage", request, |r| async move {
            client.remove_image(r).await
        })
        .await?;
        Ok(())
    }

    /// `RuntimeService/StreamPodSandboxes`: the items of each message.
    pub async fn stream_pod_sandboxes(
        &self,
        filter: Option<v1::PodSandboxFilter>,
    ) -> Result<Vec<Vec<v1::PodSandbox>>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StreamPodSandboxesRequest { filter };
        self.call_stream(
            "StreamPodSandboxes",
            request,
            |r| async move { client.stream_pod_sandboxes(r).await },
            |m| m.pod_sandboxes,
        )
        .await
    }

    /// `RuntimeService/StreamContainers`: the items of each message.
    pub async fn stream_containers(
        &self,
        filter: Option<v1::ContainerFilter>,
    ) -> Result<Vec<Vec<v1::Container>>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StreamContainersRequest { filter };
        self.call_stream(
            "StreamContainers",
            request,
            |r| async move { client.stream_containers(r).await },
            |m| m.containers,
        )
        .await
    }

    /// `RuntimeService/StreamContainerStats`: the items of each message.
    pub async fn stream_container_stats(
        &self,
        filter: Option<v1::ContainerStatsFilter>,
    ) -> Result<Vec<Vec<v1::ContainerStats>>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StreamContainerStatsRequest { filter };
        self.call_stream(
            "StreamContainerStats",
            request,
            |r| async move { client.stream_container_stats(r).await },
            |m| m.container_stats,
        )
        .await
    }

    /// `RuntimeService/StreamPodSandboxStats`: the items of each message.
    pub async fn stream_pod_sandbox_stats(
        &self,
        filter: Option<v1::PodSandboxStatsFilter>,
    ) -> Result<Vec<Vec<v1::PodSandboxStats>>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StreamPodSandboxStatsRequest { filter };
        self.call_stream(
            "StreamPodSandboxStats",
            request,
            |r| async move { client.stream_pod_sandbox_stats(r).await },
            |m| m.pod_sandbox_stats,
        )
        .await
    }

    /// `RuntimeService/StreamPodSandboxMetrics`: the items of each message.
    pub async fn stream_pod_sandbox_metrics(
        &self,
    ) -> Result<Vec<Vec<v1::PodSandboxMetrics>>, CallError> {
        let mut client = self.runtime.clone();
        let request = v1::StreamPodSandboxMetricsRequest {};
        self.call_stream(
            "StreamPodSandboxMetrics",
            request,
            |r| async move { client.stream_pod_sandbox_metrics(r).await },
            |m| m.pod_sandbox_metrics,
        )
        .await
    }

    /// `ImageService/StreamImages`, optionally for one image: the items of each message.
    pub async fn stream_images(
        &self,
        image: Option<&str>,
    ) -> Result<Vec<Vec<v1::Image>>, CallError> {
        let mut client = self.image.clone();
        let request = v1::StreamImagesRequest {
            filter: image.map(|image| v1::ImageFilter {
                image: Some(image_spec(image)),
            }),
        };
        self.call_stream(
            "StreamImages",
            request,
            |r| async move { client.stream_images(r).await },
            |m| m.images,
        )
        .await
    }

    /// `ImageService/ImageFsInfo`.
    pub async fn image_fs_info(&self) -> Result<v1::ImageFsInfoResponse, CallError> {
        let mut client = self.image.clone();
        self.call("ImageFsInfo", v1::ImageFsInfoRequest {}, |r| async move {
            client.image_fs_info(r).await
        })
        .await
    }
}

fn image_spec(image: &str) -> v1::ImageSpec {
    v1::ImageSpec {
        image: image.to_owned(),
        ..Default::default()
    }
}
