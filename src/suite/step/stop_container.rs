//! `stop_container`: stops a container with a grace period, on the unrecorded client.
//!
//! A shell that traps SIGTERM (the harness's sleeper: `trap 'exit 0' TERM; ...`) exits 0 on a
//! graceful stop only once it has set its trap; stopped a moment earlier, as PID 1 it ignores
//! the signal and dies by SIGKILL after the grace period (137). On a loaded machine that moment
//! can come after the next step, so a graceful stop first waits, for a bounded time, until a
//! first process whose command line sets a TERM trap has set it (its `SigCgt` in
//! `/proc/PID/status`). The pid is the one the runtime's verbose status names, or else the first
//! process in a host cgroup named after the container (`host::processes`). Without a pid (the
//! mock, a runtime on another host or in a VM), in a container that is not running, or without
//! such a trap, the stop goes at once.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::cri::{v1, CriClient};
use crate::world::{StepError, World};

/// The longest a graceful stop waits for the process's TERM trap.
const TRAP_WAIT: Duration = Duration::from_secs(10);

/// Pause between two reads of the process's signal mask.
const TRAP_POLL: Duration = Duration::from_millis(10);

/// SIGTERM's bit in a `/proc/PID/status` signal mask (signal 15, bit 14).
const SIGTERM_BIT: u64 = 1 << 14;

/// `stop_container`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `stop_container` step: `container`, `timeout`"
)]
pub struct StopContainer {
    /// Container alias.
    pub container: String,
    /// Grace period in seconds.
    #[serde(default, skip_serializing_if = "is_default")]
    pub timeout: i64,
}

impl StepDef for StopContainer {
    const NAME: &'static str = "stop_container";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Stops a container, with a grace period in seconds (a graceful stop first lets a shell that traps SIGTERM set its trap).";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        if self.timeout > 0 {
            await_term_trap(&world.runtime, &id).await;
        }
        Ok(world.runtime.stop_container(&id, self.timeout).await?)
    }
}

/// Waits, at most [`TRAP_WAIT`], until the container's first process has set the TERM trap its
/// command line asks for; returns at once when there is no pid to read or no such trap.
async fn await_term_trap(client: &CriClient, id: &str) {
    let Some(pid) = first_process(client, id).await else {
        return;
    };
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let started = Instant::now();
    // Just started, the process may still be the OCI runtime's init, about to exec the
    // container's command: its command line tells nothing yet.
    let cmdline = loop {
        let Ok(cmdline) = std::fs::read(proc.join("cmdline")) else {
            return;
        };
        if !before_exec(&cmdline) || started.elapsed() >= TRAP_WAIT {
            break cmdline;
        }
        crate::timing::pause(TRAP_POLL).await;
    };
    if !sets_term_trap(&cmdline) {
        return;
    }
    while started.elapsed() < TRAP_WAIT {
        match std::fs::read_to_string(proc.join("status")) {
            Ok(status) if catches_sigterm(&status) => {
                tracing::debug!(container = id, pid, waited = ?started.elapsed(), "TERM trap set");
                return;
            }
            Ok(_) => crate::timing::pause(TRAP_POLL).await,
            // Gone already: nothing to wait for.
            Err(_) => return,
        }
    }
    tracing::warn!(
        container = id,
        "its first process did not set its TERM trap in time"
    );
}

/// The pid of the container's first process: the one the runtime's verbose status names, or
/// else the one found by the container's id in the host's cgroups. None for a container the
/// status says is not running ([`running_pid`]).
async fn first_process(client: &CriClient, id: &str) -> Option<u32> {
    match client.container_status_verbose(id).await {
        Ok(answer) => running_pid(&answer)?,
        Err(_) => None,
    }
    .or_else(|| crate::host::processes::first_process_of(id))
}

/// From a verbose ContainerStatus answer: `None` when the container is not running, so there
/// is no trap to wait for. One created and never started has at most the OCI runtime's init,
/// which execs the command only on StartContainer (CRI-O names that init's pid, and a wait for
/// its trap would last [`TRAP_WAIT`]); an exited one has no process left. Else the pid the
/// runtime names, if any.
fn running_pid(answer: &v1::ContainerStatusResponse) -> Option<Option<u32>> {
    let running = answer
        .status
        .as_ref()
        .is_some_and(|status| status.state == v1::ContainerState::ContainerRunning as i32);
    running.then(|| crate::cri::process_id(&answer.info))
}

