//! Removing what a run made: every container, then every sandbox, that carries the harness's
//! labels. Used at the end of each case (then a second listing proves nothing leaked) and by
//! `cri-harness clean` for leftovers of interrupted runs.

use std::collections::BTreeMap;

use crate::cri::{labels, v1, CallError, CriClient};

/// Which objects to remove, by the harness's labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Only this run's objects; `None` for any run's (any object with a run-id label).
    pub run_id: Option<String>,
    /// Only this case's objects.
    pub case: Option<usize>,
}

impl Selector {
    /// The label selector the runtime can filter on (equality only).
    fn labels(&self) -> BTreeMap<String, String> {
        let mut map = BTreeMap::new();
        if let Some(run_id) = &self.run_id {
            map.insert(labels::RUN_ID.to_owned(), run_id.clone());
        }
        if let Some(case) = self.case {
            map.insert(labels::CASE.to_owned(), case.to_string());
        }
        map
    }

    /// The same test on our side: a runtime may ignore label selectors, and "any run" has no
    /// equality form.
    fn matches(&self, object: &BTreeMap<String, String>) -> bool {
        object.contains_key(labels::RUN_ID)
            && self
                .labels()
                .iter()
                .all(|(key, value)| object.get(key) == Some(value))
    }
}

/// One removed (or not removable) object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// `sandbox` or `container`.
    pub kind: &'static str,
    /// Runtime id.
    pub id: String,
    /// `namespace/name` of the pod (sandboxes) or the container name.
    pub name: String,
}

impl std::fmt::Display for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({})", self.kind, self.id, self.name)
    }
}

/// What a cleanup did.
#[derive(Debug, Clone, Default)]
pub struct Removal {
    /// Objects removed, containers first.
    pub removed: Vec<Object>,
    /// Calls that failed, as text.
    pub errors: Vec<String>,
}

/// Removes every container then every sandbox matching `selector`: running containers are
/// stopped first, sandboxes stopped then removed; NotFound counts as done (a sandbox's removal
/// takes its containers with it).
pub async fn remove(client: &CriClient, selector: &Selector) -> Removal {
    let mut removal = Removal::default();
    match list(client, selector).await {
        Ok((sandboxes, containers)) => {
            for container in containers {
                if container.state == v1::ContainerState::ContainerRunning as i32 {
                    if let Err(err) = client.stop_container(&container.id, 0).await {
                        note(&mut removal, err);
                    }
                }
                match client.remove_container(&container.id).await {
                    Ok(()) => removal.removed.push(container_object(&container)),
                    Err(err) => note(&mut removal, err),
                }
            }
            for sandbox in sandboxes {
                if let Err(err) = client.stop_pod_sandbox(&sandbox.id).await {
                    note(&mut removal, err);
                }
                match client.remove_pod_sandbox(&sandbox.id).await {
                    Ok(()) => removal.removed.push(sandbox_object(&sandbox)),
                    Err(err) => note(&mut removal, err),
                }
            }
        }
        Err(err) => removal.errors.push(err.to_string()),
    }
    removal
}

fn note(removal: &mut Removal, err: CallError) {
    if !err.is_not_found() {
        removal.errors.push(err.to_string());
    }
}

/// What is still there: the objects matching `selector`, containers first.
pub async fn remaining(client: &CriClient, selector: &Selector) -> Result<Vec<Object>, CallError> {
    let (sandboxes, containers) = list(client, selector).await?;
    Ok(containers
        .iter()
        .map(container_object)
        .chain(sandboxes.iter().map(sandbox_object))
        .collect())
}

async fn list(
    client: &CriClient,
    selector: &Selector,
) -> Result<(Vec<v1::PodSandbox>, Vec<v1::Container>), CallError> {
    let label_selector = selector.labels();
    let sandboxes = client
        .list_pod_sandbox(Some(v1::PodSandboxFilter {
            label_selector: label_selector.clone(),
            ..Default::default()
        }))
        .await?;
    let containers = client
        .list_containers(Some(v1::ContainerFilter {
            label_selector,
            ..Default::default()
        }))
        .await?;
    Ok((
        sandboxes
            .into_iter()
            .filter(|s| selector.matches(&s.labels))
            .collect(),
        containers
            .into_iter()
            .filter(|c| selector.matches(&c.labels))
            .collect(),
    ))
}

fn sandbox_object(sandbox: &v1::PodSandbox) -> Object {
    Object {
        kind: "sandbox",
        id: sandbox.id.clone(),
        name: sandbox.metadata.as_ref().map_or_else(
            || "no metadata".to_owned(),
            |m| format!("{}/{}", m.namespace, m.name),
        ),
    }
}

fn container_object(container: &v1::Container) -> Object {
    Object {
        kind: "container",
        id: container.id.clone(),
        name: container
            .metadata
            .as_ref()
            .map_or_else(|| "no metadata".to_owned(), |m| m.name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn labels_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[rstest]
    #[case::any_run_matches_any_run_label(None, None, &[(labels::RUN_ID, "a")], true)]
    #[case::any_run_needs_a_run_label(None, None, &[("other", "a")], false)]
    #[case::this_run(Some("a"), None, &[(labels::RUN_ID, "a"), (labels::CASE, "1")], true)]
    #[case::another_run(Some("a"), None, &[(labels::RUN_ID, "b")], false)]
    #[case::this_case(Some("a"), Some(2), &[(labels::RUN_ID, "a"), (labels::CASE, "2")], true)]
    #[case::another_case(Some("a"), Some(2), &[(labels::RUN_ID, "a"), (labels::CASE, "20")], false)]
    fn the_selector_matches_by_the_harness_labels(
        #[case] run_id: Option<&str>,
        #[case] case: Option<usize>,
        #[case] object: &[(&str, &str)],
        #[case] expected: bool,
    ) {
        let selector = Selector {
            run_id: run_id.map(str::to_owned),
            case,
        };
        assert_eq!(selector.matches(&labels_of(object)), expected);
    }
}
