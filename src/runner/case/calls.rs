//! Manager steps: each call goes through the manager over the recording client, is kept
//! (redacted, with the CRI calls it made) for the snapshot, then checked against its partial
//! expectations in suite terms (aliases, not ids).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;
use serde_yaml::Value;

use super::expect::{check_error, expect_eq, mismatch, show, sorted};
use super::{CaseRun, StepError};
use crate::cri::{labels, v1};
use crate::manager::{
    self, Container, ContainerId, ContainerSpec, KubeGenericRuntimeManager, Pod, PodSpec,
    PodSyncResult, RecordingNetworkPlugin, SyncAction,
};
use crate::suite::step::{self, IpExpect};

impl CaseRun<'_> {
    /// Records a manager call for the snapshot: the call, its redacted result or error, the CRI
    /// calls it made, and anything else worth keeping (teardowns).
    pub(super) fn observe(
        &mut self,
        call: String,
        outcome: Result<Value, String>,
        extra: Vec<(&str, Value)>,
    ) {
        let mut entry = serde_yaml::Mapping::new();
        entry.insert("call".into(), Value::String(self.redactor.text(&call)));
        match outcome {
            Ok(value) => entry.insert("result".into(), self.redactor.value(value)),
            Err(message) => {
                entry.insert("error".into(), Value::String(self.redactor.text(&message)))
            }
        };
        let calls: Vec<Value> = self
            .log
            .take()
            .into_iter()
            .map(|record| {
                let line = if record.request.is_empty() {
                    format!("{} -> {}", record.method, record.outcome)
                } else {
                    format!("{} {} -> {}", record.method, record.request, record.outcome)
                };
                Value::String(self.redactor.text(&line))
            })
            .collect();
        entry.insert("cri".into(), Value::Sequence(calls));
        for (key, value) in extra {
            entry.insert(key.into(), self.redactor.value(value));
        }
        self.observations.push(Value::Mapping(entry));
    }

    pub(super) async fn ensure_manager(&mut self) -> Result<KubeGenericRuntimeManager, StepError> {
        if let Some(manager) = &self.manager {
            return Ok(manager.clone());
        }
        self.construct(&step::NewManagerExpect::default()).await?;
        self.manager
            .clone()
            .ok_or_else(|| StepError::new("the manager could not be constructed"))
    }

    pub(super) async fn construct(
        &mut self,
        expect: &step::NewManagerExpect,
    ) -> Result<(), StepError> {
        let result =
            KubeGenericRuntimeManager::new(self.recorded.clone(), self.plugin.clone()).await;
        if let Ok(manager) = &result {
            self.redactor.runtime(manager.runtime_type());
        }
        let outcome = match &result {
            Ok(m) => Ok(yaml(&BTreeMap::from([("runtime_type", m.runtime_type())]))),
            Err(err) => Err(err.to_string()),
        };
        self.observe("new_manager".to_owned(), outcome, Vec::new());
        let Some(manager) = check_error(expect.error.as_ref(), result).map_err(StepError::new)?
        else {
            return Ok(());
        };
        if let Some(wanted) = &expect.runtime_type {
            let wanted = if wanted == step::REPORTED_RUNTIME_NAME {
                self.env.client.version("").await?.runtime_name
            } else {
                wanted.clone()
            };
            expect_eq("runtime_type", &wanted, manager.runtime_type())?;
        }
        self.manager = Some(manager);
        Ok(())
    }

    pub(super) async fn new_manager(&mut self, n: &step::NewManager) -> Result<(), StepError> {
        self.construct(&n.expect).await
    }

    pub(super) async fn version(
        &mut self,
        v: &step::VersionCall,
        api: bool,
    ) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let (name, result) = if api {
            ("api_version", manager.api_version().await)
        } else {
            ("version", manager.version().await)
        };
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(name.to_owned(), outcome, Vec::new());
        if let Some(version) =
            check_error(v.expect.error.as_ref(), result).map_err(StepError::new)?
        {
            if let Some(wanted) = &v.expect.version {
                expect_eq("version", wanted, &version.to_string())?;
            }
        }
        Ok(())
    }

    pub(super) async fn status(&mut self, s: &step::StatusCall) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let result = manager.status().await;
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe("status".to_owned(), outcome, Vec::new());
        check_error(s.expect.error.as_ref(), result).map_err(StepError::new)?;
        Ok(())
    }

    /// The case's own pods of a listing, in a stable order: a real runtime lists other pods
    /// too, and lists in no fixed order.
    pub(super) fn own_pods(&self, pods: Vec<Pod>) -> Vec<Pod> {
        let uids: BTreeSet<String> = self.pods.iter().map(|p| self.uid(p)).collect();
        let mut own: Vec<Pod> = pods
            .into_iter()
            .filter(|pod| uids.contains(&pod.id) || pod.id.is_empty())
            .map(|mut pod| {
                if pod.id.is_empty() {
                    // Unlabelled containers of anyone collapse here; keep ours.
                    pod.containers.retain(|c| self.is_known(&c.id.id));
                    pod.sandboxes.retain(|s| self.is_known(&s.id.id));
                }
                pod.containers.sort_by_key(|c| self.rank(&c.id.id));
                pod.sandboxes.sort_by_key(|s| self.rank(&s.id.id));
                pod
            })
            .filter(|pod| {
                !pod.id.is_empty() || !pod.containers.is_empty() || !pod.sandboxes.is_empty()
            })
            .collect();
        own.sort_by(|a, b| a.id.cmp(&b.id));
        own
    }

    pub(super) fn is_known(&self, id: &str) -> bool {
        self.sandboxes.iter().any(|s| s.id == id) || self.containers.iter().any(|c| c.id == id)
    }

    /// Sorts by the order the case made things in, unknown ids last.
    pub(super) fn rank(&self, id: &str) -> (usize, String) {
        let position = self
            .sandboxes
            .iter()
            .position(|s| s.id == id)
            .or_else(|| {
                self.containers
                    .iter()
                    .position(|c| c.id == id)
                    .map(|i| i + self.sandboxes.len())
            })
            .unwrap_or(usize::MAX);
        (position, self.redactor.text(id))
    }

    /// A sandbox or container id in suite terms: its alias, else its redacted form.
    pub(super) fn alias_of(&self, id: &str) -> String {
        self.sandboxes
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.alias.clone())
            .or_else(|| {
                self.containers
                    .iter()
                    .find(|c| c.id == id)
                    .map(|c| c.alias.clone())
            })
            .unwrap_or_else(|| self.redactor.text(id))
    }

    /// A pod UID in suite terms.
    pub(super) fn pod_alias_of(&self, uid: &str) -> String {
        self.pods
            .iter()
            .find(|p| self.uid(p) == uid)
            .cloned()
            .unwrap_or_else(|| self.redactor.text(uid))
    }

    pub(super) async fn get_pods(&mut self, g: &step::GetPods) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let result = manager
            .get_pods(g.all)
            .await
            .map(|pods| self.own_pods(pods));
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(format!("get_pods all={}", g.all), outcome, Vec::new());
        let Some(pods) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)?
        else {
            return Ok(());
        };
        let by_alias: BTreeMap<String, &Pod> =
            pods.iter().map(|p| (self.pod_alias_of(&p.id), p)).collect();
        let present: Vec<String> = by_alias.keys().cloned().collect();
        if let Some(only) = &g.expect.only {
            let mut wanted = only.clone();
            wanted.sort();
            expect_eq("pods", &show(&wanted), &show(&present))?;
        }
        for absent in &g.expect.absent {
            if by_alias.contains_key(absent) {
                return Err(mismatch(&format!("pods.{absent}"), "absent", "present"));
            }
        }
        for (alias, expect) in &g.expect.pods {
            let field = if alias.is_empty() {
                "pods.\"\"".to_owned()
            } else {
                format!("pods.{alias}")
            };
            let Some(pod) = by_alias.get(alias) else {
                return Err(mismatch(
                    &field,
                    "present",
                    &format!("absent (pods: {})", show(&present)),
                ));
            };
            if let Some(wanted) = &expect.sandboxes {
                let actual = sorted(pod.sandboxes.iter().map(|s| self.alias_of(&s.id.id)));
                expect_eq(
                    &format!("{field}.sandboxes"),
                    &show(&sorted(wanted.iter().cloned())),
                    &show(&actual),
                )?;
            }
            if let Some(wanted) = &expect.containers {
                let actual = sorted(pod.containers.iter().map(|c| self.alias_of(&c.id.id)));
                expect_eq(
                    &format!("{field}.containers"),
                    &show(&sorted(wanted.iter().cloned())),
                    &show(&actual),
                )?;
            }
            for (alias, state) in &expect.states {
                let actual = pod
                    .sandboxes
                    .iter()
                    .chain(&pod.containers)
                    .find(|c| self.alias_of(&c.id.id) == *alias)
                    .map_or_else(|| "absent".to_owned(), |c| state_name(c.state).to_owned());
                expect_eq(
                    &format!("{field}.states.{alias}"),
                    suite_state_name(*state),
                    &actual,
                )?;
            }
        }
        Ok(())
    }

    pub(super) async fn get_pod_status(&mut self, g: &step::GetPodStatus) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let uid = self.uid(&g.pod);
        let result = manager.get_pod_status(&uid, &g.pod, &self.namespace).await;
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(format!("get_pod_status {}", g.pod), outcome, Vec::new());
        let Some(status) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)?
        else {
            return Ok(());
        };
        if let Some(ip) = &g.expect.ip {
            let actual = if status.ip.is_empty() {
                "none".to_owned()
            } else {
                self.redactor.ip_token(&status.ip)
            };
            let wanted = match ip {
                IpExpect::None => "none".to_owned(),
                IpExpect::Of(alias) => format!("<ip:{alias}>"),
            };
            expect_eq("ip", &wanted, &actual)?;
        }
        if let Some(wanted) = &g.expect.sandboxes {
            let actual: Vec<String> = status
                .sandbox_statuses
                .iter()
                .map(|s| self.alias_of(&s.id))
                .collect();
            expect_eq("sandboxes (newest first)", &show(wanted), &show(&actual))?;
        }
        if let Some(wanted) = &g.expect.containers {
            let actual = sorted(
                status
                    .container_statuses
                    .iter()
                    .map(|c| self.alias_of(&c.id.id)),
            );
            expect_eq(
                "containers",
                &show(&sorted(wanted.iter().cloned())),
                &show(&actual),
            )?;
        }
        Ok(())
    }

    pub(super) async fn running_pod(
        &mut self,
        manager: &KubeGenericRuntimeManager,
        pod: &str,
    ) -> Result<Pod, StepError> {
        let uid = self.uid(pod);
        let pods = manager.get_pods(true).await;
        // Finding the running pod is not the call under test.
        self.log.take();
        let pods =
            pods.map_err(|err| StepError::new(format!("listing the running pod failed: {err}")))?;
        let mut running = pods
            .into_iter()
            .find(|p| p.id == uid)
            .unwrap_or_else(|| Pod {
                id: uid,
                name: pod.to_owned(),
                namespace: self.namespace.clone(),
                ..Default::default()
            });
        // Runtimes list in no fixed order (containerd's is a map's); the seed takes the first
        // sandbox for the latest, so hand it the case's sandboxes newest first and the
        // containers in creation order, the same on every runtime.
        running
            .sandboxes
            .sort_by_key(|s| std::cmp::Reverse(self.rank(&s.id.id)));
        running.containers.sort_by_key(|c| self.rank(&c.id.id));
        Ok(running)
    }

    pub(super) async fn kill_pod(&mut self, k: &step::KillPod) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let mut running = self.running_pod(&manager, &k.pod).await?;
        for id in &k.extra_containers {
            running.containers.push(Container {
                id: ContainerId {
                    r#type: manager.runtime_type().to_owned(),
                    id: id.clone(),
                },
                name: id.clone(),
                state: manager::ContainerState::Running,
                ..Default::default()
            });
        }
        let spec = k.with_spec.then(|| self.pod_spec(&k.pod, k.host_network));
        let (manager, plugin) = match &k.teardown_fails {
            Some(message) => {
                let plugin = Arc::new(RecordingNetworkPlugin::failing(message.clone()));
                let manager = KubeGenericRuntimeManager::new(self.recorded.clone(), plugin.clone())
                    .await
                    .map_err(|err| {
                        StepError::new(format!(
                            "cannot build a manager with a failing network plugin: {err}"
                        ))
                    })?;
                self.log.take();
                (manager, plugin)
            }
            None => (manager, self.plugin.clone()),
        };
        let before = plugin.calls().len();
        let result = manager
            .kill_pod(spec.as_ref(), &running, k.grace_override)
            .await;
        let teardown: Vec<_> = plugin.calls().into_iter().skip(before).collect();
        let mut call = format!("kill_pod {}", k.pod);
        if !k.with_spec {
            call.push_str(" without spec");
        }
        if let Some(grace) = k.grace_override {
            call.push_str(&format!(" grace_override={grace}"));
        }
        self.observe(call, Ok(yaml(&result)), vec![("teardown", yaml(&teardown))]);
        let expect = &k.expect;
        if let Some(wanted) = &expect.teardown {
            let actual: Vec<String> = teardown
                .iter()
                .map(|t| self.alias_of(&t.sandbox_id))
                .collect();
            expect_eq("teardown", &show(wanted), &show(&actual))?;
        }
        if let Some(failed) = expect.failed {
            let actual = result.error();
            if actual.is_some() != failed {
                return Err(mismatch(
                    "failed",
                    &failed.to_string(),
                    &match actual {
                        Some(text) => format!("true ({})", self.redactor.text(&text)),
                        None => "false".to_owned(),
                    },
                ));
            }
        }
        if let Some(wanted) = &expect.results {
            self.check_results(wanted, &result)?;
        }
        if expect.stopped.is_some() {
            self.check_stopped(&k.pod).await?;
        }
        Ok(())
    }

    pub(super) fn pod_spec(&self, pod: &str, host_network: Option<bool>) -> PodSpec {
        let host_network = host_network.unwrap_or_else(|| {
            self.sandboxes
                .iter()
                .find(|s| s.pod == pod)
                .is_some_and(|s| s.host_network)
        });
        PodSpec {
            uid: self.uid(pod),
            name: pod.to_owned(),
            namespace: self.namespace.clone(),
            host_network,
            termination_grace_period_seconds: None,
            deletion_grace_period_seconds: None,
            containers: self
                .containers
                .iter()
                .map(|c| ContainerSpec {
                    name: c.name.clone(),
                    image: String::new(),
                })
                .collect(),
        }
    }

    pub(super) fn check_results(
        &self,
        wanted: &[step::SyncResultExpect],
        result: &PodSyncResult,
    ) -> Result<(), StepError> {
        let describe = |r: &manager::SyncResult| {
            format!(
                "{} {} {}",
                action_name(r.action),
                self.target_alias(&r.target),
                r.error.as_deref().unwrap_or("ok")
            )
        };
        let actual: Vec<String> = result.results.iter().map(describe).collect();
        if wanted.len() != result.results.len() {
            let wanted: Vec<String> = wanted.iter().map(|w| w.action.to_string()).collect();
            return Err(mismatch("results", &show(&wanted), &show(&actual)));
        }
        for (index, (want, got)) in wanted.iter().zip(&result.results).enumerate() {
            let field = format!("results[{index}]");
            expect_eq(
                &format!("{field}.action"),
                &want.action.to_string(),
                action_name(got.action),
            )?;
            if let Some(target) = &want.target {
                expect_eq(
                    &format!("{field}.target"),
                    target,
                    &self.target_alias(&got.target),
                )?;
            }
            if let Some(error) = &want.error {
                expect_eq(
                    &format!("{field}.error"),
                    error,
                    got.error.as_deref().unwrap_or("none"),
                )?;
            }
            if let Some(part) = &want.message_contains {
                if !got.message.contains(part.as_str()) {
                    return Err(mismatch(
                        &format!("{field}.message"),
                        &format!("containing {part:?}"),
                        &format!("{:?}", self.redactor.text(&got.message)),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A sync result's target in suite terms: a pod alias for a UID, a container alias for a
    /// container name or id.
    pub(super) fn target_alias(&self, target: &str) -> String {
        if let Some(pod) = self.pods.iter().find(|p| self.uid(p) == target) {
            return pod.clone();
        }
        if let Some(c) = self
            .containers
            .iter()
            .find(|c| c.name == target || c.id == target)
        {
            return c.alias.clone();
        }
        self.alias_of(target)
    }

    /// After a kill: every sandbox of the pod is not ready and none of its containers runs.
    pub(super) async fn check_stopped(&self, pod: &str) -> Result<(), StepError> {
        let uid = self.uid(pod);
        let own = BTreeMap::from([
            (labels::RUN_ID.to_owned(), self.run_id.clone()),
            (labels::CASE.to_owned(), self.case_no.to_string()),
        ]);
        let sandboxes = self
            .env
            .client
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                label_selector: own.clone(),
                ..Default::default()
            }))
            .await?;
        let pod_sandboxes: Vec<&v1::PodSandbox> = sandboxes
            .iter()
            .filter(|s| s.metadata.as_ref().is_some_and(|m| m.uid == uid))
            .collect();
        let ready: Vec<String> = pod_sandboxes
            .iter()
            .filter(|s| s.state == v1::PodSandboxState::SandboxReady as i32)
            .map(|s| self.alias_of(&s.id))
            .collect();
        if !ready.is_empty() {
            return Err(mismatch(
                "stopped",
                "all",
                &format!("sandboxes still ready: {}", show(&ready)),
            ));
        }
        let sandbox_ids: BTreeSet<&str> = pod_sandboxes.iter().map(|s| s.id.as_str()).collect();
        let containers = self
            .env
            .client
            .list_containers(Some(v1::ContainerFilter {
                label_selector: own,
                ..Default::default()
            }))
            .await?;
        let running: Vec<String> = containers
            .iter()
            .filter(|c| {
                c.labels.get(labels::POD_UID) == Some(&uid)
                    || sandbox_ids.contains(c.pod_sandbox_id.as_str())
            })
            .filter(|c| c.state == v1::ContainerState::ContainerRunning as i32)
            .map(|c| self.alias_of(&c.id))
            .collect();
        if !running.is_empty() {
            return Err(mismatch(
                "stopped",
                "all",
                &format!("containers still running: {}", show(&running)),
            ));
        }
        Ok(())
    }

    pub(super) async fn get_netns(&mut self, g: &step::GetNetns) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let id = self.sandbox(&g.sandbox)?.id.clone();
        let result = manager.get_netns(&id).await;
        let outcome = result
            .as_ref()
            .map(|path| yaml(&BTreeMap::from([("netns", netns_token(path))])))
            .map_err(ToString::to_string);
        self.observe(format!("get_netns {}", g.sandbox), outcome, Vec::new());
        if let Some(path) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)? {
            if let Some(empty) = g.expect.empty {
                expect_eq("empty", &empty.to_string(), &path.is_empty().to_string())?;
            }
        }
        Ok(())
    }

    pub(super) async fn get_pod_container_id(
        &mut self,
        g: &step::GetPodContainerId,
    ) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let running = self.running_pod(&manager, &g.pod).await?;
        let result = manager.get_pod_container_id(&running);
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(
            format!("get_pod_container_id {}", g.pod),
            outcome,
            Vec::new(),
        );
        if let Some(id) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)? {
            if let Some(wanted) = &g.expect.of {
                expect_eq("of", wanted, &self.alias_of(&id.id))?;
            }
        }
        Ok(())
    }
}

fn yaml<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_yaml::to_value(value)
        .unwrap_or_else(|err| Value::String(format!("cannot serialize: {err}")))
}

fn netns_token(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        "<netns>".to_owned()
    }
}

fn state_name(state: manager::ContainerState) -> &'static str {
    match state {
        manager::ContainerState::Created => "created",
        manager::ContainerState::Running => "running",
        manager::ContainerState::Exited => "exited",
        manager::ContainerState::Unknown => "unknown",
    }
}

fn suite_state_name(state: step::ContainerState) -> &'static str {
    match state {
        step::ContainerState::Created => "created",
        step::ContainerState::Running => "running",
        step::ContainerState::Exited => "exited",
        step::ContainerState::Unknown => "unknown",
    }
}

fn action_name(action: SyncAction) -> &'static str {
    match action {
        SyncAction::KillContainer => "kill_container",
        SyncAction::TeardownNetwork => "teardown_network",
        SyncAction::KillPodSandbox => "kill_pod_sandbox",
    }
}
