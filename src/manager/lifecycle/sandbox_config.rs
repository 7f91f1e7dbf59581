//! The sandbox config the kubelet sends with RunPodSandbox, generated from a Pod manifest:
//! metadata with the attempt, labels and annotations, hostname, DNS, the pod log directory under
//! the harness's log root, port mappings and the Linux security context.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::k8s;
use super::options::SyncOptions;
use crate::cri::labels::{MANAGED, POD_NAME, POD_NAMESPACE, POD_UID};
use crate::cri::v1;

/// Why a sandbox config could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxConfigError {
    /// `spec.hostname` is not a DNS-1123 label.
    #[error("pod hostname {hostname:?} is not a valid DNS-1123 label")]
    InvalidHostname {
        /// The hostname as given.
        hostname: String,
    },
    /// `spec.dnsPolicy` is none of the four the API knows.
    #[error("pod DNS policy {policy:?} is not one of ClusterFirst, ClusterFirstWithHostNet, Default, None")]
    InvalidDnsPolicy {
        /// The policy as given.
        policy: String,
    },
}

/// Nameservers a resolver keeps (`validation.MaxDNSNameservers`).
const MAX_DNS_NAMESERVERS: usize = 3;
/// Search domains a resolver keeps (`validation.MaxDNSSearchPaths`).
const MAX_DNS_SEARCH_PATHS: usize = 32;
/// Length of the whole search line (`validation.MaxDNSSearchListChars`).
const MAX_DNS_SEARCH_LIST_CHARS: usize = 2048;
/// Longest single search domain (`DNS1123SubdomainMaxLength`).
const MAX_DNS_SEARCH_CHARS: usize = 253;

/// The sandbox config for `pod` at `attempt`. Ports `generatePodSandboxConfig` and
/// `generatePodSandboxLinuxConfig` (kuberuntime_sandbox.go, today's kubelet). Sysctl names are
/// written with dots here, which SyncPod does before it in the kubelet. Left out: cgroup parent
/// (empty: the harness runs no pod cgroups), pod overhead and resources, user namespaces,
/// SELinux change policy and Windows.
pub fn generate_pod_sandbox_config(
    pod: &k8s::Pod,
    attempt: u32,
    options: &SyncOptions,
) -> Result<v1::PodSandboxConfig, SandboxConfigError> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let host_network = is_host_network(pod);
    let (name, namespace, uid) = identity(pod);
    let hostname = if host_network {
        // The runtime gives a host-network sandbox the node's name.
        String::new()
    } else {
        pod_hostname(pod)?
    };
    let port_mappings = spec
        .map(|s| s.containers.iter().flat_map(make_port_mappings).collect())
        .unwrap_or_default();
    Ok(v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: name.to_owned(),
            uid: uid.to_owned(),
            namespace: namespace.to_owned(),
            attempt,
        }),
        hostname,
        log_directory: build_pod_logs_directory(&options.pod_logs_root, namespace, name, uid)
            .to_string_lossy()
            .into_owned(),
        dns_config: Some(pod_dns(pod, options.resolver.as_ref())?),
        port_mappings,
        labels: pod_labels(pod, options),
        annotations: meta.annotations.clone().unwrap_or_default(),
        linux: Some(linux_config(pod)),
        windows: None,
    })
}

/// `(name, namespace, uid)` of the pod, "" for each one missing.
pub(crate) fn identity(pod: &k8s::Pod) -> (&str, &str, &str) {
    let meta = &pod.metadata;
    (
        meta.name.as_deref().unwrap_or_default(),
        meta.namespace.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default(),
    )
}

/// The pod as the kubelet names it in messages: `name_namespace(uid)` (`format.Pod`).
pub(crate) fn format_pod(pod: &k8s::Pod) -> String {
    let (name, namespace, uid) = identity(pod);
    format!("{name}_{namespace}({uid})")
}

/// Whether the pod uses the node's network namespace.
pub(crate) fn is_host_network(pod: &k8s::Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
}

