//! `get_pods`: list the runtime's sandboxes and containers and group them into pods, sandboxes by
//! their metadata uid and containers by their pod-uid label, so a container whose sandbox is
//! gone still lands in a pod built from its labels.

use std::collections::{BTreeMap, HashMap};

use super::{
    labels, Container, ContainerState, KubeGenericRuntimeManager, KubeletProfile, ManagerError, Pod,
};
use crate::cri::labels::MANAGED;
use crate::cri::v1;

impl KubeGenericRuntimeManager {
    /// All pods on the runtime (`all`), or only those with ready sandboxes and running
    /// containers. Under the seed's rules only objects carrying `io.kubernetes.managed=true`
    /// count; today's kubelet takes every object listed. Under [`KubeletProfile::Current`] each
    /// pod carries its sandbox's `created_at` and the
    /// pods come newest first, as in today's kubelet (kubelet rules: #grouping-into-pods,
    /// #the-order-of-pods). Ports `GetPods`
    /// (kuberuntime_manager.go, 2016).
    pub async fn get_pods(&self, all: bool) -> Result<Vec<Pod>, ManagerError> {
        let sandbox_filter = (!all).then(|| v1::PodSandboxFilter {
            state: Some(v1::PodSandboxStateValue {
                state: v1::PodSandboxState::SandboxReady.into(),
            }),
            ..Default::default()
        });
        let sandboxes = self.list_sandboxes(sandbox_filter).await?;
        // The seed filtered sandboxes after listing and selected containers by the label;
        // today's kubelet has no managed label and takes everything listed.
        let seed = !self.profile.is_current();
        let sandboxes: Vec<_> = sandboxes
            .into_iter()
            .filter(|s| !seed || labels::is_managed(&s.labels))
            .collect();
        let container_filter = v1::ContainerFilter {
            state: (!all).then(|| v1::ContainerStateValue {
                state: v1::ContainerState::ContainerRunning.into(),
            }),
            label_selector: if seed {
                BTreeMap::from([(MANAGED.to_owned(), "true".to_owned())])
            } else {
                BTreeMap::new()
            },
            ..Default::default()
        };
        let containers = self.list_containers(Some(container_filter)).await?;
        Ok(group_pods(
            &self.runtime_name,
            self.profile,
            &sandboxes,
            &containers,
        ))
    }
}

/// Groups listed sandboxes and containers into pods. The seed grouped through a map, so its order
/// was unspecified (kubelet rules: #upstream-hazards-the-port-decides, item 5); here it is
/// deterministic: pods in order of first appearance
/// (sandboxes, then containers), and within a pod sandboxes and containers in list order.
/// Today's kubelet then gives each pod the `created_at` of its last converted sandbox in list
/// order and sorts the pods newest first, stably, so pods built from containers alone (0) come
/// last in first-appearance order.
pub(crate) fn group_pods(
    runtime_name: &str,
    profile: KubeletProfile,
    sandboxes: &[v1::PodSandbox],
    containers: &[v1::Container],
) -> Vec<Pod> {
    let mut pods: Vec<Pod> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut pod_slot = |uid: &str, name: String, namespace: String| -> usize {
        *index.entry(uid.to_owned()).or_insert_with(|| {
            pods.push(Pod {
                id: uid.to_owned(),
                name,
                namespace,
                ..Default::default()
            });
            pods.len() - 1
        })
    };
    let mut placed_sandboxes = Vec::new();
    for sandbox in sandboxes {
        let Some(metadata) = &sandbox.metadata else {
            tracing::debug!(id = %sandbox.id, "skipping sandbox without metadata");
            continue;
        };
        let slot = pod_slot(
            &metadata.uid,
            metadata.name.clone(),
            metadata.namespace.clone(),
        );
        // A sandbox that does not convert is dropped, but its pod entry stays (the seed's order).
        if let Some(converted) = sandbox_to_container(runtime_name, sandbox) {
            placed_sandboxes.push((slot, sandbox.created_at, converted));
        }
    }
    let mut placed_containers = Vec::new();
    for container in containers {
        if container.metadata.is_none() {
            tracing::debug!(id = %container.id, "skipping container without metadata");
            continue;
        }
        let (uid, name, namespace) = labels::pod_identity(&container.labels);
        let slot = pod_slot(&uid, name, namespace);
        if let Some(converted) = container_to_container(runtime_name, container) {
            placed_containers.push((slot, converted));
        }
    }
    for (slot, created_at, sandbox) in placed_sandboxes {
        if profile.is_current() {
            pods[slot].created_at = created_at;
        }
        pods[slot].sandboxes.push(sandbox);
    }
    for (slot, container) in placed_containers {
        pods[slot].containers.push(container);
    }
    if profile.is_current() {
        pods.sort_by_key(|pod| std::cmp::Reverse(pod.created_at));
    }
    pods
}

