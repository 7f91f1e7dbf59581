//! Objects in transition while a delayed call works on them. A container whose StartContainer
//! is delayed is "starting" from the call's arrival until it answers (or, its client gone and
//! the call not held to the end, until it is dropped); meanwhile RemoveContainer refuses it,
//! and RemovePodSandbox its sandbox, as containerd does. The contract does not ask a removal
//! during a start to succeed, so a client (the harness's cleanup) must wait and try again.

use std::collections::BTreeSet;

use super::error::RpcError;
use super::state::State;
use crate::cri::v1::ContainerState;

/// The containers a delayed StartContainer holds in its transition.
#[derive(Debug, Default)]
pub(crate) struct Transitions {
    starting: BTreeSet<String>,
}

/// A transition begun by one delayed call, ended when the call answers or is dropped.
#[derive(Debug)]
pub(crate) struct Begun {
    container_id: String,
}

impl Transitions {
    /// Begins the transition a delayed call of `method` naming `target` puts its object in,
    /// if it has one: a StartContainer of a created container makes it starting.
    pub(crate) fn begin(
        &mut self,
        state: &State,
        method: &str,
        target: Option<&str>,
    ) -> Option<Begun> {
        if method != "StartContainer" {
            return None;
        }
        let key = state.find_container(target?).ok()?;
        let status = &state.containers[key].status;
        if status.state != ContainerState::ContainerCreated as i32 {
            // The call will be refused when it answers: nothing starts.
            return None;
        }
        let container_id = status.id.clone();
        self.starting
            .insert(container_id.clone())
            .then_some(Begun { container_id })
    }

    /// Ends a transition (the call answered, or was dropped).
    pub(crate) fn end(&mut self, begun: &Begun) {
        self.starting.remove(&begun.container_id);
    }

    /// Refuses the removal of container `id` while it is starting.
    pub(crate) fn check_container_removal(&self, id: &str) -> Result<(), RpcError> {
        if self.starting.contains(id) {
            return Err(RpcError::ContainerStarting { id: id.to_owned() });
        }
        Ok(())
    }

    /// Refuses the removal of sandbox `id` while one of its `members` is starting.
    pub(crate) fn check_sandbox_removal<'a>(
        &self,
        id: &str,
        mut members: impl Iterator<Item = &'a str>,
    ) -> Result<(), RpcError> {
        match members.find(|member| self.starting.contains(*member)) {
            Some(container) => Err(RpcError::SandboxContainerStarting {
                id: id.to_owned(),
                container: container.to_owned(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_is_starting_from_begin_to_end_and_only_then_refused() {
        let mut transitions = Transitions::default();
        let begun = Begun {
            container_id: "c1".into(),
        };
        transitions.starting.insert("c1".into());
        assert!(transitions.check_container_removal("c1").is_err());
        assert!(transitions
            .check_sandbox_removal("s1", ["c0", "c1"].into_iter())
            .is_err());
        assert!(transitions.check_container_removal("c2").is_ok());
        transitions.end(&begun);
        assert!(transitions.check_container_removal("c1").is_ok());
        assert!(transitions
            .check_sandbox_removal("s1", ["c1"].into_iter())
            .is_ok());
    }
}
