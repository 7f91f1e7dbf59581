//! The steps a case is made of. Each step kind is one file of this folder: its YAML shape
//! (serde, refusing unknown fields), its validation against the case so far, its execution on
//! a case's world, its expectations, and (through `Serialize`) how it prints back to YAML. The
//! `registry!` list below names each once; the loader, the runner, the property printer and
//! the book's step reference (docs/steps.md) all take the steps from it.

mod fields;
mod invalid;

use std::collections::BTreeSet;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use check_network::NetworkState;
pub(crate) use fields::{busybox, is_busybox, is_default, is_one, is_true, one, yes};
pub use fields::{
    check_call, check_error, Action, ErrorExpect, ErrorKind, GrpcCode, SandboxState, State,
    TextExpect, BUSYBOX, GRPC_CODES,
};
pub use get_pod_status::{ContainerExpect, IpExpect, PodStatusExpect};
pub use get_pods::{GetPodsExpect, PodExpect};
pub use invalid::{CheckError, Defined, PathRule};
pub use kill_pod::{KillExpect, RestartPolicy, SpecFields, Stopped, SyncResultExpect};
pub use new_manager::{NewManagerExpect, REPORTED_RUNTIME_NAME};

use crate::world::{StepError, World};

/// What kind of step this is, which decides how it runs and whether it is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Acts on the runtime through the unrecorded client.
    Setup,
    /// Acts on the mock's control service: the case must declare `needs: [mock_control]`.
    MockControl,
    /// A manager call, recorded in the snapshot.
    Manager,
    /// Checks the runtime directly through the unrecorded client (a conformance check); its
    /// expectations are the case's result, and it is not recorded.
    Check,
}

/// One step kind: its name, what it is, how it validates and runs.
pub trait StepDef: Sized + Serialize + DeserializeOwned {
    /// The name suites write (`stop_sandbox`).
    const NAME: &'static str;
    /// Setup, mock control or manager call.
    const KIND: Kind;
    /// One line for the reference.
    const ABOUT: &'static str;

    /// Its fields, for the reference: those serde derives for it by default; a step with
    /// several forms names the fields of its map form.
    fn fields() -> &'static [&'static str] {
        fields_of::<Self>()
    }

    /// The fields of its `expect:` block, for the reference (none by default).
    fn expect_fields() -> &'static [&'static str] {
        &[]
    }

    /// True when this step, as written, only establishes a precondition: a failure is an
    /// error of the case, never a verdict on the runtime (`remove_image`'s `setup: true`).
    fn precondition(&self) -> bool {
        false
    }

    /// Checks the step against the case so far: aliases it uses are defined, those it defines
    /// are new, pods it names are valid. The error speaks the suite's words.
    fn check(&self, scope: &mut Scope) -> Result<(), CheckError>;

    /// Runs the step on a case's world (`Send`, so cases can run on any worker).
    fn run(
        &self,
        world: &mut World,
    ) -> impl std::future::Future<Output = Result<(), StepError>> + Send;
}

/// What the reference says of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    /// The step's name.
    pub name: &'static str,
    /// Setup, mock control or manager call.
    pub kind: Kind,
    /// One line on what it does.
    pub about: &'static str,
    /// Its fields (empty for a step written as a scalar, like `stop_sandbox: ALIAS`).
    pub fields: &'static [&'static str],
    /// The fields of its `expect:` block.
    pub expect_fields: &'static [&'static str],
}

impl StepInfo {
    fn of<T: StepDef>() -> Self {
        Self {
            name: T::NAME,
            kind: T::KIND,
            about: T::ABOUT,
            fields: T::fields(),
            expect_fields: T::expect_fields(),
        }
    }
}

/// The field names a derived `Deserialize` of `T` accepts; none for a scalar.
pub fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut probe = fields_probe::Probe::default();
    // The probe always fails, having looked at the fields.
    let _ = T::deserialize(&mut probe);
    probe.fields
}

mod fields_probe {
    //! A deserializer that only learns which fields a struct has.
    use serde::de::{self, Visitor};

