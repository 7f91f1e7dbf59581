//! `list_containers`: the runtime's ListContainers with a filter, as the kubelet and crictl
//! send it (sandbox, state, labels, an id or id prefix), restricted to the case's own objects; checks exactly which
//! containers answer, and their states.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sandbox_status::{by_prefix, check_prefix};
use super::{is_default, CheckError, Kind, Scope, State, StepDef};
use crate::cri::v1;
use crate::manager::ContainerState;
use crate::world::{expect_eq, show, sorted, StepError, World};

/// `list_containers`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_containers` step: `id`, `id_prefix`, `sandbox`, `state`, `labels`, `expect`"
)]
pub struct ListContainers {
    /// Only the container with this alias's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Filter by the first this many characters of that id instead of the whole id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<usize>,
    /// Only containers of this sandbox alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Only containers in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// Only containers with all these labels (besides the case's own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ListContainersExpect,
}

/// What `list_containers` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_containers` expectation: `containers`, `states`"
)]
pub struct ListContainersExpect {
    /// Exactly these container aliases answer, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<String>>,
    /// The states of containers by alias.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub states: BTreeMap<String, State>,
}

impl StepDef for ListContainers {
    const NAME: &'static str = "list_containers";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Lists the case's containers with a filter (id or id prefix, sandbox, state, labels) and checks which answer.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ListContainersExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if let Some(id) = &self.id {
            scope.container(id)?;
        } else if self.id_prefix.is_some() {
            return Err(CheckError::needs(
                "id_prefix",
                "id",
                "the container whose id to shorten",
            ));
        }
        check_prefix(self.id_prefix)?;
        if let Some(sandbox) = &self.sandbox {
            scope.sandbox(sandbox)?;
        }
        for alias in self.expect.containers.iter().flatten() {
            scope.container(alias)?;
        }
        for alias in self.expect.states.keys() {
            scope.container(alias)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let mut label_selector = world.ids.own_selector();
        label_selector.extend(self.labels.clone());
        let pod_sandbox_id = match &self.sandbox {
            Some(alias) => world.aliases.sandbox(alias)?.id.clone(),
            None => String::new(),
        };
        let id = match &self.id {
            Some(alias) => {
                let full = &world.aliases.container(alias)?.id;
                by_prefix(full, self.id_prefix).to_owned()
            }
            None => String::new(),
        };
        let filter = v1::ContainerFilter {
            id,
            pod_sandbox_id,
            state: self.state.map(|s| v1::ContainerStateValue {
                state: s.0.to_cri_container() as i32,
            }),
            label_selector,
        };
        let listed = world.runtime.list_containers(Some(filter)).await?;
        if let Some(wanted) = &self.expect.containers {
            let actual = sorted(listed.iter().map(|c| world.alias_of(&c.id)));
            expect_eq(
                "containers",
                &show(&sorted(wanted.iter().cloned())),
                &show(&actual),
            )?;
        }
        for (alias, state) in &self.expect.states {
            let actual = listed
                .iter()
                .find(|c| world.alias_of(&c.id) == *alias)
                .map_or("absent", |c| {
                    ContainerState::from_cri_container(c.state).name()
                });
            expect_eq(format!("states.{alias}"), state.0.name(), actual)?;
        }
        Ok(())
    }
}