/// The sandbox's labels: the pod's own, then the kubelet's pod name, namespace and uid, then
/// (the seed's rules) `io.kubernetes.managed=true`, then the harness's extra labels. Ports
/// `newPodLabels` (labels.go). The seed's readers list only what carries the managed label;
/// today's kubelet neither writes nor reads it.
pub fn pod_labels(pod: &k8s::Pod, options: &SyncOptions) -> BTreeMap<String, String> {
    let (name, namespace, uid) = identity(pod);
    let mut labels = pod.metadata.labels.clone().unwrap_or_default();
    labels.insert(POD_NAME.to_owned(), name.to_owned());
    labels.insert(POD_NAMESPACE.to_owned(), namespace.to_owned());
    labels.insert(POD_UID.to_owned(), uid.to_owned());
    if !options.kubelet.is_current() {
        labels.insert(MANAGED.to_owned(), "true".to_owned());
    }
    labels.extend(options.extra_labels.clone());
    labels
}

/// `<root>/<namespace>_<name>_<uid>`. Ports `BuildPodLogsDirectory` (helpers.go).
pub fn build_pod_logs_directory(root: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    root.join(format!("{namespace}_{name}_{uid}"))
}

/// `spec.hostname` when set (it must be a DNS-1123 label), else the pod name cut to 63
/// characters without a trailing `-` or `.`. Ports `GeneratePodHostNameAndDomain` and
/// `truncatePodHostnameIfNeeded`; the domain is not computed: it only matters with
/// `setHostnameAsFQDN`, which needs the cluster domain the harness does not have.
fn pod_hostname(pod: &k8s::Pod) -> Result<String, SandboxConfigError> {
    let given = pod.spec.as_ref().and_then(|s| s.hostname.as_deref());
    if let Some(hostname) = given.filter(|h| !h.is_empty()) {
        if !is_dns1123_label(hostname) {
            return Err(SandboxConfigError::InvalidHostname {
                hostname: hostname.to_owned(),
            });
        }
        return Ok(hostname.to_owned());
    }
    let name = identity(pod).0;
    let cut = name.get(..63).unwrap_or(name);
    Ok(cut.trim_end_matches(['-', '.']).to_owned())
}

fn is_dns1123_label(text: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    text.len() <= 63
        && text.starts_with(alnum)
        && text.ends_with(alnum)
        && text.chars().all(|c| alnum(c) || c == '-')
}

/// The pod's DNS config. Ports `GetPodDNS` (kubelet/network/dns): `None` starts empty; every
/// other policy ends at the node's resolver settings (`resolver`, the kubelet's
/// `--resolv-conf`), because ClusterFirst needs a cluster DNS service the harness does not have
/// and the kubelet itself falls back to Default then (its MissingClusterDNS event). Without
/// `resolver` the kubelet's answer for an empty `--resolv-conf` applies: nameserver 127.0.0.1
/// and search ".". Then `spec.dnsConfig` is appended and the result cut to the resolver limits.
fn pod_dns(
    pod: &k8s::Pod,
    resolver: Option<&v1::DnsConfig>,
) -> Result<v1::DnsConfig, SandboxConfigError> {
    let spec = pod.spec.as_ref();
    let policy = spec
        .and_then(|s| s.dns_policy.as_deref())
        .filter(|p| !p.is_empty())
        .unwrap_or("ClusterFirst");
    let mut config = match policy {
        "None" => v1::DnsConfig::default(),
        "ClusterFirst" | "ClusterFirstWithHostNet" | "Default" => match resolver {
            Some(resolver) => resolver.clone(),
            None => v1::DnsConfig {
                servers: vec!["127.0.0.1".to_owned()],
                searches: vec![".".to_owned()],
                options: Vec::new(),
            },
        },
        other => {
            return Err(SandboxConfigError::InvalidDnsPolicy {
                policy: other.to_owned(),
            })
        }
    };
    if let Some(extra) = spec.and_then(|s| s.dns_config.as_ref()) {
        config.servers = without_duplicates(
            config
                .servers
                .into_iter()
                .chain(extra.nameservers.iter().flatten().cloned()),
        );
        config.searches = without_duplicates(
            config
                .searches
                .into_iter()
                .chain(extra.searches.iter().flatten().cloned()),
        );
        config.options = merge_dns_options(&config.options, extra.options.iter().flatten());
    }
    config.servers.truncate(MAX_DNS_NAMESERVERS);
    config.searches = searches_within_limits(config.searches);
    Ok(config)
}

