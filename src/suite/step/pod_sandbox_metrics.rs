//! `pod_sandbox_metrics`: CRI `ListMetricDescriptors`, then `ListPodSandboxMetrics`. Every
//! descriptor must have a unique name, help text and label keys; every metric answered must
//! be named by one of them, with one label value per label key; and the sandboxes and
//! containers the step names must be listed (containers under their sandbox). Which metrics a
//! runtime offers is its choice: no name is required. A runtime that answers Unimplemented
//! lacks them: cases declare `needs: [pod_sandbox_metrics]`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{mismatch, show, StepError, World};

/// `pod_sandbox_metrics`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `pod_sandbox_metrics` step: `sandboxes`, `containers`"
)]
pub struct PodSandboxMetrics {
    /// Sandbox aliases that must be listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandboxes: Vec<String>,
    /// Container aliases that must be listed under their sandbox.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<String>,
}

/// Checks one metric against the descriptors: declared, with one value per key.
fn check_metric(
    place: &str,
    metric: &v1::Metric,
    keys: &BTreeMap<&str, usize>,
) -> Result<(), StepError> {
    let Some(&count) = keys.get(metric.name.as_str()) else {
        let mut declared: Vec<String> = keys.keys().map(|k| (*k).to_owned()).collect();
        declared.sort();
        return Err(mismatch(
            format!("{place}.{}", metric.name),
            format!(
                "a name ListMetricDescriptors declares ({})",
                show(&declared)
            ),
            "undeclared",
        ));
    };
    if metric.label_values.len() != count {
        return Err(mismatch(
            format!("{place}.{}.label_values", metric.name),
            format!("{count} values, one per label key"),
            metric.label_values.len().to_string(),
        ));
    }
    Ok(())
}

impl StepDef for PodSandboxMetrics {
    const NAME: &'static str = "pod_sandbox_metrics";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "ListMetricDescriptors and ListPodSandboxMetrics: descriptors named, helped and labelled; every metric declared, one label value per key; the named sandboxes and containers listed.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        self.sandboxes.iter().try_for_each(|a| scope.sandbox(a))?;
        self.containers.iter().try_for_each(|a| scope.container(a))
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let descriptors = world.runtime.list_metric_descriptors().await?;
        let mut keys: BTreeMap<&str, usize> = BTreeMap::new();
        for descriptor in &descriptors {
            let place = format!("descriptors.{}", descriptor.name);
            if descriptor.name.is_empty() {
                return Err(mismatch(
                    "descriptors",
                    "every descriptor named",
                    "an empty name",
                ));
            }
            if descriptor.help.is_empty() {
                return Err(mismatch(format!("{place}.help"), "help text", "none"));
            }
            if descriptor.label_keys.is_empty() {
                return Err(mismatch(
                    format!("{place}.label_keys"),
                    "label keys",
                    "none",
                ));
            }
            if keys
                .insert(descriptor.name.as_str(), descriptor.label_keys.len())
                .is_some()
            {
                return Err(mismatch(place, "one descriptor of this name", "several"));
            }
        }
        if self.sandboxes.is_empty() && self.containers.is_empty() {
            return Ok(());
        }
        let listed = world
            .list_node_wide("ListPodSandboxMetrics", |runtime| async move {
                runtime.list_pod_sandbox_metrics().await
            })
            .await?;
        for pod in &listed {
            let place = format!("pod_metrics.{}", world.alias_of(&pod.pod_sandbox_id));
            for metric in &pod.metrics {
                check_metric(&place, metric, &keys)?;
            }
            for container in &pod.container_metrics {
                let place = format!("{place}.{}", world.alias_of(&container.container_id));
                for metric in &container.metrics {
                    check_metric(&place, metric, &keys)?;
                }
            }
        }
        for alias in &self.sandboxes {
            let id = world.aliases.sandbox(alias)?.id.clone();
            let Some(pod) = listed.iter().find(|p| p.pod_sandbox_id == id) else {
                return Err(mismatch(format!("pod_metrics.{alias}"), "listed", "absent"));
            };
            if pod.metrics.is_empty() && pod.container_metrics.iter().all(|c| c.metrics.is_empty())
            {
                return Err(mismatch(
                    format!("pod_metrics.{alias}"),
                    "some metric",
                    "none",
                ));
            }
        }
        for alias in &self.containers {
            let id = world.aliases.container(alias)?.id.clone();
            let holder = listed
                .iter()
                .find(|p| p.container_metrics.iter().any(|c| c.container_id == id));
            if holder.is_none() {
                return Err(mismatch(
                    format!("pod_metrics.*.{alias}"),
                    "listed under its sandbox",
                    "absent",
                ));
            }
        }
        Ok(())
    }
}
