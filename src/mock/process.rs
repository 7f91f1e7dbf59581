//! A container's process as its config makes it, for a mock that runs none: the ids it runs
//! with (user, group, supplemental groups joined to the image's /etc/group as the policy
//! says), its user namespace's id mappings and its seccomp mode. Exec'd commands read it
//! (`id`, `/proc/self/status`, `/proc/self/uid_map`) and ContainerStatus reports its user.

use crate::cri::v1;
use crate::images::Rootfs;

use super::error::RpcError;
use super::image_service::catalogue_image;
use super::{Defect, Freedom, Inner, MockRuntime};

/// One line of a uid_map or gid_map: `length` ids from `container` on are `host` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mapping {
    /// First id inside the namespace.
    pub(crate) container: u32,
    /// First id outside.
    pub(crate) host: u32,
    /// How many ids.
    pub(crate) length: u32,
}

/// The node's initial user namespace: every id is itself.
const NODE_MAPPING: Mapping = Mapping {
    container: 0,
    host: 0,
    length: u32::MAX,
};

/// What seccomp does to the process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Seccomp {
    /// No filter (`Seccomp: 0`).
    #[default]
    Disabled,
    /// A filter (`Seccomp: 2`) denying these system calls with EPERM.
    Filter(Vec<String>),
}

/// Stand-in for a runtime's default profile: only calls no busybox applet the mock runs
/// makes, since what the cases read of it is its mode.
const DEFAULT_DENIED: [&str; 6] = ["kexec_load", "reboot", "swapon", "swapoff", "acct", "bpf"];

/// The system calls `chmod` may make.
const CHMOD_CALLS: [&str; 3] = ["chmod", "fchmodat", "fchmodat2"];

/// Who a container's process is and what confines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// Its user id (inside its user namespace).
    pub(crate) uid: i64,
    /// Its primary group id.
    pub(crate) gid: i64,
    /// Every group it is in, the primary one too: ascending, no repeats.
    pub(crate) groups: Vec<i64>,
    /// Its user's name in the image's /etc/passwd, if there is one.
    pub(crate) user_name: Option<String>,
    /// Its user namespace's uid_map.
    pub(crate) uid_map: Vec<Mapping>,
    /// Its user namespace's gid_map.
    pub(crate) gid_map: Vec<Mapping>,
    /// Its seccomp mode.
    pub(crate) seccomp: Seccomp,
    /// no_new_privs is set.
    pub(crate) no_new_privs: bool,
    /// It holds CAP_SYS_ADMIN (privileged, or added and not dropped): sethostname needs it.
    pub(crate) sys_admin: bool,
    /// The name of the container's first process (PID 1), the one process a `pgrep` finds:
    /// the mock runs no other.
    pub(crate) first_process: String,
    /// What the container sees of its pod.
    pub(crate) pod: PodFiles,
}

/// What a runtime writes for a pod and its containers see: the hostname (the node's in the
/// node's network namespace) and `/etc/resolv.conf` (from the pod's DNS config, else the
/// node's own file, as runtimes copy it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PodFiles {
    /// The UTS hostname.
    pub(crate) hostname: String,
    /// `/etc/resolv.conf`'s text.
    pub(crate) resolv_conf: String,
}

impl PodFiles {
    /// The files of a pod whose config names `hostname` and `dns`.
    pub(crate) fn of(hostname: &str, dns: Option<&v1::DnsConfig>) -> PodFiles {
        let hostname = if hostname.is_empty() {
            Self::node().hostname.clone()
        } else {
            hostname.to_owned()
        };
        let resolv_conf = match dns {
            Some(dns) => {
                let mut text: String = dns
                    .servers
                    .iter()
                    .map(|server| format!("nameserver {server}\n"))
                    .collect();
                if !dns.searches.is_empty() {
                    text.push_str(&format!("search {}\n", dns.searches.join(" ")));
                }
                if !dns.options.is_empty() {
                    text.push_str(&format!("options {}\n", dns.options.join(" ")));
                }
                text
            }
            None => Self::node().resolv_conf.clone(),
        };
        PodFiles {
            hostname,
            resolv_conf,
        }
    }

