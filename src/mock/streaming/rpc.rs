//! Exec, Attach and PortForward on the mock: checked in containerd 1.6's order and words (the
//! object, its state, then the kubelet streaming library's request checks), then answered with
//! a single-use URL on the streaming server.

use super::{
    Attached, Command, Forward, Pending, Program, Streams, NESTED_TERMINAL_LINE_END,
    TERMINAL_LINE_END,
};
use crate::cri::v1;
use crate::mock::error::RpcError;
use crate::mock::profile::Freedom;
use crate::mock::{Inner, MockRuntime};

use v1::PodSandboxState::SandboxReady;

/// The kubelet streaming server's checks of the streams asked for.
fn check_streams(method: &'static str, streams: Streams) -> Result<(), RpcError> {
    if streams.tty && streams.stderr {
        return Err(RpcError::TtyWithStderr { method });
    }
    if !streams.stdin && !streams.stdout && !streams.stderr {
        return Err(RpcError::NoStreams { method });
    }
    Ok(())
}

/// What a line end written on a terminal reaches the client as, under the mock's profile.
fn line_end(inner: &Inner) -> &'static [u8] {
    if MockRuntime::takes(inner, Freedom::TerminalNested) {
        NESTED_TERMINAL_LINE_END
    } else {
        TERMINAL_LINE_END
    }
}

/// Exec: a URL that runs `cmd` from the built-in set in the container.
pub(crate) fn exec(
    inner: &mut Inner,
    request: v1::ExecRequest,
) -> Result<v1::ExecResponse, RpcError> {
    const METHOD: &str = "Exec";
    let container = inner.state.running_container(&request.container_id, |id| {
        RpcError::ExecContainerNotFound { id }
    })?;
    let mounts = container.mounts.clone();
    let identity = container.process.identity.clone();
    let streams = Streams {
        stdin: request.stdin,
        stdout: request.stdout,
        stderr: request.stderr,
        tty: request.tty,
    };
    check_streams(METHOD, streams)?;
    let pending = Pending::Command(Box::new(Command {
        program: Program::Exec(request.cmd),
        streams,
        mounts,
        identity,
        line_end: line_end(inner),
    }));
    let url = inner.streaming.url(METHOD, pending)?;
    Ok(v1::ExecResponse { url })
}

/// Attach: a URL to the container's modelled main process. As in containerd, the container's
/// own TTY setting decides whether output is a terminal's.
pub(crate) fn attach(
    inner: &mut Inner,
    request: v1::AttachRequest,
) -> Result<v1::AttachResponse, RpcError> {
    const METHOD: &str = "Attach";
    let container = inner.state.running_container(&request.container_id, |id| {
        RpcError::AttachContainerNotFound { id }
    })?;
    let process = &container.process;
    let program = Program::Attach(Attached::of(&process.argv, process.stdin));
    let tty = process.tty;
    let mounts = container.mounts.clone();
    let identity = process.identity.clone();
    let requested = Streams {
        stdin: request.stdin,
        stdout: request.stdout,
        stderr: request.stderr,
        tty: request.tty,
    };
    check_streams(METHOD, requested)?;
    let pending = Pending::Command(Box::new(Command {
        program,
        streams: Streams { tty, ..requested },
        mounts,
        identity,
        line_end: line_end(inner),
    }));
    let url = inner.streaming.url(METHOD, pending)?;
    Ok(v1::AttachResponse { url })
}

/// PortForward: a URL forwarding to the sandbox's ports. Like containerd, the ports are not
/// checked here; a port the pod does not listen on fails on its stream.
pub(crate) fn port_forward(
    inner: &mut Inner,
    request: v1::PortForwardRequest,
) -> Result<v1::PortForwardResponse, RpcError> {
    const METHOD: &str = "PortForward";
    let key = inner
        .state
        .find_sandbox(&request.pod_sandbox_id)
        .map_err(|err| match err {
            RpcError::SandboxNotFound { id } => RpcError::ForwardSandboxNotFound { id },
            other => other,
        })?;
    let sandbox = &inner.state.sandboxes[key];
    if sandbox.status.state != SandboxReady as i32 {
        return Err(RpcError::ForwardNotReady {
            id: sandbox.status.id.clone(),
        });
    }
    let pending = Pending::PortForward(Forward {
        sandbox: sandbox.status.id.clone(),
        listening: sandbox.ports.clone(),
    });
    let url = inner.streaming.url(METHOD, pending)?;
    Ok(v1::PortForwardResponse { url })
}
