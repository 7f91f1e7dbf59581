//! Small readers over a Kubernetes [`k8s::Pod`] that the whole life cycle needs: restart policy,
//! host namespaces, sidecars, deletion, finding a container spec, the pod's identity. A manifest
//! may leave out almost everything, so each reader says what an absent field means (the API
//! server's default where it has one).

use std::borrow::Cow;

use super::{k8s, ContainerKind};
use crate::cri::v1;

/// A pod's `spec.restartPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RestartPolicy {
    /// Restart every container that stops (the default).
    Always,
    /// Restart only containers that failed (non-zero exit).
    OnFailure,
    /// Never restart a container.
    Never,
}

impl RestartPolicy {
    /// Whether a failed container is restarted: everything but `Never` (the kubelet's
    /// `shouldRestartOnFailure`).
    pub fn restarts_on_failure(self) -> bool {
        self != Self::Never
    }
}

/// The pod's restart policy. Absent reads as `Always`, as the API server defaults it; so does any
/// other value, because the kubelet only ever compares against `Never` and `OnFailure`.
pub fn restart_policy(pod: &k8s::Pod) -> RestartPolicy {
    match spec(pod).and_then(|s| s.restart_policy.as_deref()) {
        Some("Never") => RestartPolicy::Never,
        Some("OnFailure") => RestartPolicy::OnFailure,
        _ => RestartPolicy::Always,
    }
}

/// `spec.hostNetwork` (absent is false).
pub fn host_network(pod: &k8s::Pod) -> bool {
    spec(pod).and_then(|s| s.host_network).unwrap_or(false)
}

/// `spec.hostPID` (absent is false).
pub fn host_pid(pod: &k8s::Pod) -> bool {
    spec(pod).and_then(|s| s.host_pid).unwrap_or(false)
}

/// `spec.hostIPC` (absent is false).
pub fn host_ipc(pod: &k8s::Pod) -> bool {
    spec(pod).and_then(|s| s.host_ipc).unwrap_or(false)
}

/// The network namespace mode the pod's sandbox must have: NODE for a host-network pod, else POD
/// (the kubelet's `NetworkNamespaceForPod`).
pub fn network_namespace_for_pod(pod: &k8s::Pod) -> v1::NamespaceMode {
    if host_network(pod) {
        v1::NamespaceMode::Node
    } else {
        v1::NamespaceMode::Pod
    }
}

/// Applies the API server's defaulting of container resources, which every pod the kubelet
/// sees has had: in each app and init container, a resource with a limit and no request gets
/// the limit as its request (a request written as 0 stays). A manifest as a user writes it has
/// not had it; a kubelet reader that treats an absent request as 0 would otherwise create such
/// a container with the runtime's minimum CPU shares.
pub fn apply_api_defaults(pod: &mut k8s::Pod) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten());
    for container in containers {
        let Some(resources) = container.resources.as_mut() else {
            continue;
        };
        let Some(limits) = resources.limits.as_ref().filter(|l| !l.is_empty()) else {
            continue;
        };
        let requests = resources.requests.get_or_insert_with(Default::default);
        for (name, limit) in limits {
            requests
                .entry(name.clone())
                .or_insert_with(|| limit.clone());
        }
    }
}