    /// The node's own hostname and resolv.conf, read once per process: a pod without its own
    /// gets these, and sandboxes are made far more often than the node's files change.
    fn node() -> &'static PodFiles {
        static NODE: std::sync::OnceLock<PodFiles> = std::sync::OnceLock::new();
        NODE.get_or_init(|| PodFiles {
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|name| name.trim().to_owned())
                .unwrap_or_default(),
            resolv_conf: std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default(),
        })
    }
}

impl Default for Identity {
    /// Root in the node's user namespace, unconfined: a container nobody configured.
    fn default() -> Self {
        Identity {
            uid: 0,
            gid: 0,
            groups: vec![0],
            user_name: Some("root".to_owned()),
            uid_map: vec![NODE_MAPPING],
            gid_map: vec![NODE_MAPPING],
            seccomp: Seccomp::Disabled,
            no_new_privs: false,
            sys_admin: false,
            first_process: String::new(),
            pod: PodFiles::default(),
        }
    }
}

/// An account line of an /etc/passwd.
struct Account<'a> {
    name: &'a str,
    uid: i64,
    gid: i64,
}

fn accounts(passwd: &str) -> impl Iterator<Item = Account<'_>> {
    passwd.lines().filter_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let uid = fields.nth(1)?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some(Account { name, uid, gid })
    })
}

/// The groups /etc/group lists `user` as a member of.
fn member_groups(group: &str, user: &str) -> Vec<i64> {
    group
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            let (gid, members) = (fields.get(2)?, fields.get(3)?);
            members
                .split(',')
                .any(|member| member == user)
                .then(|| gid.parse().ok())
                .flatten()
        })
        .collect()
}

/// A group's id by name or number in /etc/group.
fn group_id(group: &str, name: &str) -> Option<i64> {
    name.parse().ok().or_else(|| {
        group.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&name))
                .then(|| fields.get(2)?.parse().ok())
                .flatten()
        })
    })
}

/// Refusal of CreateContainer for the process it describes.
fn refused(reason: String) -> RpcError {
    RpcError::ProcessRefused {
        method: "CreateContainer",
        reason,
    }
}