/// Whether a NUL-separated command line is an OCI runtime's init before it execs the
/// container's command (runc and crun run as `NAME init`), or is read empty, as it is while
/// the kernel swaps the process's image in the exec itself (seen about once in six reads
/// there): either way the command's own line is still to come.
fn before_exec(cmdline: &[u8]) -> bool {
    if cmdline.is_empty() {
        return true;
    }
    let mut args = cmdline.split(|&b| b == 0);
    let _program = args.next();
    args.next() == Some(b"init".as_slice())
}

/// Whether a NUL-separated command line sets a trap on TERM (`trap '...' TERM`).
fn sets_term_trap(cmdline: &[u8]) -> bool {
    let text = String::from_utf8_lossy(cmdline);
    text.split('\0').any(|arg| {
        arg.contains("trap ")
            && arg
                .split([' ', ';'])
                .any(|word| word == "TERM" || word == "SIGTERM" || word == "15")
    })
}

/// Whether `/proc/PID/status` says the process catches SIGTERM.
fn catches_sigterm(status: &str) -> bool {
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & SIGTERM_BIT != 0)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::the_sleeper(b"sh\0-c\0trap 'exit 0' TERM; sleep 3600 & wait\0".as_slice(), true)]
    #[case::by_number(b"sh\0-c\0trap 'exit 0' 15; sleep 1\0".as_slice(), true)]
    #[case::another_signal(b"sh\0-c\0trap 'exit 0' INT; sleep 1\0".as_slice(), false)]
    #[case::no_trap(b"sleep\x003600\0".as_slice(), false)]
    #[case::pause(b"/pause\0".as_slice(), false)]
    fn a_term_trap_is_read_from_the_command_line(#[case] cmdline: &[u8], #[case] sets: bool) {
        assert_eq!(sets_term_trap(cmdline), sets);
    }

    #[rstest]
    #[case::runc_init(b"runc\0init\0".as_slice(), true)]
    #[case::runc_by_its_own_path(b"/proc/self/exe\0init\0".as_slice(), true)]
    #[case::the_command(b"sh\0-c\0trap 'exit 0' TERM; sleep 3600 & wait\0".as_slice(), false)]
    #[case::an_init_of_its_own(b"/sbin/init\0".as_slice(), false)]
    #[case::read_during_the_exec(b"".as_slice(), true)]
    fn an_oci_runtimes_init_is_not_the_command_yet(#[case] cmdline: &[u8], #[case] init: bool) {
        assert_eq!(before_exec(cmdline), init);
    }

    #[rstest]
    #[case::caught("SigBlk:\t0000000000000000\nSigCgt:\t0000000000004002\n", true)]
    #[case::not_yet("SigCgt:\t0000000000000000\n", false)]
    #[case::other_signals("SigCgt:\t0000000000010002\n", false)]
    #[case::unreadable("Name:\tsh\n", false)]
    fn sigterm_is_read_from_the_caught_mask(#[case] status: &str, #[case] caught: bool) {
        assert_eq!(catches_sigterm(status), caught);
    }

    #[rstest]
    #[case::running(v1::ContainerState::ContainerRunning, Some(Some(4242)))]
    #[case::created_with_the_inits_pid(v1::ContainerState::ContainerCreated, None)]
    #[case::exited(v1::ContainerState::ContainerExited, None)]
    fn only_a_running_containers_pid_is_awaited(
        #[case] state: v1::ContainerState,
        #[case] pid: Option<Option<u32>>,
    ) {
        let answer = v1::ContainerStatusResponse {
            status: Some(v1::ContainerStatus {
                state: state as i32,
                ..Default::default()
            }),
            info: [("info".to_owned(), r#"{"pid":4242}"#.to_owned())].into(),
        };
        assert_eq!(running_pid(&answer), pid);
    }

    #[rstest]
    #[case::containerd(r#"{"sandboxID":"x","pid":4242,"removing":false}"#, Some(4242))]
    #[case::no_pid(r#"{"sandboxID":"x"}"#, None)]
    #[case::exited(r#"{"pid":0}"#, None)]
    #[case::not_json("pid=12", None)]
    fn the_pid_is_read_from_the_verbose_info(#[case] info: &str, #[case] pid: Option<u32>) {
        let info = std::collections::BTreeMap::from([("info".to_owned(), info.to_owned())]);
        assert_eq!(crate::cri::process_id(&info), pid);
    }
}