    #[derive(Default)]
    pub(super) struct Probe {
        pub fields: &'static [&'static str],
    }

    #[derive(Debug)]
    pub(super) struct Done;

    impl std::fmt::Display for Done {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("probed")
        }
    }

    impl std::error::Error for Done {}

    impl de::Error for Done {
        fn custom<T: std::fmt::Display>(_msg: T) -> Self {
            Done
        }
    }

    impl<'de> de::Deserializer<'de> for &mut Probe {
        type Error = Done;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Done> {
            Err(Done)
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Done> {
            self.fields = fields;
            Err(Done)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Done> {
            visitor.visit_newtype_struct(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
}

/// What a case has defined so far, for validating its next step.
#[derive(Debug, Default)]
pub struct Scope {
    sandboxes: BTreeSet<String>,
    containers: BTreeSet<String>,
    /// Every pod alias the steps name (not the empty one).
    pub pods: BTreeSet<String>,
    /// Manager calls so far.
    pub manager_calls: usize,
}

fn is_alias(alias: &str) -> bool {
    !alias.is_empty()
        && alias
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn sorted(items: &BTreeSet<String>) -> Vec<String> {
    items.iter().cloned().collect()
}

impl Scope {
    /// A sandbox alias defined before.
    pub fn sandbox(&self, alias: &str) -> Result<(), CheckError> {
        if self.sandboxes.contains(alias) {
            return Ok(());
        }
        Err(CheckError::UnknownAlias {
            alias: alias.to_owned(),
            defined: Defined::Sandboxes(sorted(&self.sandboxes)),
        })
    }

    /// A container alias defined before.
    pub fn container(&self, alias: &str) -> Result<(), CheckError> {
        if self.containers.contains(alias) {
            return Ok(());
        }
        Err(CheckError::UnknownAlias {
            alias: alias.to_owned(),
            defined: Defined::Containers(sorted(&self.containers)),
        })
    }

    /// A sandbox or container alias defined before.
    pub fn either(&self, alias: &str) -> Result<(), CheckError> {
        if self.sandboxes.contains(alias) || self.containers.contains(alias) {
            return Ok(());
        }
        Err(CheckError::UnknownAlias {
            alias: alias.to_owned(),
            defined: Defined::Either {
                sandboxes: sorted(&self.sandboxes),
                containers: sorted(&self.containers),
            },
        })
    }

    /// Defines a new sandbox alias.
    pub fn define_sandbox(&mut self, alias: &str) -> Result<(), CheckError> {
        self.fresh(alias)?;
        self.sandboxes.insert(alias.to_owned());
        Ok(())
    }

    /// Defines a new container alias.
    pub fn define_container(&mut self, alias: &str) -> Result<(), CheckError> {
        self.fresh(alias)?;
        self.containers.insert(alias.to_owned());
        Ok(())
    }

    fn fresh(&self, alias: &str) -> Result<(), CheckError> {
        if !is_alias(alias) {
            return Err(CheckError::NotAlias {
                alias: alias.to_owned(),
            });
        }
        if self.sandboxes.contains(alias) || self.containers.contains(alias) {
            return Err(CheckError::AliasTaken {
                alias: alias.to_owned(),
            });
        }
        Ok(())
    }

    /// A name that could be an alias, for objects that need not exist.
    pub fn alias_shaped(&self, alias: &str, what: &str) -> Result<(), CheckError> {
        if is_alias(alias) {
            Ok(())
        } else {
            Err(CheckError::CannotName {
                name: alias.to_owned(),
                what: what.to_owned(),
            })
        }
    }

    /// A pod alias; `""` names the pod of containers without pod labels.
    pub fn pod(&mut self, alias: &str) -> Result<(), CheckError> {
        if alias == "none" || (!alias.is_empty() && !is_alias(alias)) {
            return Err(CheckError::NotPod {
                name: alias.to_owned(),
            });
        }
        if !alias.is_empty() {
            self.pods.insert(alias.to_owned());
        }
        Ok(())
    }

    /// Whose pod labels to write: a pod alias, or `none`.
    pub fn pod_labels(&mut self, labels: Option<&str>) -> Result<(), CheckError> {
        match labels {
            Some("none") | None => Ok(()),
            Some(alias) => self.pod(alias),
        }
    }

    /// A text expectation whose pattern must compile.
    pub fn text(&self, field: &str, text: &TextExpect) -> Result<(), CheckError> {
        match text.bad_pattern() {
            Some(why) => Err(CheckError::Pattern {
                field: field.to_owned(),
                why,
            }),
            None => Ok(()),
        }
    }

    /// An error expectation whose pattern must compile.
    pub fn error(&self, expect: Option<&ErrorExpect>) -> Result<(), CheckError> {
        match expect {
            Some(e) => self.text("error", &e.text()),
            None => Ok(()),
        }
    }
}

/// Lists every step kind once: its module (one file) and its type. The variant of [`Step`]
/// takes the type's name, and serde writes it in snake case, which must be its `NAME` (a test
/// checks).
macro_rules! registry {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub use $module::$ty;)*

        /// One step of a case, written as a single-key map: `- stop_sandbox: old`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Step {
            $(
                #[doc = concat!("`", stringify!($module), "`")]
                $ty($ty),
            )*
        }

        impl Step {
            /// The step's name as written in suite files.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Step::$ty(_) => <$ty as StepDef>::NAME,)*
                }
            }

            /// Setup, mock control or manager call.
            pub fn kind(&self) -> Kind {
                match self {
                    $(Step::$ty(_) => <$ty as StepDef>::KIND,)*
                }
            }

            /// True when the step only establishes a precondition (see [`StepDef::precondition`]).
            pub fn precondition(&self) -> bool {
                match self {
                    $(Step::$ty(step) => step.precondition(),)*
                }
            }

            /// True when the step, as written, carries an `expect:` block.
            pub fn has_expect(&self) -> bool {
                // A step prints back only what differs from its defaults, so an `expect` key
                // in its printed form is an expectation the suite wrote.
                match serde_json::to_value(self) {
                    Ok(serde_json::Value::Object(outer)) => outer.values().any(|inner| {
                        inner.as_object().is_some_and(|fields| fields.contains_key("expect"))
                    }),
                    _ => false,
                }
            }

            /// Checks the step against the case so far.
            pub fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
                match self {
                    $(Step::$ty(step) => step.check(scope),)*
                }
            }

            /// Runs the step.
            pub async fn run(&self, world: &mut World) -> Result<(), StepError> {
                match self {
                    $(Step::$ty(step) => step.run(world).await,)*
                }
            }
        }

        /// Every step kind, in reference order.
        pub fn registry() -> Vec<StepInfo> {
            vec![$(StepInfo::of::<$ty>(),)*]
        }
    };
}