/// Whether an init container is a restartable sidecar: its own `restartPolicy` is `Always` (the
/// kubelet's `IsRestartableInitContainer`).
pub fn is_restartable_init_container(container: &k8s::Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// The action of a container restart rule that restarts the whole pod in place.
pub const RESTART_ALL_CONTAINERS: &str = "RestartAllContainers";

/// The first of the container's `restartPolicyRules` whose exit codes match `exit_code` (an
/// `In` rule naming it, a `NotIn` rule not naming it); a rule without exit codes, or with an
/// operator the API does not define, matches nothing. Ports `FindMatchingContainerRestartRule`
/// (pkg/api/v1/pod/util.go).
pub fn matching_restart_rule(
    container: &k8s::Container,
    exit_code: i32,
) -> Option<&k8s::ContainerRestartRule> {
    container
        .restart_policy_rules
        .iter()
        .flatten()
        .find(|rule| {
            let Some(codes) = rule.exit_codes.as_ref() else {
                return false;
            };
            let named = codes.values.iter().flatten().any(|&v| v == exit_code);
            match codes.operator.as_str() {
                "In" => named,
                "NotIn" => !named,
                _ => false,
            }
        })
}

/// Whether an exit with `exit_code` makes the container's rules restart the whole pod (its
/// first matching rule's action is `RestartAllContainers`).
pub fn restarts_all_containers(container: &k8s::Container, exit_code: i32) -> bool {
    matching_restart_rule(container, exit_code).is_some_and(|r| r.action == RESTART_ALL_CONTAINERS)
}

/// Whether a container that exited with `exit_code` restarts, under the `ContainerRestartRules`
/// gate (ports `ContainerShouldRestart`, pkg/api/v1/pod/util.go): a container with its own
/// `restartPolicy` goes by its first matching rule's `Restart` action, else by its own policy;
/// a container without one goes by the pod's policy. A `RestartAllContainers` exit never gets
/// here while that action's gate is on (the pod restarts in place first, see
/// `compute_pod_actions`); with the gate off it counts for nothing and the policy decides.
pub fn container_should_restart(
    container: &k8s::Container,
    pod: &k8s::Pod,
    exit_code: i32,
) -> bool {
    let Some(own) = container.restart_policy.as_deref() else {
        return match restart_policy(pod) {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => exit_code != 0,
            RestartPolicy::Never => false,
        };
    };
    if matching_restart_rule(container, exit_code).is_some_and(|r| r.action == "Restart") {
        return true;
    }
    match own {
        "Never" => false,
        "OnFailure" => exit_code != 0,
        _ => true,
    }
}

/// Whether deletion of the pod was requested (`metadata.deletionTimestamp` is set); the kubelet then
/// restarts none of its containers.
pub fn deletion_requested(pod: &k8s::Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `spec.containers` (empty when the pod has no spec).
pub fn containers(pod: &k8s::Pod) -> &[k8s::Container] {
    spec(pod).map_or(&[], |s| s.containers.as_slice())
}

/// `spec.initContainers`, sidecars included (empty when absent).
pub fn init_containers(pod: &k8s::Pod) -> &[k8s::Container] {
    spec(pod)
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[])
}

/// `spec.ephemeralContainers` (empty when absent).
pub fn ephemeral_containers(pod: &k8s::Pod) -> &[k8s::EphemeralContainer] {
    spec(pod)
        .and_then(|s| s.ephemeral_containers.as_deref())
        .unwrap_or(&[])
}

/// An ephemeral container as a plain container: every common field, without
/// `targetContainerName` (the kubelet's cast of `EphemeralContainerCommon` to `Container`), so
/// hashing, config generation and killing treat all three kinds alike.
pub fn ephemeral_container_common(container: &k8s::EphemeralContainer) -> k8s::Container {
    // Exhaustive on both sides, no `..`: a field k8s-openapi adds to either type must fail to
    // compile here instead of being dropped silently.
    let k8s::EphemeralContainer {
        args,
        command,
        env,
        env_from,
        image,
        image_pull_policy,
        lifecycle,
        liveness_probe,
        name,
        ports,
        readiness_probe,
        resize_policy,
        resources,
        restart_policy,
        restart_policy_rules,
        security_context,
        startup_probe,
        stdin,
        stdin_once,
        target_container_name: _,
        termination_message_path,
        termination_message_policy,
        tty,
        volume_devices,
        volume_mounts,
        working_dir,
    } = container.clone();
    k8s::Container {
        args,
        command,
        env,
        env_from,
        image,
        image_pull_policy,
        lifecycle,
        liveness_probe,
        name,
        ports,
        readiness_probe,
        resize_policy,
        resources,
        restart_policy,
        restart_policy_rules,
        security_context,
        startup_probe,
        stdin,
        stdin_once,
        termination_message_path,
        termination_message_policy,
        tty,
        volume_devices,
        volume_mounts,
        working_dir,
    }
}

/// The spec of the container called `name` in the list `kind` names; an ephemeral container comes
/// back converted by [`ephemeral_container_common`].
pub fn find_container<'a>(
    pod: &'a k8s::Pod,
    name: &str,
    kind: ContainerKind,
) -> Option<Cow<'a, k8s::Container>> {
    match kind {
        ContainerKind::Init => init_containers(pod)
            .iter()
            .find(|c| c.name == name)
            .map(Cow::Borrowed),
        ContainerKind::Regular => containers(pod)
            .iter()
            .find(|c| c.name == name)
            .map(Cow::Borrowed),
        ContainerKind::Ephemeral => ephemeral_containers(pod)
            .iter()
            .find(|c| c.name == name)
            .map(|c| Cow::Owned(ephemeral_container_common(c))),
    }
}