impl Identity {
    /// The process a container's `security` context describes in a sandbox whose namespaces are `sandbox`, from
    /// `image` (its /etc/passwd and /etc/group are the catalogue's, or busybox's for an image
    /// the catalogue does not know). Refuses what a runtime could not start: an unknown user
    /// name, a seccomp profile path without `localhost/`, a profile file it cannot read.
    pub(crate) fn of(
        inner: &Inner,
        security: Option<&v1::LinuxContainerSecurityContext>,
        sandbox: Option<&v1::NamespaceOption>,
        image: &v1::Image,
    ) -> Result<Identity, RpcError> {
        let known = catalogue_image(image);
        let rootfs = known.map_or(Rootfs::Busybox, |image| image.rootfs);
        let (passwd, group) = (rootfs.passwd(), rootfs.group());
        let default = v1::LinuxContainerSecurityContext::default();
        let security = security.unwrap_or(&default);

        // The image's `User`: a uid or name, then optionally `:` and a group.
        let image_user = known.map_or("", |image| image.user);
        let (image_user, image_group) = match image_user.split_once(':') {
            Some((user, group)) => (user, Some(group)),
            None => (image_user, None),
        };
        let by_name = |name: &str| accounts(&passwd).find(|a| a.name == name).map(|a| a.uid);
        let uid = if let Some(uid) = &security.run_as_user {
            uid.value
        } else if !security.run_as_username.is_empty() {
            by_name(&security.run_as_username).ok_or_else(|| {
                refused(format!(
                    "no user {} in the image's /etc/passwd",
                    security.run_as_username
                ))
            })?
        } else if image_user.is_empty() {
            0
        } else if let Ok(uid) = image_user.parse() {
            uid
        } else {
            by_name(image_user).ok_or_else(|| {
                refused(format!("no user {image_user} in the image's /etc/passwd"))
            })?
        };
        let account = accounts(&passwd).find(|a| a.uid == uid);
        let gid = match (&security.run_as_group, image_group) {
            (Some(gid), _) => gid.value,
            (None, Some(name)) => group_id(&group, name).unwrap_or(0),
            (None, None) => account.as_ref().map_or(0, |a| a.gid),
        };
        let user_name = account.as_ref().map(|a| a.name.to_owned());
        let mut groups = vec![gid];
        groups.extend(&security.supplemental_groups);
        let strict =
            security.supplemental_groups_policy == v1::SupplementalGroupsPolicy::Strict as i32;
        if !strict || MockRuntime::has(inner, Defect::StrictGroupsMerged) {
            if let Some(name) = &user_name {
                groups.extend(member_groups(&group, name));
            }
        }
        groups.sort_unstable();
        groups.dedup();

        let (uid_map, gid_map) = match sandbox.and_then(|n| n.userns_options.as_ref()) {
            Some(userns)
                if userns.mode == v1::NamespaceMode::Pod as i32
                    && !MockRuntime::has(inner, Defect::UsernsIgnored) =>
            {
                let map = |ids: &[v1::IdMapping]| {
                    ids.iter()
                        .map(|m| Mapping {
                            container: m.container_id,
                            host: m.host_id,
                            length: m.length,
                        })
                        .collect()
                };
                (map(&userns.uids), map(&userns.gids))
            }
            _ => (vec![NODE_MAPPING], vec![NODE_MAPPING]),
        };

        let seccomp = if security.privileged || MockRuntime::has(inner, Defect::SeccompIgnored) {
            Seccomp::Disabled
        } else if MockRuntime::takes(inner, Freedom::SeccompProfilePathIgnored) {
            // The deprecated path read as absent: CRI v1's field alone decides.
            seccomp_of(&v1::LinuxContainerSecurityContext {
                seccomp: security.seccomp.clone(),
                ..Default::default()
            })?
        } else {
            seccomp_of(security)?
        };
        Ok(Identity {
            uid,
            gid,
            groups,
            user_name,
            uid_map,
            gid_map,
            seccomp,
            no_new_privs: security.no_new_privs && !security.privileged,
            sys_admin: security.privileged || holds_sys_admin(security.capabilities.as_ref()),
            first_process: String::new(),
            pod: PodFiles::default(),
        })
    }

    /// The same process as the first of a container in `pod`, running `command` (the
    /// config's command and args; empty: the image's entrypoint and cmd).
    pub(crate) fn in_pod(self, pod: PodFiles, command: &[String], image: &v1::Image) -> Identity {
        let known = catalogue_image(image);
        let first = match command.first() {
            Some(first) => first.clone(),
            None => known
                .and_then(|image| image.entrypoint.first().or(image.cmd.first()))
                .map_or_else(|| "sh".to_owned(), |first| (*first).to_owned()),
        };
        Identity {
            first_process: first.rsplit('/').next().unwrap_or(&first).to_owned(),
            pod,
            ..self
        }
    }

    /// Whether `sethostname` fails for this process, and so `hostname NAME`: without
    /// CAP_SYS_ADMIN, or where its seccomp filter denies the call.
    pub(crate) fn denies_sethostname(&self) -> bool {
        let filtered = match &self.seccomp {
            Seccomp::Disabled => false,
            Seccomp::Filter(denied) => denied.iter().any(|call| call == "sethostname"),
        };
        filtered || !self.sys_admin
    }

    /// `ContainerStatus.user`: the ids the first process runs with.
    pub(crate) fn container_user(&self, inner: &Inner) -> v1::ContainerUser {
        let supplemental_groups = if MockRuntime::has(inner, Defect::ContainerUserGroupsMissing) {
            Vec::new()
        } else {
            self.groups.clone()
        };
        v1::ContainerUser {
            linux: Some(v1::LinuxContainerUser {
                uid: self.uid,
                gid: self.gid,
                supplemental_groups,
            }),
        }
    }

    /// True when seccomp denies the process a `chmod`.
    pub(crate) fn denies_chmod(&self) -> bool {
        match &self.seccomp {
            Seccomp::Disabled => false,
            Seccomp::Filter(denied) => denied
                .iter()
                .any(|call| CHMOD_CALLS.contains(&call.as_str())),
        }
    }

