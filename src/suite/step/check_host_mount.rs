//! `check_host_mount`: says from the host whether a path under the case's host directory is a
//! mount point (as the harness's `/proc/self/mountinfo` lists it) and whether it holds
//! anything, so a mount a container made is seen (or not) where a Bidirectional propagation
//! would bring it.

use serde::{Deserialize, Serialize};

use super::create_container::is_inner_path;
use super::{is_default, CheckError, Kind, PathRule, Scope, StepDef};
use crate::host::mounts as host;
use crate::world::{mismatch, StepError, World};

/// `check_host_mount`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `check_host_mount` step: `path`, `expect`"
)]
pub struct CheckHostMount {
    /// A path relative to the case's host directory.
    pub path: String,
    /// Expectations; without any, the path must be a mount point.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: HostMountExpect,
}

/// What `check_host_mount` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `check_host_mount` expectation: `mount_point`, `fs_type`, `propagation`, `file`, `empty`"
)]
pub struct HostMountExpect {
    /// Whether the path is a mount point (default: it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_point: Option<bool>,
    /// The filesystem type of the mount on top of the path (`tmpfs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    /// Its propagation as mount(8) prints it: `shared`, `slave`, `shared,slave`, `private`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation: Option<String>,
    /// A file the path holds, relative to it (read through whatever is mounted there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Whether the directory is empty (critest's check: no entry at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty: Option<bool>,
}

impl StepDef for CheckHostMount {
    const NAME: &'static str = "check_host_mount";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Checks from the host (its mountinfo) whether a path under the case's host directory is a mount point, its type and propagation, and whether it holds a file.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<HostMountExpect>()
    }

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        if !is_inner_path(&self.path) {
            return Err(CheckError::path(
                "path",
                &self.path,
                PathRule::Inside("the case's host directory"),
            ));
        }
        if let Some(file) = self.expect.file.as_deref().filter(|f| !is_inner_path(f)) {
            return Err(CheckError::path(
                "expect.file",
                file,
                PathRule::Inside("`path`"),
            ));
        }
        let mount_facts = self.expect.fs_type.is_some() || self.expect.propagation.is_some();
        if self.expect.mount_point == Some(false) && mount_facts {
            return Err(CheckError::rule(
                "",
                "`expect` cannot want the type or propagation of a path that is no mount point",
            ));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let path = world.host_path(&self.path)?;
        let field = format!("check_host_mount {}", self.path);
        let table = host::mount_table().map_err(|err| {
            StepError::Unsupported(format!("{field}: cannot read the host's mountinfo: {err}"))
        })?;
        // The kernel lists resolved paths; a path that does not exist is no mount point.
        // Of mounts stacked on the path, the one listed last is on top.
        let top = path
            .canonicalize()
            .ok()
            .and_then(|listed| table.iter().rfind(|m| m.mount_point == listed));
        let wanted = self.expect.mount_point.unwrap_or(true);
        if top.is_some() != wanted {
            let say = |m: bool| if m { "a mount point" } else { "no mount point" };
            return Err(mismatch(
                format!("{field}.mount_point"),
                say(wanted),
                say(top.is_some()),
            ));
        }
        if let Some(top) = top {
            if let Some(fs_type) = &self.expect.fs_type {
                if &top.fs_type != fs_type {
                    return Err(mismatch(
                        format!("{field}.fs_type"),
                        fs_type,
                        top.fs_type.clone(),
                    ));
                }
            }
            if let Some(propagation) = &self.expect.propagation {
                if &top.propagation() != propagation {
                    return Err(mismatch(
                        format!("{field}.propagation"),
                        propagation,
                        top.propagation(),
                    ));
                }
            }
        }
        if let Some(file) = &self.expect.file {
            if std::fs::symlink_metadata(path.join(file)).is_err() {
                return Err(mismatch(
                    format!("{field}.file"),
                    format!("{file} there"),
                    "absent",
                ));
            }
        }
        if let Some(empty) = self.expect.empty {
            let entries = std::fs::read_dir(&path)
                .map_err(|err| mismatch(format!("{field}.empty"), "a directory", err.to_string()))?
                .count();
            if (entries == 0) != empty {
                let say = |e: bool| if e { "empty" } else { "entries" };
                return Err(mismatch(
                    format!("{field}.empty"),
                    say(empty),
                    format!("{} ({entries} entries)", say(entries == 0)),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::plain("{path: src/inner}", None)]
    #[case::full(
        "{path: src, expect: {fs_type: tmpfs, propagation: shared, file: flag, empty: false}}",
        None
    )]
    #[case::outside("{path: ../x}", Some("stay inside the case's host directory"))]
    #[case::file_outside("{path: a, expect: {file: /etc/passwd}}", Some("stay inside `path`"))]
    #[case::type_of_no_mount(
        "{path: a, expect: {mount_point: false, fs_type: tmpfs}}",
        Some("no mount point")
    )]
    fn the_loader_refuses_paths_outside_and_contradictions(
        #[case] yaml: &str,
        #[case] refusal: Option<&str>,
    ) {
        let step: CheckHostMount = serde_saphyr::from_str(yaml).unwrap();
        match (step.check(&mut Scope::default()), refusal) {
            (Ok(()), None) => {}
            (Err(err), Some(why)) => assert!(err.to_string().contains(why), "{err}"),
            (outcome, _) => panic!("{yaml}: {outcome:?}"),
        }
    }
}