/// `metadata.uid` ("" when absent).
pub fn uid(pod: &k8s::Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

/// `metadata.name` ("" when absent).
pub fn name(pod: &k8s::Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("")
}

/// `metadata.namespace`; absent or empty reads as `default`, where the API server would have put
/// the pod.
pub fn namespace(pod: &k8s::Pod) -> &str {
    match pod.metadata.namespace.as_deref() {
        None | Some("") => "default",
        Some(namespace) => namespace,
    }
}

fn spec(pod: &k8s::Pod) -> Option<&k8s::PodSpec> {
    pod.spec.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn parse(yaml: &str) -> k8s::Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const FULL: &str = "
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  uid: 0b3c4d5e
  deletionTimestamp: \"2026-01-02T03:04:05Z\"
spec:
  restartPolicy: OnFailure
  hostNetwork: true
  hostPID: true
  hostIPC: true
  initContainers:
  - name: setup
    image: busybox
  - name: proxy
    image: envoy
    restartPolicy: Always
  containers:
  - name: app
    image: nginx
  ephemeralContainers:
  - name: debug
    image: busybox
    command: [sh]
    targetContainerName: app
";

    const BARE: &str = "
metadata:
  name: bare
spec:
  containers:
  - name: app
";

    #[rstest]
    #[case::absent_is_always(BARE, RestartPolicy::Always)]
    #[case::on_failure(FULL, RestartPolicy::OnFailure)]
    #[case::never("spec: {containers: [], restartPolicy: Never}", RestartPolicy::Never)]
    #[case::always("spec: {containers: [], restartPolicy: Always}", RestartPolicy::Always)]
    #[case::unknown_value_is_always(
        "spec: {containers: [], restartPolicy: Sometimes}",
        RestartPolicy::Always
    )]
    #[case::no_spec_is_always("metadata: {name: x}", RestartPolicy::Always)]
    fn restart_policy_defaults_to_always(#[case] yaml: &str, #[case] expected: RestartPolicy) {
        assert_eq!(restart_policy(&parse(yaml)), expected);
    }

    #[rstest]
    #[case::always(RestartPolicy::Always, true)]
    #[case::on_failure(RestartPolicy::OnFailure, true)]
    #[case::never(RestartPolicy::Never, false)]
    fn only_never_stops_restarts_on_failure(#[case] policy: RestartPolicy, #[case] expected: bool) {
        assert_eq!(policy.restarts_on_failure(), expected);
    }

    #[test]
    fn host_namespaces_are_read_from_the_spec() {
        let pod = parse(FULL);
        assert!(host_network(&pod) && host_pid(&pod) && host_ipc(&pod));
        assert_eq!(network_namespace_for_pod(&pod), v1::NamespaceMode::Node);
    }

    #[test]
    fn host_namespaces_default_to_the_pods_own() {
        let pod = parse(BARE);
        assert!(!host_network(&pod) && !host_pid(&pod) && !host_ipc(&pod));
        assert_eq!(network_namespace_for_pod(&pod), v1::NamespaceMode::Pod);
    }

    #[test]
    fn only_an_init_container_with_restart_policy_always_is_a_sidecar() {
        let pod = parse(FULL);
        let sidecars: Vec<bool> = init_containers(&pod)
            .iter()
            .map(is_restartable_init_container)
            .collect();
        assert_eq!(sidecars, [false, true]);
    }

    #[rstest]
    #[case::timestamp_set(FULL, true)]
    #[case::timestamp_absent(BARE, false)]
    fn deletion_is_requested_by_the_deletion_timestamp(#[case] yaml: &str, #[case] expected: bool) {
        assert_eq!(deletion_requested(&parse(yaml)), expected);
    }

    #[rstest]
    #[case::init("setup", ContainerKind::Init, Some("busybox"))]
    #[case::sidecar("proxy", ContainerKind::Init, Some("envoy"))]
    #[case::regular("app", ContainerKind::Regular, Some("nginx"))]
    #[case::ephemeral("debug", ContainerKind::Ephemeral, Some("busybox"))]
    #[case::wrong_list("app", ContainerKind::Init, None)]
    #[case::unknown_name("nope", ContainerKind::Regular, None)]
    fn find_container_looks_in_the_list_the_kind_names(
        #[case] name: &str,
        #[case] kind: ContainerKind,
        #[case] image: Option<&str>,
    ) {
        let pod = parse(FULL);
        let found = find_container(&pod, name, kind);
        assert_eq!(found.as_ref().and_then(|c| c.image.as_deref()), image);
        if let Some(found) = found {
            assert_eq!(found.name, name);
        }
    }

    #[test]
    fn an_ephemeral_container_keeps_its_common_fields_and_drops_its_target() {
        let pod = parse(FULL);
        let common = ephemeral_container_common(&ephemeral_containers(&pod)[0]);
        let expected = k8s::Container {
            name: "debug".to_owned(),
            image: Some("busybox".to_owned()),
            command: Some(vec!["sh".to_owned()]),
            ..Default::default()
        };
        assert_eq!(common, expected);
    }

    #[test]
    fn identity_is_read_from_the_metadata() {
        let pod = parse(FULL);
        assert_eq!(
            (uid(&pod), name(&pod), namespace(&pod)),
            ("0b3c4d5e", "web", "shop")
        );
    }

    #[test]
    fn absent_identity_reads_as_empty_in_the_default_namespace() {
        let pod = parse(BARE);
        assert_eq!(
            (uid(&pod), name(&pod), namespace(&pod)),
            ("", "bare", "default")
        );
    }

    #[test]
    fn container_lists_are_empty_without_a_spec() {
        let pod = parse("metadata: {name: x}");
        assert!(containers(&pod).is_empty());
        assert!(init_containers(&pod).is_empty());
        assert!(ephemeral_containers(&pod).is_empty());
    }

    #[test]
    fn a_limit_without_a_request_gets_it_as_the_api_server_defaults_it() {
        let mut pod = parse(
            "
metadata: {name: x}
spec:
  initContainers:
    - name: init
      resources: {limits: {cpu: 250m}}
  containers:
    - name: limits-only
      resources: {limits: {cpu: 500m, memory: 64Mi}}
    - name: some-requests
      resources: {requests: {cpu: '0', memory: 32Mi}, limits: {cpu: '1', memory: 64Mi, ephemeral-storage: 1Gi}}
    - name: requests-only
      resources: {requests: {cpu: 100m}}
    - name: none
",
        );
        apply_api_defaults(&mut pod);
        let requests = |container: &k8s::Container| -> Vec<(String, String)> {
            let resources = container.resources.as_ref();
            let list = resources.and_then(|r| r.requests.as_ref());
            list.into_iter()
                .flatten()
                .map(|(name, q)| (name.clone(), q.0.clone()))
                .collect()
        };
        let pairs = |items: &[(&str, &str)]| -> Vec<(String, String)> {
            items
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect()
        };
        let apps = containers(&pod);
        assert_eq!(
            requests(&apps[0]),
            pairs(&[("cpu", "500m"), ("memory", "64Mi")])
        );
        // A written request stays, a zero one too; what only has a limit gets it.
        assert_eq!(
            requests(&apps[1]),
            pairs(&[
                ("cpu", "0"),
                ("ephemeral-storage", "1Gi"),
                ("memory", "32Mi")
            ])
        );
        assert_eq!(requests(&apps[2]), pairs(&[("cpu", "100m")]));
        assert!(apps[3].resources.is_none());
        assert_eq!(
            requests(&init_containers(&pod)[0]),
            pairs(&[("cpu", "250m")])
        );
    }
}