    /// What `id ARGS` prints, or its error text.
    pub(crate) fn id(&self, args: &[String]) -> Result<String, String> {
        let flags: String = args
            .iter()
            .map(|a| {
                a.strip_prefix('-')
                    .ok_or_else(|| format!("id: unknown user {a}"))
            })
            .collect::<Result<_, _>>()?;
        let name = flags.contains('n');
        let mut kinds = flags.chars().filter(|c| *c != 'n');
        let kind = kinds.next();
        if kinds.next().is_some() {
            return Err("id: the mock prints one of -u, -g, -G at a time".to_owned());
        }
        let line = match (kind, name) {
            (Some('u'), false) => self.uid.to_string(),
            (Some('u'), true) => self
                .user_name
                .clone()
                .unwrap_or_else(|| self.uid.to_string()),
            (Some('g'), false) => self.gid.to_string(),
            (Some('G'), false) => std::iter::once(self.gid)
                .chain(self.groups.iter().copied().filter(|g| *g != self.gid))
                .map(|g| g.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            (None, false) => format!(
                "uid={} gid={} groups={}",
                self.uid,
                self.gid,
                self.groups
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            _ => return Err(format!("id: the mock does not model -{flags}")),
        };
        Ok(line + "\n")
    }

    /// The text of a file about the process (`/proc/self/...`), if it is one.
    pub(crate) fn file(&self, path: &str) -> Option<String> {
        let map = |mappings: &[Mapping]| {
            mappings
                .iter()
                .map(|m| format!("{:>10} {:>10} {:>10}\n", m.container, m.host, m.length))
                .collect::<String>()
        };
        match path {
            "/etc/resolv.conf" => return Some(self.pod.resolv_conf.clone()),
            "/etc/hostname" => return Some(format!("{}\n", self.pod.hostname)),
            _ => {}
        }
        let path = path
            .strip_prefix("/proc/self/")
            .or_else(|| path.strip_prefix("/proc/thread-self/"))?;
        match path {
            "uid_map" => Some(map(&self.uid_map)),
            "gid_map" => Some(map(&self.gid_map)),
            "status" => {
                let ids = |id: i64| format!("{id}\t{id}\t{id}\t{id}");
                let groups: Vec<String> = self.groups.iter().map(i64::to_string).collect();
                let seccomp = match self.seccomp {
                    Seccomp::Disabled => 0,
                    Seccomp::Filter(_) => 2,
                };
                Some(format!(
                    "Name:\tsh\nUid:\t{}\nGid:\t{}\nGroups:\t{} \nNoNewPrivs:\t{}\nSeccomp:\t{seccomp}\n",
                    ids(self.uid),
                    ids(self.gid),
                    groups.join(" "),
                    u8::from(self.no_new_privs),
                ))
            }
            _ => None,
        }
    }
}

/// Whether a capability set leaves CAP_SYS_ADMIN in (runtimes' default set lacks it): added
/// by name or as `ALL`, and not dropped the same way.
fn holds_sys_admin(capabilities: Option<&v1::Capability>) -> bool {
    let Some(capabilities) = capabilities else {
        return false;
    };
    let names = |list: &[String]| {
        list.iter().any(|name| {
            let name = name.trim_start_matches("CAP_");
            name == "SYS_ADMIN" || name == "ALL"
        })
    };
    names(&capabilities.add_capabilities) && !names(&capabilities.drop_capabilities)
}

/// The seccomp mode a container's security context asks for: CRI v1's `seccomp` field when
/// set, else the deprecated path; neither means unconfined.
#[allow(deprecated)]
fn seccomp_of(security: &v1::LinuxContainerSecurityContext) -> Result<Seccomp, RpcError> {
    use v1::security_profile::ProfileType;
    if let Some(profile) = &security.seccomp {
        return match ProfileType::try_from(profile.profile_type) {
            Ok(ProfileType::RuntimeDefault) => Ok(default_filter()),
            Ok(ProfileType::Unconfined) => Ok(Seccomp::Disabled),
            Ok(ProfileType::Localhost) => profile_file(&profile.localhost_ref),
            Err(_) => Err(refused(format!(
                "unknown seccomp profile type {}",
                profile.profile_type
            ))),
        };
    }
    match security.seccomp_profile_path.as_str() {
        "" | "unconfined" => Ok(Seccomp::Disabled),
        "runtime/default" | "docker/default" => Ok(default_filter()),
        path => match path.strip_prefix("localhost/") {
            Some(file) => profile_file(file),
            None => Err(refused(format!(
                "seccomp profile {path} does not begin with localhost/"
            ))),
        },
    }
}

fn default_filter() -> Seccomp {
    Seccomp::Filter(DEFAULT_DENIED.iter().map(|c| (*c).to_owned()).collect())
}

/// A localhost profile, read from the node as a runtime reads it: the calls any rule gives an
/// action other than SCMP_ACT_ALLOW are the ones it denies (the mock does not model a
/// default action other than allow, nor arguments).
fn profile_file(path: &str) -> Result<Seccomp, RpcError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| refused(format!("cannot read seccomp profile {path}: {err}")))?;
    let profile: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| refused(format!("seccomp profile {path} is not JSON: {err}")))?;
    let denied = profile["syscalls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|rule| rule["action"].as_str() != Some("SCMP_ACT_ALLOW"))
        .flat_map(|rule| rule["names"].as_array().into_iter().flatten())
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect();
    Ok(Seccomp::Filter(denied))
}