// The step registry: one `pub mod` line per step, in groups the step reference keeps (rustfmt
// sorts each group).
// build.rs reads the lines between the markers and invokes `registry!` with each module and
// its type (the module name in CamelCase), so a new step is one file and one line here.
// step registry: begin
// setup on the runtime, not recorded
pub mod attach;
pub mod call_unknown_id;
pub mod check_host_mount;
pub mod check_host_path;
pub mod check_log;
pub mod check_network;
pub mod checkpoint_container;
pub mod connect;
pub mod container_events;
pub mod container_mounts;
pub mod container_resources;
pub mod container_stats;
pub mod container_status;
pub mod create_container;
pub mod exec;
pub mod exec_sync;
pub mod host_mount;
pub mod image_fs_info;
pub mod image_status;
pub mod list_container_stats;
pub mod list_containers;
pub mod list_images;
pub mod list_sandboxes;
pub mod make_host_path;
pub mod pod_sandbox_metrics;
pub mod pod_sandbox_stats;
pub mod pull_image;
pub mod remove_container;
pub mod remove_image;
pub mod remove_sandbox;
pub mod reopen_container_log;
pub mod run_sandbox;
pub mod runtime_config;
pub mod runtime_status;
pub mod runtime_version;
pub mod sandbox_status;
pub mod sleep_ms;
pub mod start_container;
pub mod stop_container;
pub mod stop_sandbox;
pub mod stream_list;
pub mod update_runtime_config;
pub mod update_sandbox_resources;
pub mod wait_container;
// mock only: need `needs: [mock_control]`
pub mod mock_advance_clock;
pub mod mock_exit_container;
pub mod mock_hold_call;
pub mod mock_inject_error;
pub mod mock_seed_container;
pub mod mock_seed_sandbox;
pub mod mock_set_clock;
pub mod mock_set_version;
// manager calls, recorded in the snapshot
pub mod api_version;
pub mod garbage_collect;
pub mod get_netns;
pub mod get_pod_container_id;
pub mod get_pod_status;
pub mod get_pods;
pub mod kill_pod;
pub mod new_manager;
pub mod port_forward;
pub mod status;
pub mod sync_pod;
pub mod version;
// step registry: end
include!(concat!(env!("OUT_DIR"), "/step_registry.rs"));

