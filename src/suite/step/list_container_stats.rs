//! `list_container_stats`: the runtime's ListContainerStats with a filter by container, sandbox
//! or labels, or with none at all (a nil filter, as critest sends it), restricted to the case's
//! own containers (a real runtime lists everyone's); checks exactly which containers answer,
//! that each answer names its container, and the figures of each.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::container_stats::{check_attributes, check_figures, Figure};
use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{expect_eq, mismatch, show, sorted, StepError, World};

/// `list_container_stats`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_container_stats` step: `filter`, `expect`"
)]
pub struct ListContainerStats {
    /// The filter; without one the request carries none (nil), `{}` sends an empty one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<StatsFilter>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ListContainerStatsExpect,
}

/// A `ContainerStatsFilter` in suite terms; each given field must match.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a container stats filter: `id`, `sandbox`, `labels`"
)]
pub struct StatsFilter {
    /// Only this container alias's stats (its full id is sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only containers of this sandbox alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Only containers with all these labels (sent as they are, without the case's own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// What `list_container_stats` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_container_stats` expectation: `error`, `containers`, `cpu`, `memory`, `writable_layer`"
)]
pub struct ListContainerStatsExpect {
    /// The call must fail like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// Exactly these of the case's containers answer, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<String>>,
    /// `cpu.usage_core_nano_seconds` by container alias.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpu: BTreeMap<String, Figure>,
    /// `memory.working_set_bytes` by container alias.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub memory: BTreeMap<String, Figure>,
    /// `writable_layer.used_bytes` by container alias.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub writable_layer: BTreeMap<String, Figure>,
}

impl ListContainerStatsExpect {
    /// Every alias the figures name.
    fn figure_aliases(&self) -> impl Iterator<Item = &String> {
        self.cpu
            .keys()
            .chain(self.memory.keys())
            .chain(self.writable_layer.keys())
    }
}

impl StepDef for ListContainerStats {
    const NAME: &'static str = "list_container_stats";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Lists container stats with a filter (id, sandbox, labels) or none, and checks which of the case's containers answer and their figures.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ListContainerStatsExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if let Some(filter) = &self.filter {
            if let Some(id) = &filter.id {
                scope.container(id)?;
            }
            if let Some(sandbox) = &filter.sandbox {
                scope.sandbox(sandbox)?;
            }
        }
        scope.error(self.expect.error.as_ref())?;
        let expect = &self.expect;
        for alias in expect.containers.iter().flatten() {
            scope.container(alias)?;
        }
        for alias in expect.figure_aliases() {
            scope.container(alias)?;
        }
        if expect.error.is_some()
            && (expect.containers.is_some() || expect.figure_aliases().next().is_some())
        {
            return Err(CheckError::error_and_answers("answers"));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let filter = match &self.filter {
            None => None,
            Some(filter) => Some(v1::ContainerStatsFilter {
                id: match &filter.id {
                    Some(alias) => world.aliases.container(alias)?.id.clone(),
                    None => String::new(),
                },
                pod_sandbox_id: match &filter.sandbox {
                    Some(alias) => world.aliases.sandbox(alias)?.id.clone(),
                    None => String::new(),
                },
                label_selector: filter.labels.clone(),
            }),
        };
        // A nil filter lists every container on the node, other cases' too.
        let result = if filter.is_none() {
            world
                .list_node_wide("ListContainerStats", |runtime| async move {
                    runtime.list_container_stats(None).await
                })
                .await
        } else {
            world.runtime.list_container_stats(filter).await
        };
        let Some(listed) = check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        // Other cases' and other users' containers answer a nil filter too; only ours count.
        let own: Vec<&v1::ContainerStats> = listed
            .iter()
            .filter(|s| {
                s.attributes
                    .as_ref()
                    .is_some_and(|a| world.aliases.is_known(&a.id))
            })
            .collect();
        let alias_of = |stats: &v1::ContainerStats| {
            world.alias_of(stats.attributes.as_ref().map_or("", |a| a.id.as_str()))
        };
        let answered = sorted(own.iter().map(|s| alias_of(s)));
        if let Some(duplicate) = answered.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(mismatch(
                "containers",
                "one answer per container",
                format!("{} answered twice in {}", duplicate[0], show(&answered)),
            ));
        }
        if let Some(wanted) = &self.expect.containers {
            expect_eq(
                "containers",
                &show(&sorted(wanted.iter().cloned())),
                &show(&answered),
            )?;
        }
        for stats in &own {
            let alias = alias_of(stats);
            if world.aliases.container(&alias).is_ok() {
                check_attributes(&format!("stats.{alias}."), stats, world, &alias)?;
            }
        }
        let expect = &self.expect;
        let mut named: Vec<&String> = expect.figure_aliases().collect();
        named.sort();
        named.dedup();
        for alias in named {
            let stats = own.iter().find(|s| alias_of(s) == *alias).ok_or_else(|| {
                mismatch(
                    format!("stats.{alias}"),
                    "in the answer",
                    format!("absent; answered {}", show(&answered)),
                )
            })?;
            check_figures(
                &format!("stats.{alias}."),
                stats,
                expect.cpu.get(alias).copied(),
                expect.memory.get(alias).copied(),
                expect.writable_layer.get(alias).copied(),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_filter_the_step_reads_back_as_a_bare_step() {
        let step: ListContainerStats = serde_saphyr::from_str("expect: {containers: [a]}").unwrap();
        assert_eq!(step.filter, None);
        let with_empty: ListContainerStats = serde_saphyr::from_str("filter: {}").unwrap();
        assert_eq!(with_empty.filter, Some(StatsFilter::default()));
    }
}
