//! The mock's control service (`criharness.mock.v1.MockControl`): what a suite uses to ask for
//! a misbehaving runtime, steer its clock, seed odd objects, end processes at a chosen time and
//! read back the CRI calls.
//! Control calls are not logged and not subject to injected faults.

use std::time::Duration;

use tonic::{Request, Response, Status};

use super::error::RpcError;
use super::faults::{cri_method, target_kind, Aim, Latency, CRI_METHODS, TARGETED_METHODS};
use super::state::{container_name, sandbox_name, State, TimedExit};
use super::{default_version, MockRuntime};
use crate::cri::control::{self as api, mock_control_server::MockControl};
use crate::cri::v1;

/// Serves MockControl from a mock's shared state.
#[derive(Debug, Clone)]
pub(crate) struct MockControlService(pub(crate) MockRuntime);

fn ok() -> Result<Response<api::ControlResponse>, Status> {
    Ok(Response::new(api::ControlResponse {}))
}

/// The canonical CRI method name `method` names, or the refusal listing the valid ones.
fn known_method(control: &'static str, method: &str) -> Result<&'static str, RpcError> {
    cri_method(method).ok_or_else(|| RpcError::UnknownMethod {
        control,
        method: method.to_owned(),
        valid: CRI_METHODS.join(", "),
    })
}

/// The calls of `method` an injection aims at, refused when it names a target the method's
/// requests cannot carry.
fn aim(
    control: &'static str,
    method: &'static str,
    target_id: String,
    nth: u32,
) -> Result<Aim, RpcError> {
    if target_id.is_empty() {
        return Ok(Aim { target: None, nth });
    }
    if target_kind(method).is_none() {
        let targeted: Vec<String> = TARGETED_METHODS
            .iter()
            .map(|(method, kind)| format!("{method} ({kind})"))
            .collect();
        return Err(RpcError::UntargetedMethod {
            control,
            method,
            targeted: targeted.join(", "),
        });
    }
    Ok(Aim {
        target: Some(target_id),
        nth,
    })
}

#[tonic::async_trait]
impl MockControl for MockControlService {
    async fn set_version(
        &self,
        request: Request<api::SetVersionRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        self.0.lock().version = request.into_inner().version.unwrap_or_default();
        ok()
    }

    async fn inject_error(
        &self,
        request: Request<api::InjectErrorRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        let request = request.into_inner();
        let method = known_method("InjectError", &request.method)?;
        if !(1..=16).contains(&request.code) {
            return Err(RpcError::InvalidCode { code: request.code }.into());
        }
        let code = tonic::Code::from_i32(request.code);
        let aim = aim("InjectError", method, request.target_id, request.nth)?;
        self.0
            .lock()
            .faults
            .inject_error(method, aim, code, request.message, request.count);
        ok()
    }

    async fn inject_latency(
        &self,
        request: Request<api::InjectLatencyRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        let request = request.into_inner();
        let method = known_method("InjectLatency", &request.method)?;
        let latency = Latency {
            delay: Duration::from_millis(request.delay_ms),
            finish_if_abandoned: request.finish_if_abandoned,
        };
        let aim = aim("InjectLatency", method, request.target_id, request.nth)?;
        self.0
            .lock()
            .faults
            .inject(method, aim, latency, request.count);
        ok()
    }

    async fn set_clock(
        &self,
        request: Request<api::SetClockRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        let unix_nanos = non_negative("SetClock", request.into_inner().unix_nanos)?;
        let mut inner = self.0.lock();
        inner.clock.set(unix_nanos);
        inner.settle_exits();
        ok()
    }

    async fn advance_clock(
        &self,
        request: Request<api::AdvanceClockRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        let nanos = non_negative("AdvanceClock", request.into_inner().nanos)?;
        let mut inner = self.0.lock();
        inner.clock.advance(nanos);
        inner.settle_exits();
        ok()
    }

    async fn reset(
        &self,
        request: Request<api::ResetRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        let keep_images = request.into_inner().keep_images;
        let mut inner = self.0.lock();
        let images = std::mem::take(&mut inner.state.images);
        inner.state = Default::default();
        if keep_images {
            inner.state.images = images;
        }
        inner.clock = Default::default();
        inner.faults = Default::default();
        inner.transitions = Default::default();
        inner.log.reset();
        inner.version = default_version();
        ok()
    }

    async fn get_call_log(
        &self,
        request: Request<api::GetCallLogRequest>,
    ) -> Result<Response<api::GetCallLogResponse>, Status> {
        let calls = self.0.lock().log.read(request.into_inner().clear);
        Ok(Response::new(api::GetCallLogResponse { calls }))
    }

    async fn seed_pod_sandbox(
        &self,
        request: Request<api::SeedPodSandboxRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        seed_sandbox(
            &mut self.0.lock().state,
            request.into_inner(),
            "SeedPodSandbox",
        )?;
        ok()
    }

    async fn seed_container(
        &self,
        request: Request<api::SeedContainerRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        seed_container(
            &mut self.0.lock().state,
            request.into_inner(),
            "SeedContainer",
        )?;
        ok()
    }

    async fn exit_container(
        &self,
        request: Request<api::ExitContainerRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        const CONTROL: &str = "ExitContainer";
        let request = request.into_inner();
        let at = non_negative(CONTROL, request.at_unix_nanos)?;
        let after = non_negative(CONTROL, request.after_nanos)?;
        let mut inner = self.0.lock();
        let key = inner.state.find_container(&request.container_id)?;
        let status = &inner.state.containers[key].status;
        let alive = [
            v1::ContainerState::ContainerCreated as i32,
            v1::ContainerState::ContainerRunning as i32,
        ];
        if !alive.contains(&status.state) {
            return Err(RpcError::NotExiting {
                control: CONTROL,
                id: status.id.clone(),
                state: v1::ContainerState::try_from(status.state)
                    .map_or("CONTAINER_UNKNOWN", |s| s.as_str_name()),
            }
            .into());
        }
        let container_id = status.id.clone();
        let at = if at > 0 {
            at
        } else {
            inner.clock.now().saturating_add(after)
        };
        let reason = match (request.reason.is_empty(), request.exit_code) {
            (false, _) => request.reason,
            (true, 0) => "Completed".to_owned(),
            (true, _) => "Error".to_owned(),
        };
        inner.state.schedule_exit(TimedExit {
            container_id,
            at,
            exit_code: request.exit_code,
            reason,
        });
        // An instant already reached ends the process at once.
        inner.settle_exits();
        ok()
    }

    async fn seed(
        &self,
        request: Request<api::SeedRequest>,
    ) -> Result<Response<api::ControlResponse>, Status> {
        let request = request.into_inner();
        let mut inner = self.0.lock();
        let state = &mut inner.state;
        for (index, sandbox) in request.sandboxes.into_iter().enumerate() {
            seed_sandbox(state, sandbox, "Seed")
                .map_err(|status| in_batch(status, "sandboxes", index))?;
        }
        for (index, container) in request.containers.into_iter().enumerate() {
            seed_container(state, container, "Seed")
                .map_err(|status| in_batch(status, "containers", index))?;
        }
        ok()
    }
}

/// A refusal inside a batch, naming the object's place in it.
fn in_batch(status: Status, list: &str, index: usize) -> Status {
    Status::new(
        status.code(),
        format!("{list}[{index}]: {}", status.message()),
    )
}

/// The id a seeded object keeps: its own unless another object holds it, a new one when it
/// has none.
fn seed_id(
    id: String,
    taken: bool,
    control: &'static str,
    kind: &'static str,
    mint: impl FnOnce() -> String,
) -> Result<String, Status> {
    if id.is_empty() {
        Ok(mint())
    } else if taken {
        Err(RpcError::AlreadyExists { control, kind, id }.into())
    } else {
        Ok(id)
    }
}

/// Inserts a sandbox exactly as given (a new id when it has none).
fn seed_sandbox(
    state: &mut State,
    request: api::SeedPodSandboxRequest,
    control: &'static str,
) -> Result<(), Status> {
    let mut status = request.status.ok_or(RpcError::MissingField {
        method: control,
        field: "status",
    })?;
    let taken = state.find_exact_sandbox(&status.id).is_some();
    status.id = seed_id(
        std::mem::take(&mut status.id),
        taken,
        control,
        "sandbox",
        || state.mint_sandbox_id(),
    )?;
    // A seeded sandbox takes its name when it is free, so a later RunPodSandbox with the
    // same metadata clashes as in containerd; a taken name is simply not reserved twice.
    let name = status
        .metadata
        .as_ref()
        .map(sandbox_name)
        .filter(|name| state.reserve_sandbox_name(name, &status.id).is_ok());
    state.insert_sandbox(status, name);
    Ok(())
}

/// Inserts a container exactly as given, in a sandbox that need not exist.
fn seed_container(
    state: &mut State,
    request: api::SeedContainerRequest,
    control: &'static str,
) -> Result<(), Status> {
    let mut status = request.status.ok_or(RpcError::MissingField {
        method: control,
        field: "status",
    })?;
    let taken = state.find_exact_container(&status.id).is_some();
    status.id = seed_id(
        std::mem::take(&mut status.id),
        taken,
        control,
        "container",
        || state.mint_container_id(),
    )?;
    let sandbox_metadata = state
        .find_exact_sandbox(&request.pod_sandbox_id)
        .and_then(|key| state.sandboxes[key].status.metadata.clone());
    let name = match (&status.metadata, &sandbox_metadata) {
        (Some(metadata), Some(sandbox)) => Some(container_name(metadata, sandbox)),
        _ => None,
    }
    .filter(|name| state.reserve_container_name(name, &status.id).is_ok());
    state.insert_container(request.pod_sandbox_id, status, name, 0);
    Ok(())
}

/// A clock control's time value, refused when negative (time before 1970 or backwards moves).
fn non_negative(control: &'static str, value: i64) -> Result<i64, Status> {
    if value < 0 {
        return Err(RpcError::NegativeTime { control, value }.into());
    }
    Ok(value)
}
