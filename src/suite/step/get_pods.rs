//! `get_pods`: the manager's `GetPods(all)`, checked on the case's own pods: which pods, in
//! which order, and each pod's sandboxes, containers and their states.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    check_error, is_default, is_true, yes, CheckError, ErrorExpect, Kind, Scope, State, StepDef,
};
use crate::cri::v1;
use crate::manager::Pod;
use crate::observe::Answer;
use crate::world::{expect_eq, mismatch, show, sorted, StepError, World};

/// `get_pods`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `get_pods` step: `all`, `expect`")]
pub struct GetPods {
    /// All sandboxes and containers (true), or only ready sandboxes and running containers.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub all: bool,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: GetPodsExpect,
}

/// What `get_pods` checks; only the case's own pods are considered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `get_pods` expectation: `error`, `pods`, `only`, `absent`, `order`, `order_as_listed`"
)]
pub struct GetPodsExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// Per pod alias (`""` for the pod of containers without pod labels).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pods: BTreeMap<String, PodExpect>,
    /// Exactly these pods, no other (of the case's own), in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
    /// None of these pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
    /// The case's own pods in exactly this order, as the manager answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<String>>,
    /// The case's own pods in the order ListPodSandbox then answers their sandboxes, each pod
    /// where its first sandbox is: the seed's order of first appearance, whatever order the
    /// runtime lists in (api.proto fixes none).
    #[serde(default, skip_serializing_if = "is_default")]
    pub order_as_listed: bool,
}

/// One pod in a `get_pods` result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a pod expectation: `name`, `namespace`, `sandboxes`, `containers`, `states`, `created_at`"
)]
pub struct PodExpect {
    /// The pod's name as the manager reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The pod's namespace (`<namespace>` for the case's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Exactly these sandboxes, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandboxes: Option<Vec<String>>,
    /// Exactly these containers, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<String>>,
    /// States of sandboxes (running = ready, exited = not ready) and containers by alias.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub states: BTreeMap<String, State>,
    /// The pod's CreatedAt, whole seconds since the Unix epoch: its last sandbox's under today's
    /// kubelet, 0 under the seed's (which had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
}

impl StepDef for GetPods {
    const NAME: &'static str = "get_pods";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "`GetPods(all)`: the pods on the runtime, grouped by pod UID.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<GetPodsExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())?;
        let named = self
            .expect
            .pods
            .keys()
            .chain(self.expect.only.iter().flatten())
            .chain(&self.expect.absent)
            .chain(self.expect.order.iter().flatten());
        for pod in named {
            scope.pod(pod)?;
        }
        for expect in self.expect.pods.values() {
            for alias in expect.sandboxes.iter().flatten() {
                scope.sandbox(alias)?;
            }
            for alias in expect.containers.iter().flatten() {
                scope.container(alias)?;
            }
            for alias in expect.states.keys() {
                scope.either(alias)?;
            }
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let result = manager.get_pods(self.all).await;
        // The manager's own order of the case's pods, before they are sorted for the snapshot.
        let order: Vec<String> = result
            .as_ref()
            .map(|pods| {
                pods.iter()
                    .filter_map(|p| world.ids.alias_of(&p.id).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let result = result.map(|pods| world.own_pods(pods));
        world.observe(format!("get_pods all={}", self.all), &result, |pods| {
            Answer::Pods(pods.clone())
        });
        let Some(pods) = check_error(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        if let Some(wanted) = &self.expect.order {
            expect_eq("order", &show(wanted), &show(&order))?;
        }
        if self.expect.order_as_listed {
            let listed = world
                .runtime
                .list_pod_sandbox(Some(v1::PodSandboxFilter {
                    label_selector: world.ids.own_selector(),
                    ..Default::default()
                }))
                .await?;
            let mut first_met: Vec<String> = Vec::new();
            for sandbox in &listed {
                let uid = sandbox.metadata.as_ref().map_or("", |m| m.uid.as_str());
                if let Some(alias) = world.ids.alias_of(uid) {
                    if !first_met.iter().any(|a| a == alias) {
                        first_met.push(alias.to_owned());
                    }
                }
            }
            expect_eq(
                "order (as ListPodSandbox lists)",
                &show(&first_met),
                &show(&order),
            )?;
        }
        let by_alias: BTreeMap<String, &Pod> = pods
            .iter()
            .map(|p| (world.pod_alias_of(&p.id), p))
            .collect();
        let present: Vec<String> = by_alias.keys().cloned().collect();
        if let Some(only) = &self.expect.only {
            expect_eq(
                "pods",
                &show(&sorted(only.iter().cloned())),
                &show(&present),
            )?;
        }
        for absent in &self.expect.absent {
            if by_alias.contains_key(absent) {
                return Err(mismatch(format!("pods.{absent}"), "absent", "present"));
            }
        }
        for (alias, expect) in &self.expect.pods {
            let field = if alias.is_empty() {
                "pods.\"\"".to_owned()
            } else {
                format!("pods.{alias}")
            };
            let Some(pod) = by_alias.get(alias) else {
                return Err(mismatch(
                    field,
                    "present",
                    format!("absent (pods: {})", show(&present)),
                ));
            };
            check_pod(world, &field, expect, pod)?;
        }
        Ok(())
    }
}

fn check_pod(world: &World, field: &str, expect: &PodExpect, pod: &Pod) -> Result<(), StepError> {
    if let Some(name) = &expect.name {
        expect_eq(format!("{field}.name"), name, &pod.name)?;
    }
    if let Some(namespace) = &expect.namespace {
        expect_eq(
            format!("{field}.namespace"),
            namespace,
            &world.redact(&pod.namespace),
        )?;
    }
    if let Some(wanted) = &expect.sandboxes {
        let actual = sorted(pod.sandboxes.iter().map(|s| world.alias_of(&s.id.id)));
        expect_eq(
            format!("{field}.sandboxes"),
            &show(&sorted(wanted.iter().cloned())),
            &show(&actual),
        )?;
    }
    if let Some(wanted) = &expect.containers {
        let actual = sorted(pod.containers.iter().map(|c| world.alias_of(&c.id.id)));
        expect_eq(
            format!("{field}.containers"),
            &show(&sorted(wanted.iter().cloned())),
            &show(&actual),
        )?;
    }
    for (alias, state) in &expect.states {
        let actual = pod
            .sandboxes
            .iter()
            .chain(&pod.containers)
            .find(|c| world.alias_of(&c.id.id) == *alias)
            .map_or("absent", |c| c.state.name());
        expect_eq(format!("{field}.states.{alias}"), state.0.name(), actual)?;
    }
    if let Some(seconds) = expect.created_at {
        expect_eq(
            format!("{field}.created_at"),
            &seconds.to_string(),
            &pod.created_at.div_euclid(1_000_000_000).to_string(),
        )?;
    }
    Ok(())
}