/// A listed sandbox as a container-like record; `None` without an id. Ports
/// `sandboxToKubeContainer` (kuberuntime_sandbox.go / helpers.go).
pub(crate) fn sandbox_to_container(
    runtime_name: &str,
    sandbox: &v1::PodSandbox,
) -> Option<Container> {
    if sandbox.id.is_empty() {
        tracing::debug!("skipping sandbox without id");
        return None;
    }
    Some(Container {
        id: super::ContainerId {
            r#type: runtime_name.to_owned(),
            id: sandbox.id.clone(),
        },
        state: ContainerState::from_cri_sandbox(sandbox.state),
        ..Default::default()
    })
}

/// A listed container as the manager's record; `None` without an id or an image. Ports
/// `toKubeContainer` (kuberuntime_container.go / helpers.go).
pub(crate) fn container_to_container(
    runtime_name: &str,
    container: &v1::Container,
) -> Option<Container> {
    let image = container.image.as_ref()?;
    if container.id.is_empty() {
        tracing::debug!("skipping container without id");
        return None;
    }
    Some(Container {
        id: super::ContainerId {
            r#type: runtime_name.to_owned(),
            id: container.id.clone(),
        },
        name: labels::container_name(&container.labels),
        image: image.image.clone(),
        hash: labels::container_hash(&container.annotations),
        state: ContainerState::from_cri_container(container.state),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::labels::{CONTAINER_HASH, CONTAINER_NAME, POD_NAME, POD_NAMESPACE, POD_UID};
    use rstest::rstest;

    use KubeletProfile::{Current, Seed};

    const RUNTIME: &str = "mock";

    fn sandbox(id: &str, uid: &str, state: v1::PodSandboxState) -> v1::PodSandbox {
        v1::PodSandbox {
            id: id.to_owned(),
            metadata: Some(v1::PodSandboxMetadata {
                name: format!("pod-{uid}"),
                uid: uid.to_owned(),
                namespace: "ns".to_owned(),
                attempt: 0,
            }),
            state: state.into(),
            ..Default::default()
        }
    }

    fn container(id: &str, pod_uid: Option<&str>, name: &str) -> v1::Container {
        let mut labels = BTreeMap::from([(CONTAINER_NAME.to_owned(), name.to_owned())]);
        if let Some(uid) = pod_uid {
            labels.insert(POD_UID.to_owned(), uid.to_owned());
            labels.insert(POD_NAME.to_owned(), format!("pod-{uid}"));
            labels.insert(POD_NAMESPACE.to_owned(), "ns".to_owned());
        }
        v1::Container {
            id: id.to_owned(),
            metadata: Some(v1::ContainerMetadata {
                name: name.to_owned(),
                attempt: 0,
            }),
            image: Some(v1::ImageSpec {
                image: "busybox".to_owned(),
                ..Default::default()
            }),
            state: v1::ContainerState::ContainerRunning.into(),
            labels,
            annotations: BTreeMap::from([(CONTAINER_HASH.to_owned(), "1f".to_owned())]),
            ..Default::default()
        }
    }

    /// Each pod as `uid: [sandbox ids] [container ids]`, in output order.
    fn shape(pods: &[Pod]) -> Vec<String> {
        pods.iter()
            .map(|p| {
                let ids = |cs: &[Container]| {
                    cs.iter()
                        .map(|c| c.id.id.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                };
                format!("{}: [{}] [{}]", p.id, ids(&p.sandboxes), ids(&p.containers))
            })
            .collect()
    }

    use v1::PodSandboxState::{SandboxNotready as NotReady, SandboxReady as Ready};

    #[rstest]
    #[case::nothing(vec![], vec![], vec![])]
    #[case::one_pod(
        vec![sandbox("s1", "u1", Ready)],
        vec![container("c1", Some("u1"), "app")],
        vec!["u1: [s1] [c1]"]
    )]
    #[case::two_sandboxes_of_one_pod_in_list_order(
        vec![sandbox("s2", "u1", NotReady), sandbox("s1", "u1", Ready)],
        vec![],
        vec!["u1: [s2,s1] []"]
    )]
    #[case::orphan_container_forms_its_pod(
        vec![sandbox("s1", "u1", Ready)],
        vec![container("c2", Some("u2"), "app"), container("c1", Some("u1"), "app")],
        vec!["u1: [s1] [c1]", "u2: [] [c2]"]
    )]
    #[case::several_pods_in_order_of_first_appearance(
        vec![sandbox("s2", "u2", Ready), sandbox("s1", "u1", Ready)],
        vec![container("c1", Some("u1"), "a"), container("c3", Some("u3"), "a"), container("c2", Some("u2"), "a")],
        vec!["u2: [s2] [c2]", "u1: [s1] [c1]", "u3: [] [c3]"]
    )]
    #[case::container_without_labels_collapses_into_the_empty_uid(
        vec![],
        vec![container("c1", None, "a"), container("c2", None, "b")],
        vec![": [] [c1,c2]"]
    )]
    #[case::sandbox_without_metadata_skipped(
        vec![v1::PodSandbox { metadata: None, ..sandbox("s1", "u1", Ready) }],
        vec![],
        vec![]
    )]
    #[case::container_without_metadata_skipped(
        vec![],
        vec![v1::Container { metadata: None, ..container("c1", Some("u1"), "a") }],
        vec![]
    )]
    #[case::sandbox_without_id_leaves_an_empty_pod(
        vec![sandbox("", "u1", Ready)],
        vec![],
        vec!["u1: [] []"]
    )]
    #[case::container_without_image_leaves_its_pod(
        vec![],
        vec![v1::Container { image: None, ..container("c1", Some("u1"), "a") }],
        vec!["u1: [] []"]
    )]
    #[case::container_without_id_leaves_its_pod(
        vec![],
        vec![container("", Some("u1"), "a")],
        vec!["u1: [] []"]
    )]
    fn group_pods_groups_by_uid_in_first_appearance_order(
        #[case] sandboxes: Vec<v1::PodSandbox>,
        #[case] containers: Vec<v1::Container>,
        #[case] expected: Vec<&str>,
    ) {
        assert_eq!(
            shape(&group_pods(RUNTIME, Seed, &sandboxes, &containers)),
            expected
        );
    }

    fn created(id: &str, uid: &str, created_at: i64) -> v1::PodSandbox {
        v1::PodSandbox {
            created_at,
            ..sandbox(id, uid, Ready)
        }
    }

    /// Ports TestGetPodsSorted (kuberuntime_manager_test.go, modern) and the rules around it:
    /// each pod as `uid@created_at`, in output order.
    #[rstest]
    #[case::seed_keeps_first_appearance_and_no_time(
        Seed,
        vec![created("s0", "u0", 10), created("s1", "u1", 5), created("s2", "u2", 20)],
        vec![],
        vec!["u0@0", "u1@0", "u2@0"]
    )]
    #[case::current_sorts_newest_first(
        Current,
        vec![created("s0", "u0", 10), created("s1", "u1", 5), created("s2", "u2", 20)],
        vec![],
        vec!["u2@20", "u0@10", "u1@5"]
    )]
    #[case::current_takes_the_last_listed_sandbox_not_the_newest(
        Current,
        vec![created("s1", "u1", 30), created("s0", "u1", 7), created("s2", "u2", 9)],
        vec![],
        vec!["u2@9", "u1@7"]
    )]
    #[case::current_puts_pods_of_containers_alone_last_in_appearance_order(
        Current,
        vec![created("s1", "u1", 3)],
        vec![container("c9", Some("u9"), "a"), container("c8", Some("u8"), "a")],
        vec!["u1@3", "u9@0", "u8@0"]
    )]
    #[case::current_keeps_ties_in_appearance_order(
        Current,
        vec![created("s1", "u1", 4), created("s2", "u2", 4)],
        vec![],
        vec!["u1@4", "u2@4"]
    )]
    #[case::current_ignores_a_sandbox_that_does_not_convert(
        Current,
        vec![created("s1", "u1", 4), created("", "u1", 99)],
        vec![],
        vec!["u1@4"]
    )]
    fn pods_carry_and_sort_by_created_at_only_under_today_s_kubelet(
        #[case] profile: KubeletProfile,
        #[case] sandboxes: Vec<v1::PodSandbox>,
        #[case] containers: Vec<v1::Container>,
        #[case] expected: Vec<&str>,
    ) {
        let pods = group_pods(RUNTIME, profile, &sandboxes, &containers);
        let order: Vec<String> = pods
            .iter()
            .map(|p| format!("{}@{}", p.id, p.created_at))
            .collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn orphan_pod_takes_name_and_namespace_from_labels() {
        let pods = group_pods(RUNTIME, Seed, &[], &[container("c1", Some("u9"), "app")]);
        assert_eq!(
            (pods[0].name.as_str(), pods[0].namespace.as_str()),
            ("pod-u9", "ns")
        );
    }

    #[test]
    fn pod_identity_comes_from_the_first_sandbox_seen() {
        let mut other = sandbox("s2", "u1", Ready);
        if let Some(m) = other.metadata.as_mut() {
            m.name = "renamed".to_owned();
        }
        let pods = group_pods(RUNTIME, Seed, &[sandbox("s1", "u1", Ready), other], &[]);
        assert_eq!(pods[0].name, "pod-u1");
    }

    #[rstest]
    #[case::ready(Ready.into(), ContainerState::Running)]
    #[case::not_ready(NotReady.into(), ContainerState::Exited)]
    #[case::out_of_range(7, ContainerState::Unknown)]
    fn sandbox_state_maps_ready_to_running(#[case] state: i32, #[case] expected: ContainerState) {
        let listed = v1::PodSandbox {
            state,
            ..sandbox("s1", "u1", Ready)
        };
        let converted = sandbox_to_container(RUNTIME, &listed).unwrap();
        assert_eq!(converted.state, expected);
        assert_eq!(
            converted.id,
            crate::manager::ContainerId {
                r#type: RUNTIME.to_owned(),
                id: "s1".to_owned()
            }
        );
    }

    #[rstest]
    #[case::created(v1::ContainerState::ContainerCreated.into(), ContainerState::Created)]
    #[case::running(v1::ContainerState::ContainerRunning.into(), ContainerState::Running)]
    #[case::exited(v1::ContainerState::ContainerExited.into(), ContainerState::Exited)]
    #[case::unknown(v1::ContainerState::ContainerUnknown.into(), ContainerState::Unknown)]
    #[case::out_of_range(42, ContainerState::Unknown)]
    fn container_state_maps_one_to_one(#[case] state: i32, #[case] expected: ContainerState) {
        let listed = v1::Container {
            state,
            ..container("c1", Some("u1"), "app")
        };
        assert_eq!(
            container_to_container(RUNTIME, &listed).unwrap().state,
            expected
        );
    }

    #[test]
    fn container_name_comes_from_the_label_not_the_metadata() {
        let mut listed = container("c1", Some("u1"), "from-label");
        if let Some(m) = listed.metadata.as_mut() {
            m.name = "from-metadata".to_owned();
        }
        let converted = container_to_container(RUNTIME, &listed).unwrap();
        assert_eq!(converted.name, "from-label");
        assert_eq!(converted.hash, 0x1f);
        assert_eq!(converted.image, "busybox");
    }
}