fn without_duplicates(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    items.filter(|item| seen.insert(item.clone())).collect()
}

/// Existing `name[:value]` options with the pod's, the pod's winning by name. Ports
/// `mergeDNSOptions`; the kubelet's order is a map's, here it is by name.
fn merge_dns_options<'a>(
    existing: &[String],
    extra: impl Iterator<Item = &'a k8s::PodDNSConfigOption>,
) -> Vec<String> {
    let mut merged: BTreeMap<String, String> = existing
        .iter()
        .map(|option| match option.split_once(':') {
            Some((name, value)) => (name.to_owned(), value.to_owned()),
            None => (option.clone(), String::new()),
        })
        .collect();
    for option in extra {
        let name = option.name.clone().unwrap_or_default();
        merged.insert(name, option.value.clone().unwrap_or_default());
    }
    merged
        .into_iter()
        .map(|(name, value)| {
            if value.is_empty() {
                name
            } else {
                format!("{name}:{value}")
            }
        })
        .collect()
}

/// At most 32 search domains, none longer than 253 characters, the line at most 2048
/// characters (cut from the end). Ports `formDNSSearchFitsLimits`.
fn searches_within_limits(mut searches: Vec<String>) -> Vec<String> {
    searches.truncate(MAX_DNS_SEARCH_PATHS);
    searches.retain(|s| s.len() <= MAX_DNS_SEARCH_CHARS);
    while searches.len() > 1 && searches.join(" ").len() > MAX_DNS_SEARCH_LIST_CHARS {
        searches.pop();
    }
    searches
}

/// One container's ports as CRI port mappings (every port, with host port 0 when none is
/// asked for), a port name used twice kept once. Ports `MakePortMappings` (kubecontainer).
fn make_port_mappings(container: &k8s::Container) -> Vec<v1::PortMapping> {
    let mut names = std::collections::BTreeSet::new();
    let mut mappings = Vec::new();
    for port in container.ports.iter().flatten() {
        let host_ip = port.host_ip.clone().unwrap_or_default();
        let protocol = port.protocol.as_deref().unwrap_or("TCP");
        let family = if host_ip.is_empty() {
            "any"
        } else if host_ip.contains(':') {
            "v6"
        } else {
            "v4"
        };
        let host_port = port.host_port.unwrap_or(0);
        let name = port
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| {
                format!(
                    "{family}-{protocol}-{host_ip}:{}:{host_port}",
                    port.container_port
                )
            });
        if !names.insert(name) {
            tracing::info!(container = %container.name, "port name defined more than once");
            continue;
        }
        mappings.push(v1::PortMapping {
            protocol: runtime_protocol(protocol).into(),
            container_port: port.container_port,
            host_port,
            host_ip,
        });
    }
    mappings
}

/// Ports `toRuntimeProtocol`: TCP unless UDP or SCTP.
fn runtime_protocol(protocol: &str) -> v1::Protocol {
    match protocol {
        "UDP" => v1::Protocol::Udp,
        "SCTP" => v1::Protocol::Sctp,
        _ => v1::Protocol::Tcp,
    }
}