/// A command ExecSync runs: in which container, as whom.
#[derive(Debug, Clone)]
pub(crate) struct ExecTarget {
    /// The container's full id.
    pub(crate) id: String,
    /// The command line.
    pub(crate) argv: Vec<String>,
    /// The container's process, whose ids and confinement the command inherits.
    pub(crate) identity: Identity,
    /// A timeout answers an exit code rather than an error (the other-runtime profile).
    pub(crate) timeout_as_exit_code: bool,
    /// The container's mounts, which the command sees as an exec session's would.
    pub(crate) mounts: std::sync::Arc<crate::mock::mounts::MountTable>,
}

/// Whether a command line sets a trap on SIGTERM (the harness's sleeper, `trap 'exit 0' TERM`):
/// such a process exits 0 on the stop signal; any other runs as PID 1 without a handler, and
/// the kernel does not deliver the signal to it.
pub(crate) fn traps_term(argv: &[String]) -> bool {
    argv.iter().any(|arg| {
        arg.contains("trap ")
            && arg
                .split([' ', ';'])
                .any(|word| word == "TERM" || word == "SIGTERM" || word == "15")
    })
}

/// ExecSync's checks, as containerd makes them (the container, then its state): the command
/// and the process it joins, and the timeout in seconds (0: none).
pub(crate) fn exec_target(
    inner: &mut Inner,
    request: v1::ExecSyncRequest,
) -> Result<(ExecTarget, i64), RpcError> {
    // containerd words an unknown id as Exec does.
    let container = inner.state.running_container(&request.container_id, |id| {
        RpcError::ExecContainerNotFound { id }
    })?;
    let target = ExecTarget {
        id: container.status.id.clone(),
        argv: request.cmd,
        identity: container.process.identity.clone(),
        timeout_as_exit_code: MockRuntime::takes(inner, Freedom::ExecTimeoutExitCode),
        mounts: container.mounts.clone(),
    };
    Ok((target, request.timeout))
}

