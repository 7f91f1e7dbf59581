//! One way to make a container config for the harness's own requests (suite steps, fuzzing,
//! property runs, benchmarks): what the kubelet's `generateContainerConfig` always sets is set
//! here by construction, so no caller can leave it out. The image is sent as the user wrote
//! it in both `image` and `user_specified_image`, as critest sends it; a runtime that verifies
//! signatures refuses a CreateContainer without the second. The manager builds its own from a
//! full container spec instead (`manager::lifecycle::container_config`).

use std::collections::BTreeMap;

use super::v1;

/// A container config under construction: [`Container::new`], then the parts a caller needs,
/// then [`Container::build`].
#[derive(Debug, Clone)]
#[must_use]
pub struct Container {
    config: v1::ContainerConfig,
}

impl Container {
    /// Container `name` (attempt 0) of image `image`, in the namespaces `namespaces` (its
    /// sandbox's), with no seccomp filter: the kubelet always sends a profile, and without
    /// `seccompDefault` the one it sends for a pod that names none is `Unconfined`.
    pub fn new(name: &str, image: &str, namespaces: v1::NamespaceOption) -> Self {
        Container {
            config: v1::ContainerConfig {
                metadata: Some(v1::ContainerMetadata {
                    name: name.to_owned(),
                    attempt: 0,
                }),
                image: Some(container_image(image)),
                linux: Some(v1::LinuxContainerConfig {
                    security_context: Some(v1::LinuxContainerSecurityContext {
                        namespace_options: Some(namespaces),
                        seccomp: Some(unconfined()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
        }
    }

    /// The container's attempt (how many times the kubelet made it before).
    pub fn attempt(mut self, attempt: u32) -> Self {
        if let Some(metadata) = self.config.metadata.as_mut() {
            metadata.attempt = attempt;
        }
        self
    }

    /// The command (the image's entrypoint is replaced).
    pub fn command(mut self, command: Vec<String>) -> Self {
        self.config.command = command;
        self
    }

    /// The command's arguments (the image's `Cmd` is replaced when not empty).
    pub fn args(mut self, args: Vec<String>) -> Self {
        self.config.args = args;
        self
    }

    /// The working directory (empty: the image's).
    pub fn working_dir(mut self, dir: impl Into<String>) -> Self {
        self.config.working_dir = dir.into();
        self
    }

    /// Adds `labels`, over any of the same key.
    pub fn labels(mut self, labels: impl IntoIterator<Item = (String, String)>) -> Self {
        self.config.labels.extend(labels);
        self
    }

    /// Adds `annotations`, over any of the same key.
    pub fn annotations(mut self, annotations: impl IntoIterator<Item = (String, String)>) -> Self {
        self.config.annotations.extend(annotations);
        self
    }

    /// The environment, in key order.
    pub fn envs(mut self, envs: &BTreeMap<String, String>) -> Self {
        self.config.envs = envs
            .iter()
            .map(|(key, value)| v1::KeyValue {
                key: key.clone(),
                value: value.clone(),
            })
            .collect();
        self
    }

    /// The mounts.
    pub fn mounts(mut self, mounts: Vec<v1::Mount>) -> Self {
        self.config.mounts = mounts;
        self
    }

    /// The log file, relative to the sandbox's log directory.
    pub fn log_path(mut self, path: impl Into<String>) -> Self {
        self.config.log_path = path.into();
        self
    }

    /// Keeps stdin open (`stdin`), and runs the process on a terminal (`tty`).
    pub fn stdio(mut self, stdin: bool, tty: bool) -> Self {
        self.config.stdin = stdin;
        self.config.tty = tty;
        self
    }

    /// The whole Linux security context. A context without namespaces keeps the ones given
    /// to [`Container::new`]; one without a seccomp profile sends none only when it sets the
    /// deprecated `seccomp_profile_path` instead (the field a profile would override).
    #[allow(deprecated)]
    pub fn security(mut self, mut context: v1::LinuxContainerSecurityContext) -> Self {
        let given = self.security_context();
        if context.namespace_options.is_none() {
            context.namespace_options = given.namespace_options.clone();
        }
        if context.seccomp.is_none() && context.seccomp_profile_path.is_empty() {
            context.seccomp = Some(unconfined());
        }
        *given = context;
        self
    }

    /// The container's resources.
    pub fn resources(mut self, resources: Option<v1::LinuxContainerResources>) -> Self {
        self.linux().resources = resources;
        self
    }

    /// Sends no seccomp profile at all when `nil`, for a case about exactly that (critest's
    /// nil-profile spec); no kubelet does.
    pub fn nil_seccomp(mut self, nil: bool) -> Self {
        if nil {
            self.security_context().seccomp = None;
        }
        self
    }

    /// The config.
    pub fn build(self) -> v1::ContainerConfig {
        self.config
    }

    fn linux(&mut self) -> &mut v1::LinuxContainerConfig {
        self.config.linux.get_or_insert_with(Default::default)
    }

    fn security_context(&mut self) -> &mut v1::LinuxContainerSecurityContext {
        self.linux()
            .security_context
            .get_or_insert_with(Default::default)
    }
}

impl From<Container> for v1::ContainerConfig {
    fn from(container: Container) -> Self {
        container.build()
    }
}

/// The image as the kubelet names it to CreateContainer: the reference in `image`, and the
/// same reference as the user wrote it in `user_specified_image`.
pub fn container_image(image: &str) -> v1::ImageSpec {
    v1::ImageSpec {
        image: image.to_owned(),
        user_specified_image: image.to_owned(),
        ..Default::default()
    }
}

/// The profile the kubelet sends when the pod names none and `seccompDefault` is off.
pub fn unconfined() -> v1::SecurityProfile {
    v1::SecurityProfile {
        profile_type: v1::security_profile::ProfileType::Unconfined as i32,
        localhost_ref: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::namespace_options;

    #[test]
    fn a_new_container_names_its_image_twice_and_carries_its_namespaces_and_a_profile() {
        let config = Container::new("app", "busybox:1", namespace_options(false)).build();
        let image = config.image.unwrap();
        assert_eq!(
            (image.image.as_str(), image.user_specified_image.as_str()),
            ("busybox:1", "busybox:1")
        );
        let context = config.linux.unwrap().security_context.unwrap();
        assert_eq!(context.namespace_options, Some(namespace_options(false)));
        assert_eq!(context.seccomp, Some(unconfined()));
    }

    #[test]
    fn a_security_context_keeps_the_namespaces_and_the_profile_unless_it_names_its_own() {
        let own = v1::SecurityProfile {
            profile_type: v1::security_profile::ProfileType::RuntimeDefault as i32,
            localhost_ref: String::new(),
        };
        let config = Container::new("app", "busybox:1", namespace_options(true))
            .security(v1::LinuxContainerSecurityContext {
                seccomp: Some(own.clone()),
                privileged: true,
                ..Default::default()
            })
            .build();
        let context = config.linux.unwrap().security_context.unwrap();
        assert_eq!(context.namespace_options, Some(namespace_options(true)));
        assert_eq!(context.seccomp, Some(own));
        assert!(context.privileged);
        let plain = Container::new("app", "busybox:1", namespace_options(false))
            .security(v1::LinuxContainerSecurityContext::default())
            .build();
        let context = plain.linux.unwrap().security_context.unwrap();
        assert_eq!(context.seccomp, Some(unconfined()));
    }

    #[test]
    #[allow(deprecated)]
    fn the_deprecated_profile_path_goes_alone() {
        let config = Container::new("app", "busybox:1", namespace_options(false))
            .security(v1::LinuxContainerSecurityContext {
                seccomp_profile_path: "unconfined".to_owned(),
                ..Default::default()
            })
            .build();
        let context = config.linux.unwrap().security_context.unwrap();
        assert_eq!(context.seccomp, None);
        assert_eq!(context.seccomp_profile_path, "unconfined");
    }

    #[test]
    fn parts_land_where_the_kubelet_puts_them() {
        let config = Container::new("app", "img", namespace_options(false))
            .attempt(3)
            .command(vec!["sh".into()])
            .args(vec!["-c".into()])
            .working_dir("/w")
            .labels([("a".to_owned(), "1".to_owned())])
            .annotations([("b".to_owned(), "2".to_owned())])
            .envs(&BTreeMap::from([("K".to_owned(), "V".to_owned())]))
            .log_path("app/3.log")
            .stdio(true, false)
            .build();
        assert_eq!(config.metadata.unwrap().attempt, 3);
        assert_eq!(config.command, ["sh"]);
        assert_eq!(config.args, ["-c"]);
        assert_eq!(config.working_dir, "/w");
        assert_eq!(config.labels["a"], "1");
        assert_eq!(config.annotations["b"], "2");
        assert_eq!(config.envs[0].key, "K");
        assert_eq!(config.log_path, "app/3.log");
        assert!(config.stdin && !config.tty);
    }
}