/// The pod's namespaces: network and IPC of the node or the pod, PID of the node, the pod
/// (`shareProcessNamespace`) or each container. Ports `NamespacesForPod` (kuberuntime util).
pub(crate) fn namespaces_for_pod(pod: &k8s::Pod) -> v1::NamespaceOption {
    let spec = pod.spec.as_ref();
    let flag = |f: fn(&k8s::PodSpec) -> Option<bool>| spec.and_then(f).unwrap_or(false);
    let node_or_pod = |on: bool| {
        if on {
            v1::NamespaceMode::Node
        } else {
            v1::NamespaceMode::Pod
        }
    };
    let pid = if flag(|s| s.host_pid) {
        v1::NamespaceMode::Node
    } else if flag(|s| s.share_process_namespace) {
        v1::NamespaceMode::Pod
    } else {
        v1::NamespaceMode::Container
    };
    v1::NamespaceOption {
        network: node_or_pod(flag(|s| s.host_network)).into(),
        pid: pid.into(),
        ipc: node_or_pod(flag(|s| s.host_ipc)).into(),
        ..Default::default()
    }
}

/// Whether any container of the pod (init, regular or ephemeral) is privileged. Ports
/// `HasPrivilegedContainer`.
fn has_privileged_container(pod: &k8s::Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    let privileged =
        |sc: Option<&k8s::SecurityContext>| sc.and_then(|s| s.privileged) == Some(true);
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| privileged(c.security_context.as_ref()))
        || spec
            .ephemeral_containers
            .iter()
            .flatten()
            .any(|c| privileged(c.security_context.as_ref()))
}

/// A sysctl name with `/` as its separator rewritten with dots (the `/` and `.` swap places).
/// Ports `ConvertSysctlVariableToDotsSeparator` (util/sysctl).
pub fn sysctl_name_with_dots(name: &str) -> String {
    let first_separator = name.find(['.', '/']);
    match first_separator.map(|i| &name[i..=i]) {
        Some("/") => name
            .chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                other => other,
            })
            .collect(),
        _ => name.to_owned(),
    }
}

/// The Linux part: the seccomp profile forced to RuntimeDefault (the kubelet does so for every
/// sandbox, so a pod's least-privileged profile can still apply to its containers), privileged
/// if any container is, sysctls, the pod's user, group, supplemental groups (fsGroup first),
/// SELinux options and namespaces. A pod without `securityContext` reads as an empty one, as
/// the API server defaults it.
fn linux_config(pod: &k8s::Pod) -> v1::LinuxPodSandboxConfig {
    let empty = k8s::PodSecurityContext::default();
    let sc = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.as_ref())
        .unwrap_or(&empty);
    let sysctls = sc
        .sysctls
        .iter()
        .flatten()
        .map(|s| (sysctl_name_with_dots(&s.name), s.value.clone()))
        .collect();
    let supplemental_groups = sc
        .fs_group
        .into_iter()
        .chain(sc.supplemental_groups.iter().flatten().copied())
        .collect();
    v1::LinuxPodSandboxConfig {
        cgroup_parent: String::new(),
        security_context: Some(v1::LinuxSandboxSecurityContext {
            namespace_options: Some(namespaces_for_pod(pod)),
            selinux_options: sc.se_linux_options.as_ref().map(selinux_option),
            run_as_user: sc.run_as_user.map(|value| v1::Int64Value { value }),
            run_as_group: sc.run_as_group.map(|value| v1::Int64Value { value }),
            supplemental_groups,
            privileged: has_privileged_container(pod),
            seccomp: Some(v1::SecurityProfile {
                profile_type: v1::security_profile::ProfileType::RuntimeDefault.into(),
                localhost_ref: String::new(),
            }),
            ..Default::default()
        }),
        sysctls,
        ..Default::default()
    }
}

