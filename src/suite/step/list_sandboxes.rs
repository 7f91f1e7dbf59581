//! `list_sandboxes`: the runtime's ListPodSandbox with a filter (state, labels, an id or id
//! prefix), restricted to the case's own objects; checks exactly which sandboxes answer, and
//! their states.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sandbox_status::{by_prefix, check_prefix, sandbox_state, sandbox_state_name};
use super::{is_default, CheckError, Kind, SandboxState, Scope, StepDef};
use crate::cri::v1;
use crate::world::{expect_eq, show, sorted, StepError, World};

/// `list_sandboxes`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_sandboxes` step: `id`, `id_prefix`, `state`, `labels`, `expect`"
)]
pub struct ListSandboxes {
    /// Only the sandbox with this alias's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Filter by the first this many characters of that id instead of the whole id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<usize>,
    /// Only sandboxes in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SandboxState>,
    /// Only sandboxes with all these labels (besides the case's own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ListSandboxesExpect,
}

/// What `list_sandboxes` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_sandboxes` expectation: `sandboxes`, `states`"
)]
pub struct ListSandboxesExpect {
    /// Exactly these sandbox aliases answer, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandboxes: Option<Vec<String>>,
    /// The states of sandboxes by alias.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub states: BTreeMap<String, SandboxState>,
}

impl StepDef for ListSandboxes {
    const NAME: &'static str = "list_sandboxes";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Lists the case's sandboxes with a filter (id or id prefix, state, labels) and checks which answer.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ListSandboxesExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if let Some(id) = &self.id {
            scope.sandbox(id)?;
        } else if self.id_prefix.is_some() {
            return Err(CheckError::needs(
                "id_prefix",
                "id",
                "the sandbox whose id to shorten",
            ));
        }
        check_prefix(self.id_prefix)?;
        for alias in self.expect.sandboxes.iter().flatten() {
            scope.sandbox(alias)?;
        }
        for alias in self.expect.states.keys() {
            scope.sandbox(alias)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let mut label_selector = world.ids.own_selector();
        label_selector.extend(self.labels.clone());
        let id = match &self.id {
            Some(alias) => {
                let full = &world.aliases.sandbox(alias)?.id;
                by_prefix(full, self.id_prefix).to_owned()
            }
            None => String::new(),
        };
        let filter = v1::PodSandboxFilter {
            id,
            state: self.state.map(|s| v1::PodSandboxStateValue {
                state: sandbox_state(s) as i32,
            }),
            label_selector,
        };
        let listed = world.runtime.list_pod_sandbox(Some(filter)).await?;
        if let Some(wanted) = &self.expect.sandboxes {
            let actual = sorted(listed.iter().map(|s| world.alias_of(&s.id)));
            expect_eq(
                "sandboxes",
                &show(&sorted(wanted.iter().cloned())),
                &show(&actual),
            )?;
        }
        for (alias, state) in &self.expect.states {
            let wanted = sandbox_state_name(sandbox_state(*state) as i32);
            let actual = listed
                .iter()
                .find(|s| world.alias_of(&s.id) == *alias)
                .map_or("absent", |s| sandbox_state_name(s.state));
            expect_eq(format!("states.{alias}"), wanted, actual)?;
        }
        Ok(())
    }
}