/// The book's step reference (docs/steps.md), generated from the registry: a test holds the
/// page to it.
pub fn reference() -> String {
    let mut out = String::from(
        "| step | kind | fields | `expect:` fields | what it does |\n|---|---|---|---|---|\n",
    );
    let names = |fields: &[&str]| {
        if fields.is_empty() {
            "—".to_owned()
        } else {
            fields
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    for info in registry() {
        let fields = if info.fields.is_empty() {
            "a scalar".to_owned()
        } else {
            names(info.fields)
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            info.name,
            info.kind,
            fields,
            names(info.expect_fields),
            info.about.replace('|', "\\|")
        ));
    }
    out.push_str("\n| block | where | fields |\n|---|---|---|\n");
    let blocks: &[(&str, &str, &[&str])] = &[
        (
            "pod identity",
            "a case's `pods: {ALIAS: ...}`",
            fields_of::<crate::suite::PodIdentity>(),
        ),
        (
            "error",
            "`expect: {error: ...}` of every manager call",
            fields_of::<ErrorExpect>(),
        ),
        (
            "text",
            "`message:` of a sync result",
            fields_of::<TextExpect>(),
        ),
        (
            "pod",
            "`get_pods` `expect: {pods: {ALIAS: ...}}`",
            fields_of::<PodExpect>(),
        ),
        (
            "container status",
            "`get_pod_status` `expect: {container: {ALIAS: ...}}`",
            fields_of::<ContainerExpect>(),
        ),
        ("pod spec", "`kill_pod` `spec:`", fields_of::<SpecFields>()),
        (
            "sync result",
            "`kill_pod` `expect: {results: [...]}`",
            fields_of::<SyncResultExpect>(),
        ),
        (
            "container security",
            "`create_container` `security:`",
            fields_of::<create_container::Security>(),
        ),
        (
            "mount",
            "`create_container` `mounts: [...]`",
            fields_of::<create_container::Mount>(),
        ),
        (
            "pod security",
            "`run_sandbox` `security:`",
            fields_of::<run_sandbox::PodSecurity>(),
        ),
        (
            "dns",
            "`run_sandbox` `dns:`",
            fields_of::<run_sandbox::Dns>(),
        ),
        (
            "port",
            "`run_sandbox` `ports: [...]`",
            fields_of::<run_sandbox::Port>(),
        ),
        (
            "capabilities",
            "`create_container` `security: {capabilities: ...}`",
            fields_of::<create_container::Capabilities>(),
        ),
        (
            "selinux",
            "`create_container` `security: {selinux: ...}`",
            fields_of::<create_container::Selinux>(),
        ),
        (
            "attempts",
            "`mock_inject_error` `attempts:`",
            fields_of::<mock_inject_error::OnAttempts>(),
        ),
        (
            "terminal size",
            "`exec` and `attach` `resize: [...]`",
            fields_of::<exec::Size>(),
        ),
        (
            "stream",
            "`exec` and `attach` `expect:`",
            fields_of::<exec::StreamExpect>(),
        ),
        (
            "log line",
            "`check_log` `expect: {lines: [...]}`",
            fields_of::<check_log::LineExpect>(),
        ),
        (
            "stats filter",
            "`list_container_stats` `filter:`",
            fields_of::<list_container_stats::StatsFilter>(),
        ),
        (
            "gc policy",
            "`garbage_collect` `policy:`",
            fields_of::<garbage_collect::Policy>(),
        ),
        (
            "probes",
            "`sync_pod` `probes:`",
            fields_of::<sync_pod::Probes>(),
        ),
        (
            "round",
            "`sync_pod` `expect: {rounds: [...]}`",
            fields_of::<sync_pod::Round>(),
        ),
        (
            "step result",
            "`sync_pod` `expect: {rounds: [{results: [...]}]}`",
            fields_of::<sync_pod::ResultExpect>(),
        ),
        (
            "container seen",
            "`sync_pod` `expect: {containers: {NAME: ...}}`",
            fields_of::<sync_pod::ContainerExpect>(),
        ),
        (
            "sandbox seen",
            "`sync_pod` `expect: {sandboxes: [...]}`",
            fields_of::<sync_pod::SandboxExpect>(),
        ),
        (
            "user namespace",
            "`run_sandbox` `userns:`",
            fields_of::<run_sandbox::Userns>(),
        ),
        (
            "id mapping",
            "`run_sandbox` `userns: {uids: [...], gids: [...]}`",
            fields_of::<run_sandbox::IdMapping>(),
        ),
        (
            "container user",
            "`container_status` `expect: {user: ...}`",
            fields_of::<container_status::UserExpect>(),
        ),
    ];
    for &(block, place, fields) in blocks {
        out.push_str(&format!("| {block} | {place} | {} |\n", names(fields)));
    }
    out
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Setup => "setup",
            Kind::MockControl => "mock control",
            Kind::Manager => "manager call",
            Kind::Check => "check",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_is_the_name_serde_reads() {
        // serde lists the variants it knows when it meets an unknown one.
        let err = serde_saphyr::from_str::<Step>("no_such_step: 1")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let first_line = err.lines().next().unwrap_or_default();
        let known: BTreeSet<&str> = first_line
            .split_once("expected one of ")
            .map(|(_, list)| list.split(", ").map(|v| v.trim_matches('`')).collect())
            .unwrap_or_default();
        for info in registry() {
            assert!(
                known.contains(info.name),
                "{} is not a variant: {err}",
                info.name
            );
        }
        assert_eq!(known.len(), registry().len(), "{first_line}");
        let names: BTreeSet<&str> = registry().iter().map(|i| i.name).collect();
        assert_eq!(names.len(), registry().len(), "a name is registered twice");
    }

    #[test]
    fn the_books_step_reference_is_the_registrys() {
        let page = include_str!("../../../docs/steps.md");
        let begin = "<!-- step reference: generated by suite::step::reference() -->\n";
        let start = page.find(begin).map(|at| at + begin.len());
        let end = page.find("<!-- end of step reference -->");
        let (Some(start), Some(end)) = (start, end) else {
            panic!("docs/steps.md has no step reference between its markers")
        };
        if std::env::var_os("UPDATE_STEP_REFERENCE").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/steps.md");
            let fresh = format!("{}{}{}", &page[..start], reference(), &page[end..]);
            std::fs::write(path, fresh).expect("docs/steps.md written");
            return;
        }
        assert_eq!(
            &page[start..end],
            reference(),
            "docs/steps.md's step reference is stale; rerun with UPDATE_STEP_REFERENCE=1"
        );
    }

    #[test]
    fn the_probe_finds_a_structs_fields_and_none_for_a_scalar() {
        assert!(fields_of::<RunSandbox>().contains(&"as"));
        assert!(fields_of::<RunSandbox>().contains(&"pod"));
        assert!(fields_of::<StopSandbox>().is_empty());
    }
}