/// Ports `convertToRuntimeSELinuxOption`.
pub(crate) fn selinux_option(options: &k8s::SELinuxOptions) -> v1::SeLinuxOption {
    v1::SeLinuxOption {
        user: options.user.clone().unwrap_or_default(),
        role: options.role.clone().unwrap_or_default(),
        r#type: options.type_.clone().unwrap_or_default(),
        level: options.level.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn options() -> SyncOptions {
        SyncOptions::new("/tmp/h/logs", "/tmp/h/volumes")
    }

    fn pod(yaml: &str) -> k8s::Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const WEB: &str = "
metadata:
  name: web
  namespace: prod
  uid: u-1
  labels: {app: web}
  annotations: {note: kept}
spec:
  containers:
  - name: app
    image: busybox
    ports:
    - {containerPort: 80, hostPort: 8080}
    - {containerPort: 53, protocol: UDP, name: dns}
  - name: side
    image: busybox
";

    #[test]
    fn metadata_carries_the_attempt_and_the_log_directory_joins_namespace_name_uid() {
        let config = generate_pod_sandbox_config(&pod(WEB), 3, &options()).unwrap();
        let metadata = config.metadata.unwrap();
        assert_eq!(
            (
                metadata.name,
                metadata.namespace,
                metadata.uid,
                metadata.attempt
            ),
            ("web".into(), "prod".into(), "u-1".into(), 3)
        );
        assert_eq!(config.log_directory, "/tmp/h/logs/prod_web_u-1");
        assert_eq!(config.hostname, "web");
    }

    #[test]
    fn labels_are_the_pods_plus_the_kubelets_and_annotations_the_pods() {
        let mut options = options();
        options
            .extra_labels
            .insert("cri-harness.io/run-id".into(), "r1".into());
        let config = generate_pod_sandbox_config(&pod(WEB), 0, &options).unwrap();
        let labels: Vec<_> = config
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            labels,
            [
                "app=web",
                "cri-harness.io/run-id=r1",
                "io.kubernetes.managed=true",
                "io.kubernetes.pod.name=web",
                "io.kubernetes.pod.namespace=prod",
                "io.kubernetes.pod.uid=u-1",
            ]
        );
        assert_eq!(
            config.annotations,
            BTreeMap::from([("note".into(), "kept".into())])
        );
    }

    #[test]
    fn todays_kubelet_writes_the_three_pod_labels_and_no_managed_label() {
        // TestGeneratePodSandboxConfig: exactly the pod's name, namespace and uid labels.
        let mut options = options();
        options.kubelet = crate::manager::KubeletProfile::Current;
        let mut pod = pod(WEB);
        pod.metadata.labels = None;
        let config = generate_pod_sandbox_config(&pod, 0, &options).unwrap();
        let keys: Vec<_> = config.labels.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "io.kubernetes.pod.name",
                "io.kubernetes.pod.namespace",
                "io.kubernetes.pod.uid"
            ]
        );
    }

    #[test]
    fn every_container_port_becomes_a_mapping() {
        let config = generate_pod_sandbox_config(&pod(WEB), 0, &options()).unwrap();
        let mappings: Vec<_> = config
            .port_mappings
            .iter()
            .map(|m| (m.protocol(), m.container_port, m.host_port))
            .collect();
        assert_eq!(
            mappings,
            [(v1::Protocol::Tcp, 80, 8080), (v1::Protocol::Udp, 53, 0)]
        );
    }

    #[test]
    fn a_port_name_given_twice_is_mapped_once() {
        let config = generate_pod_sandbox_config(
            &pod("
metadata: {name: p, namespace: n, uid: u}
spec:
  containers:
  - name: a
    ports: [{containerPort: 80, name: web}, {containerPort: 81, name: web}]
"),
            0,
            &options(),
        )
        .unwrap();
        assert_eq!(config.port_mappings.len(), 1);
    }

    #[test]
    fn the_linux_part_forces_runtime_default_seccomp_and_reads_the_pod_security_context() {
        let config = generate_pod_sandbox_config(
            &pod("
metadata: {name: p, namespace: n, uid: u}
spec:
  hostPID: true
  shareProcessNamespace: true
  securityContext:
    runAsUser: 1000
    runAsGroup: 2000
    fsGroup: 3000
    supplementalGroups: [4000, 5000]
    sysctls:
    - {name: kernel/shm_rmid_forced, value: '1'}
    - {name: net.ipv4.ip_unprivileged_port_start, value: '0'}
  containers:
  - name: a
    securityContext: {privileged: true}
"),
            0,
            &options(),
        )
        .unwrap();
        let linux = config.linux.unwrap();
        assert_eq!(linux.cgroup_parent, "");
        assert_eq!(
            linux.sysctls,
            BTreeMap::from([
                ("kernel.shm_rmid_forced".into(), "1".into()),
                ("net.ipv4.ip_unprivileged_port_start".into(), "0".into()),
            ])
        );
        let sc = linux.security_context.unwrap();
        assert_eq!(
            sc.seccomp.unwrap().profile_type(),
            v1::security_profile::ProfileType::RuntimeDefault
        );
        assert!(sc.privileged);
        assert_eq!(sc.run_as_user.map(|u| u.value), Some(1000));
        assert_eq!(sc.run_as_group.map(|g| g.value), Some(2000));
        assert_eq!(sc.supplemental_groups, [3000, 4000, 5000]);
        let ns = sc.namespace_options.unwrap();
        assert_eq!(
            (ns.network(), ns.pid(), ns.ipc()),
            (
                v1::NamespaceMode::Pod,
                v1::NamespaceMode::Node,
                v1::NamespaceMode::Pod
            )
        );
    }

    #[rstest]
    #[case::nothing_shared("{}", (v1::NamespaceMode::Pod, v1::NamespaceMode::Container, v1::NamespaceMode::Pod))]
    #[case::host_network("{hostNetwork: true}", (v1::NamespaceMode::Node, v1::NamespaceMode::Container, v1::NamespaceMode::Pod))]
    #[case::host_ipc("{hostIPC: true}", (v1::NamespaceMode::Pod, v1::NamespaceMode::Container, v1::NamespaceMode::Node))]
    #[case::shared_pid("{shareProcessNamespace: true}", (v1::NamespaceMode::Pod, v1::NamespaceMode::Pod, v1::NamespaceMode::Pod))]
    fn namespaces_follow_the_pods_host_flags(
        #[case] spec: &str,
        #[case] expected: (v1::NamespaceMode, v1::NamespaceMode, v1::NamespaceMode),
    ) {
        let mut spec: k8s::PodSpec = serde_saphyr::from_str(spec).unwrap();
        spec.containers = vec![];
        let pod = k8s::Pod {
            spec: Some(spec),
            ..Default::default()
        };
        let ns = namespaces_for_pod(&pod);
        assert_eq!((ns.network(), ns.pid(), ns.ipc()), expected);
    }

    #[rstest]
    #[case::slashes("kernel/shm_rmid_forced", "kernel.shm_rmid_forced")]
    #[case::dots_kept("net.ipv4.conf.all.forwarding", "net.ipv4.conf.all.forwarding")]
    #[case::slash_first_swaps_a_dot_in_a_part(
        "net/ipv4/conf/eno2.100/rp_filter",
        "net.ipv4.conf.eno2/100.rp_filter"
    )]
    #[case::dot_first_keeps_a_slash(
        "net.ipv4.conf.eno2/100.rp_filter",
        "net.ipv4.conf.eno2/100.rp_filter"
    )]
    #[case::no_separator("kernel", "kernel")]
    fn sysctl_names_are_written_with_dots(#[case] name: &str, #[case] expected: &str) {
        assert_eq!(sysctl_name_with_dots(name), expected);
    }

    #[rstest]
    #[case::spec_hostname("{hostname: my-host, containers: []}", "web", Ok("my-host"))]
    #[case::pod_name("{containers: []}", "web", Ok("web"))]
    #[case::long_name_cut_and_trimmed(
        "{containers: []}",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbb",
        Ok("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
    )]
    #[case::subdomain_ignored("{subdomain: svc, containers: []}", "web", Ok("web"))]
    #[case::host_network_leaves_it_to_the_runtime(
        "{hostNetwork: true, hostname: x, containers: []}",
        "web",
        Ok("")
    )]
    #[case::invalid_hostname("{hostname: My_Host, containers: []}", "web", Err(()))]
    fn hostname_is_the_spec_hostname_else_the_pod_name(
        #[case] spec: &str,
        #[case] name: &str,
        #[case] expected: Result<&str, ()>,
    ) {
        let pod = k8s::Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            spec: Some(serde_saphyr::from_str(spec).unwrap()),
            ..Default::default()
        };
        let got = generate_pod_sandbox_config(&pod, 0, &options())
            .map(|c| c.hostname)
            .map_err(|_| ());
        assert_eq!(got.as_deref().map_err(|_| ()), expected);
    }

    fn dns(
        spec: &str,
        resolver: Option<&v1::DnsConfig>,
    ) -> Result<v1::DnsConfig, SandboxConfigError> {
        let pod = k8s::Pod {
            spec: Some(serde_saphyr::from_str(spec).unwrap()),
            ..Default::default()
        };
        pod_dns(&pod, resolver)
    }

    fn dns_config(servers: &[&str], searches: &[&str], options: &[&str]) -> v1::DnsConfig {
        let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        v1::DnsConfig {
            servers: owned(servers),
            searches: owned(searches),
            options: owned(options),
        }
    }

    #[rstest]
    #[case::cluster_first_falls_back_to_the_empty_resolver("{containers: []}", dns_config(&["127.0.0.1"], &["."], &[]))]
    #[case::default_policy("{dnsPolicy: Default, containers: []}", dns_config(&["127.0.0.1"], &["."], &[]))]
    #[case::none_policy_is_empty("{dnsPolicy: None, containers: []}", dns_config(&[], &[], &[]))]
    #[case::none_with_pod_config(
        "{dnsPolicy: None, dnsConfig: {nameservers: [1.1.1.1], searches: [a.example], options: [{name: ndots, value: '2'}, {name: edns0}]}, containers: []}",
        dns_config(&["1.1.1.1"], &["a.example"], &["edns0", "ndots:2"])
    )]
    #[case::default_plus_pod_config_without_duplicates(
        "{dnsPolicy: Default, dnsConfig: {nameservers: [127.0.0.1, 8.8.8.8], searches: [.]}, containers: []}",
        dns_config(&["127.0.0.1", "8.8.8.8"], &["."], &[])
    )]
    #[case::at_most_three_nameservers(
        "{dnsPolicy: None, dnsConfig: {nameservers: [1.0.0.1, 1.0.0.2, 1.0.0.3, 1.0.0.4]}, containers: []}",
        dns_config(&["1.0.0.1", "1.0.0.2", "1.0.0.3"], &[], &[])
    )]
    fn dns_follows_the_policy_then_appends_the_pods_config(
        #[case] spec: &str,
        #[case] expected: v1::DnsConfig,
    ) {
        assert_eq!(dns(spec, None).unwrap(), expected);
    }

    #[test]
    fn default_policy_inherits_the_given_resolver_and_pod_options_win_by_name() {
        let resolver = dns_config(&["10.0.0.10"], &["corp.example"], &["ndots:5", "rotate"]);
        let got = dns(
            "{dnsConfig: {options: [{name: ndots, value: '1'}]}, containers: []}",
            Some(&resolver),
        )
        .unwrap();
        assert_eq!(
            got,
            dns_config(&["10.0.0.10"], &["corp.example"], &["ndots:1", "rotate"])
        );
    }

    #[test]
    fn an_unknown_dns_policy_is_refused() {
        let err = dns("{dnsPolicy: Bogus, containers: []}", None).unwrap_err();
        assert_eq!(
            err,
            SandboxConfigError::InvalidDnsPolicy {
                policy: "Bogus".into()
            }
        );
    }

    #[test]
    fn search_domains_are_cut_to_the_resolver_limits() {
        let long = "x".repeat(254);
        let mut searches: Vec<String> = (0..40).map(|i| format!("d{i}.example")).collect();
        searches.insert(0, long);
        let kept = searches_within_limits(searches);
        assert_eq!(kept.len(), 31, "32 kept, then the over-long one dropped");
        assert_eq!(kept[0], "d0.example");
    }

    // TestNamespacesForPod (kuberuntime/util/util_test.go), row by row. Upstream's nil pod has no
    // counterpart in Rust; a pod without a spec is the closest and must read the same.
    #[rstest]
    #[case::nil_pod_default_v1_namespaces(None, (v1::NamespaceMode::Pod, v1::NamespaceMode::Pod, v1::NamespaceMode::Container))]
    #[case::v1_pod_default_namespaces(Some("{}"), (v1::NamespaceMode::Pod, v1::NamespaceMode::Pod, v1::NamespaceMode::Container))]
    #[case::host_namespaces(
        Some("{hostIPC: true, hostNetwork: true, hostPID: true}"),
        (v1::NamespaceMode::Node, v1::NamespaceMode::Node, v1::NamespaceMode::Node)
    )]
    #[case::shared_process_namespace_feature_enabled(
        Some("{shareProcessNamespace: true}"),
        (v1::NamespaceMode::Pod, v1::NamespaceMode::Pod, v1::NamespaceMode::Pod)
    )]
    #[case::shared_process_namespace_redundant_flag_feature_enabled(
        Some("{shareProcessNamespace: false}"),
        (v1::NamespaceMode::Pod, v1::NamespaceMode::Pod, v1::NamespaceMode::Container)
    )]
    fn namespaces_for_pod_matches_test_namespaces_for_pod(
        #[case] spec: Option<&str>,
        #[case] expected: (v1::NamespaceMode, v1::NamespaceMode, v1::NamespaceMode),
    ) {
        let pod = k8s::Pod {
            spec: spec.map(|spec| {
                let mut spec: k8s::PodSpec = serde_saphyr::from_str(spec).unwrap();
                spec.containers = vec![];
                spec
            }),
            ..Default::default()
        };
        let ns = namespaces_for_pod(&pod);
        // (ipc, network, pid), the order upstream's expected NamespaceOption lists them in.
        assert_eq!((ns.ipc(), ns.network(), ns.pid()), expected);
    }

    // TestGeneratePodSandboxLinuxConfigSeccomp (kuberuntime_sandbox_test.go), row by row: the
    // sandbox's seccomp profile is RuntimeDefault whatever the pod asks. Upstream's helper drops
    // the annotation arguments; the port sets them, which asks more of the rule.
    #[rstest]
    #[case::no_seccomp_defined_at_pod_level_should_return_runtime_default("{}", "{}")]
    #[case::seccomp_field_defined_at_pod_level_should_not_be_honoured(
        "{}",
        "{securityContext: {seccompProfile: {type: Unconfined}}}"
    )]
    #[case::seccomp_field_defined_at_container_level_should_not_be_honoured(
        "{}",
        "{containers: [{name: foo, securityContext: {seccompProfile: {type: Unconfined}}}]}"
    )]
    #[case::seccomp_annotation_defined_at_pod_level_should_not_be_honoured(
        "{annotations: {seccomp.security.alpha.kubernetes.io/pod: unconfined}}",
        "{}"
    )]
    #[case::seccomp_annotation_defined_at_container_level_should_not_be_honoured(
        "{annotations: {container.seccomp.security.alpha.kubernetes.io/foo: unconfined}}",
        "{}"
    )]
    fn linux_config_matches_test_generate_pod_sandbox_linux_config_seccomp(
        #[case] metadata: &str,
        #[case] spec: &str,
    ) {
        let mut spec: k8s::PodSpec = serde_saphyr::from_str(spec).unwrap();
        if spec.containers.is_empty() {
            spec.containers = vec![k8s::Container {
                name: "foo".to_owned(),
                image: Some("busybox".to_owned()),
                ..Default::default()
            }];
        }
        let pod = k8s::Pod {
            metadata: serde_saphyr::from_str(metadata).unwrap(),
            spec: Some(spec),
            ..Default::default()
        };
        let seccomp = linux_config(&pod)
            .security_context
            .and_then(|sc| sc.seccomp)
            .map(|s| s.profile_type());
        assert_eq!(
            seccomp,
            Some(v1::security_profile::ProfileType::RuntimeDefault)
        );
    }
}