/// Refuses a pod user namespace the contract does not let a runtime take: only POD and NODE
/// modes, and in POD mode exactly one uid and one gid mapping, each mapping container id 0.
pub(crate) fn check_userns(inner: &Inner, options: &v1::NamespaceOption) -> Result<(), RpcError> {
    let Some(userns) = &options.userns_options else {
        return Ok(());
    };
    let refuse = |reason: &str| {
        Err(RpcError::ProcessRefused {
            method: "RunPodSandbox",
            reason: format!("user namespace: {reason}"),
        })
    };
    match v1::NamespaceMode::try_from(userns.mode) {
        Ok(v1::NamespaceMode::Node) => Ok(()),
        Ok(v1::NamespaceMode::Pod) => {
            for (kind, ids) in [("uid", &userns.uids), ("gid", &userns.gids)] {
                let [mapping] = ids.as_slice() else {
                    return refuse(&format!(
                        "POD mode takes one {kind} mapping, not {}",
                        ids.len()
                    ));
                };
                if mapping.length == 0 {
                    return refuse(&format!("the {kind} mapping is empty"));
                }
                if mapping.container_id != 0
                    && !MockRuntime::has(inner, Defect::UnmappedUsernsRootAccepted)
                {
                    return refuse(&format!(
                        "the {kind} mapping leaves container id 0 unmapped"
                    ));
                }
            }
            Ok(())
        }
        Ok(mode) => refuse(&format!("mode {} is not supported", mode.as_str_name())),
        Err(_) => refuse(&format!("unknown mode {}", userns.mode)),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn identity() -> Identity {
        Identity {
            uid: 1000,
            gid: 1000,
            groups: vec![1000, 1234, 50000],
            user_name: Some("default-user".to_owned()),
            ..Identity::default()
        }
    }

    #[rstest]
    #[case::uid(&["-u"], "1000\n")]
    #[case::name(&["-nu"], "default-user\n")]
    #[case::name_apart(&["-u", "-n"], "default-user\n")]
    #[case::gid(&["-g"], "1000\n")]
    #[case::groups_primary_first(&["-G"], "1000 1234 50000\n")]
    #[case::everything(&[], "uid=1000 gid=1000 groups=1000,1234,50000\n")]
    fn id_prints_the_modelled_ids(#[case] args: &[&str], #[case] expected: &str) {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        assert_eq!(identity().id(&args).as_deref(), Ok(expected));
    }

    #[test]
    fn id_groups_put_the_primary_group_first_even_when_it_is_not_the_lowest() {
        let who = Identity {
            gid: 1002,
            groups: vec![1001, 1002],
            ..identity()
        };
        assert_eq!(who.id(&["-G".to_owned()]).unwrap(), "1002 1001\n");
    }

    #[test]
    fn maps_are_printed_as_the_kernel_prints_them() {
        let who = Identity {
            uid_map: vec![Mapping {
                container: 0,
                host: 1000,
                length: 100_000,
            }],
            ..identity()
        };
        assert_eq!(
            who.file("/proc/self/uid_map").unwrap(),
            "         0       1000     100000\n"
        );
        assert_eq!(
            who.file("/proc/self/gid_map").unwrap(),
            "         0          0 4294967295\n"
        );
    }

    #[test]
    fn the_status_file_shows_the_seccomp_mode() {
        let filtered = Identity {
            seccomp: default_filter(),
            ..identity()
        };
        assert!(identity()
            .file("/proc/self/status")
            .unwrap()
            .contains("\nSeccomp:\t0\n"));
        assert!(filtered
            .file("/proc/self/status")
            .unwrap()
            .contains("\nSeccomp:\t2\n"));
        assert_eq!(identity().file("/etc/passwd"), None);
    }

    #[test]
    fn the_image_group_file_lists_its_user_in_group_50000() {
        let group = Rootfs::PredefinedGroup.group();
        assert_eq!(member_groups(&group, "default-user"), vec![50000]);
        assert_eq!(member_groups(&group, "root"), Vec::<i64>::new());
        assert_eq!(group_id(&group, "www-data"), Some(33));
    }

    /// The ids of a container of test-image-predefined-group run as 1000 with group 1234,
    /// under `policy`.
    fn predefined_group_user(inner: &Inner, policy: v1::SupplementalGroupsPolicy) -> Identity {
        let image = v1::Image {
            repo_tags: vec![crate::images::resolve("test-image-predefined-group")],
            ..Default::default()
        };
        let security = v1::LinuxContainerSecurityContext {
            run_as_user: Some(v1::Int64Value { value: 1000 }),
            supplemental_groups: vec![1234],
            supplemental_groups_policy: policy as i32,
            ..Default::default()
        };
        Identity::of(inner, Some(&security), None, &image).unwrap()
    }

    #[rstest]
    #[case::merge(v1::SupplementalGroupsPolicy::Merge, vec![1000, 1234, 50000])]
    #[case::strict(v1::SupplementalGroupsPolicy::Strict, vec![1000, 1234])]
    fn the_policy_decides_whether_the_images_groups_join(
        #[case] policy: v1::SupplementalGroupsPolicy,
        #[case] groups: Vec<i64>,
    ) {
        let who = predefined_group_user(&Inner::default(), policy);
        assert_eq!((who.uid, who.gid, who.groups), (1000, 1000, groups));
    }

    #[test]
    fn an_image_user_by_name_and_group_is_resolved_in_its_files() {
        let image = v1::Image {
            repo_tags: vec![crate::images::resolve("test-image-user-username-group")],
            ..Default::default()
        };
        let who = Identity::of(&Inner::default(), None, None, &image).unwrap();
        assert_eq!(
            (who.uid, who.gid, who.user_name.as_deref()),
            (33, 33, Some("www-data"))
        );
    }

    #[rstest]
    #[case::default_set(false, &[], &[], false)]
    #[case::privileged(true, &[], &[], true)]
    #[case::added(false, &["SYS_ADMIN"], &[], true)]
    #[case::added_with_prefix(false, &["CAP_SYS_ADMIN"], &[], true)]
    #[case::all_but_dropped(false, &["ALL"], &["SYS_ADMIN"], false)]
    #[case::added_then_all_dropped(false, &["SYS_ADMIN"], &["ALL"], false)]
    fn sethostname_needs_sys_admin(
        #[case] privileged: bool,
        #[case] add: &[&str],
        #[case] drop: &[&str],
        #[case] holds: bool,
    ) {
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect();
        let security = v1::LinuxContainerSecurityContext {
            privileged,
            capabilities: Some(v1::Capability {
                add_capabilities: names(add),
                drop_capabilities: names(drop),
                ..Default::default()
            }),
            ..Default::default()
        };
        let image = v1::Image::default();
        let who = Identity::of(&Inner::default(), Some(&security), None, &image).unwrap();
        assert_eq!(who.sys_admin, holds);
        assert_eq!(who.denies_sethostname(), !holds);
    }

    #[test]
    fn a_bare_seccomp_profile_path_is_refused_and_privileged_is_unconfined() {
        #[allow(deprecated)]
        let mut security = v1::LinuxContainerSecurityContext {
            seccomp_profile_path: "/some/profile.json".to_owned(),
            ..Default::default()
        };
        let image = v1::Image::default();
        let inner = Inner::default();
        assert!(Identity::of(&inner, Some(&security), None, &image).is_err());
        security.privileged = true;
        let who = Identity::of(&inner, Some(&security), None, &image).unwrap();
        assert_eq!(who.seccomp, Seccomp::Disabled);
    }

    fn userns(mode: v1::NamespaceMode, mappings: &[(u32, u32)]) -> v1::NamespaceOption {
        let ids: Vec<v1::IdMapping> = mappings
            .iter()
            .map(|&(container_id, host_id)| v1::IdMapping {
                container_id,
                host_id,
                length: 100_000,
            })
            .collect();
        v1::NamespaceOption {
            userns_options: Some(v1::UserNamespace {
                mode: mode as i32,
                uids: ids.clone(),
                gids: ids,
            }),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::pod(userns(v1::NamespaceMode::Pod, &[(0, 1000)]), true)]
    #[case::node(userns(v1::NamespaceMode::Node, &[]), true)]
    #[case::none(v1::NamespaceOption::default(), true)]
    #[case::two_mappings(userns(v1::NamespaceMode::Pod, &[(0, 1000), (0, 2000)]), false)]
    #[case::no_mapping(userns(v1::NamespaceMode::Pod, &[]), false)]
    #[case::root_unmapped(userns(v1::NamespaceMode::Pod, &[(1, 1000)]), false)]
    #[case::container(userns(v1::NamespaceMode::Container, &[]), false)]
    #[case::target(userns(v1::NamespaceMode::Target, &[]), false)]
    fn pod_user_namespaces_are_checked_as_the_contract_says(
        #[case] options: v1::NamespaceOption,
        #[case] taken: bool,
    ) {
        let inner = Inner::default();
        assert_eq!(check_userns(&inner, &options).is_ok(), taken);
    }
}
