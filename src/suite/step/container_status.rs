//! `container_status`: the runtime's `ContainerStatus` of one of the case's containers (by full
//! id or a prefix of it), checked field by field: state, exit code and reason, the order of its
//! created, started and finished times, its image, and what it echoes of its config (labels,
//! annotations, log path, mounts).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sandbox_status::{
    by_prefix, check_prefix, expect_map, expect_set_time, now_nanos, suite_labels, Presence,
};
use super::{
    check_call, is_default, CheckError, ErrorExpect, Kind, Scope, State, StepDef, TextExpect,
};
use crate::cri::v1;
use crate::manager::ContainerState;
use crate::world::{expect_eq, mismatch, show, StepError, World};

/// `container_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_status` step: `container`, `id_prefix`, `expect`"
)]
pub struct ContainerStatus {
    /// Container alias.
    pub container: String,
    /// Ask by the first this many characters of the id instead of the whole id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<usize>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ContainerStatusExpect,
}

/// What a container's log path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum LogPathExpect {
    /// The full host path of the log the container was created with.
    Echoed,
    /// Empty: the container was created without a log.
    Empty,
}

/// What `container_status` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_status` expectation: `error`, `state`, `name`, `exit_code`, `reason`, `message`, `started`, `finished`, `ordered_times`, `image`, `image_ref`, `image_id`, `labels`, `annotations`, `log_path`, `mounts`, `user`"
)]
pub struct ContainerStatusExpect {
    /// The call fails like this (e.g. `code: NotFound` after removal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// The container's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// The metadata's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The reason (`Completed`, `Error`, `OOMKilled`; empty while running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<TextExpect>,
    /// The message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<TextExpect>,
    /// `started_at` is set (true) or zero (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    /// `finished_at` is set (true) or zero (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<bool>,
    /// `created_at` is set, and `created_at <= started_at <= finished_at <= now` for those set;
    /// a finished container must have started.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ordered_times: bool,
    /// The image the status names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<TextExpect>,
    /// Whether `image_ref` is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<Presence>,
    /// An image (symbol or reference) whose ImageStatus id is the container's `image_id`, in
    /// ContainerStatus and in ListContainers (CRI 1.30's field; a runtime that leaves it
    /// empty lacks it, and the case skips).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// The labels besides the harness's own (run, case, pod and container-name labels): at
    /// least these (a runtime may add its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The annotations, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// The log path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<LogPathExpect>,
    /// The container paths of its mounts: at least these, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<Vec<String>>,
    /// The ids its first process runs with (`ContainerStatus.user.linux`); the groups in any
    /// order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserExpect>,
}

/// A container's process ids, as `LinuxContainerUser` reports them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `user`: `uid`, `gid`, `supplemental_groups`"
)]
pub struct UserExpect {
    /// The user id.
    pub uid: i64,
    /// The primary group id.
    pub gid: i64,
    /// Every group of the process, the primary one included.
    #[serde(default)]
    pub supplemental_groups: Vec<i64>,
}

impl UserExpect {
    /// Checks a reported user against this one, its groups as a set.
    fn check(&self, actual: Option<&crate::cri::v1::LinuxContainerUser>) -> Result<(), StepError> {
        let show_user = |uid: i64, gid: i64, groups: &[i64]| {
            let mut groups = groups.to_vec();
            groups.sort_unstable();
            groups.dedup();
            format!("uid {uid}, gid {gid}, supplemental_groups {groups:?}")
        };
        let expected = show_user(self.uid, self.gid, &self.supplemental_groups);
        let actual = actual.map_or_else(
            || "no user".to_owned(),
            |u| show_user(u.uid, u.gid, &u.supplemental_groups),
        );
        expect_eq("user", &expected, &actual)
    }
}

impl ContainerStatusExpect {
    fn texts(&self) -> [(&'static str, Option<&TextExpect>); 3] {
        [
            ("reason", self.reason.as_ref()),
            ("message", self.message.as_ref()),
            ("image", self.image.as_ref()),
        ]
    }
}

/// Checks that a timestamp is set (`true`) or zero (`false`).
fn expect_time_set(field: &str, wanted: bool, nanos: i64) -> Result<(), StepError> {
    if wanted {
        expect_set_time(field, nanos)
    } else {
        expect_eq(field, "0", &nanos.to_string())
    }
}

/// `created_at <= started_at <= finished_at <= now`, for the times that are set.
fn check_order(created: i64, started: i64, finished: i64) -> Result<(), StepError> {
    expect_set_time("created_at", created)?;
    let times = format!("created_at {created}, started_at {started}, finished_at {finished}");
    if started != 0 && started < created {
        return Err(mismatch("ordered_times", "created_at <= started_at", times));
    }
    if finished != 0 {
        if started == 0 {
            return Err(mismatch(
                "ordered_times",
                "a finished container that started",
                times,
            ));
        }
        if finished < started {
            return Err(mismatch(
                "ordered_times",
                "started_at <= finished_at",
                times,
            ));
        }
        if i128::from(finished) > now_nanos() {
            return Err(mismatch("ordered_times", "finished_at <= now", times));
        }
    }
    Ok(())
}

impl StepDef for ContainerStatus {
    const NAME: &'static str = "container_status";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "CRI `ContainerStatus` of a container (by id or id prefix): state, exit, times, echoed config.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ContainerStatusExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        check_prefix(self.id_prefix)?;
        for (field, text) in self.expect.texts() {
            if let Some(text) = text {
                scope.text(field, text)?;
            }
        }
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let container = world.aliases.container(&self.container)?.clone();
        let asked = by_prefix(&container.id, self.id_prefix);
        let result = world.runtime.container_status(asked).await;
        let Some(answer) = check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        let status = answer
            .status
            .ok_or_else(|| mismatch("status", "a status", "an answer without one"))?;
        let expect = &self.expect;
        expect_eq(
            "id",
            &world.alias_of(&container.id),
            &world.alias_of(&status.id),
        )?;
        if let Some(state) = expect.state {
            expect_eq(
                "state",
                state.0.name(),
                ContainerState::from_cri_container(status.state).name(),
            )?;
        }
        if let Some(name) = &expect.name {
            let actual = status.metadata.as_ref().map_or("", |m| m.name.as_str());
            expect_eq("name", name, actual)?;
        }
        if let Some(code) = expect.exit_code {
            expect_eq(
                "exit_code",
                &code.to_string(),
                &status.exit_code.to_string(),
            )?;
        }
        let image = status.image.as_ref().map_or("", |i| i.image.as_str());
        let actual_texts = [status.reason.as_str(), status.message.as_str(), image];
        for ((field, text), value) in expect.texts().into_iter().zip(actual_texts) {
            if let Some(text) = text {
                text.check(field, value)?;
            }
        }
        if let Some(started) = expect.started {
            expect_time_set("started_at", started, status.started_at)?;
        }
        if let Some(finished) = expect.finished {
            expect_time_set("finished_at", finished, status.finished_at)?;
        }
        if expect.ordered_times {
            check_order(status.created_at, status.started_at, status.finished_at)?;
        }
        if let Some(wanted) = expect.image_ref {
            let actual = if status.image_ref.is_empty() {
                Presence::Absent
            } else {
                Presence::Present
            };
            expect_eq("image_ref", &wanted.to_string(), &actual.to_string())?;
        }
        if let Some(image) = &expect.image_id {
            check_image_id(world, &container.id, image, &status.image_id).await?;
        }
        if let Some(wanted) = &expect.labels {
            expect_map(world, "labels", wanted, &suite_labels(&status.labels))?;
        }
        if let Some(wanted) = &expect.annotations {
            expect_map(world, "annotations", wanted, &status.annotations)?;
        }
        if let Some(wanted) = expect.log_path {
            let sent = match wanted {
                LogPathExpect::Echoed => container
                    .log_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .ok_or_else(|| {
                        StepError::Unsupported(format!(
                            "log_path: container `{}` was created without a log path",
                            self.container
                        ))
                    })?,
                LogPathExpect::Empty => String::new(),
            };
            if sent != status.log_path {
                return Err(mismatch(
                    "log_path",
                    format!("{sent:?}"),
                    format!("{:?}", status.log_path),
                ));
            }
        }
        if let Some(wanted) = &expect.mounts {
            let actual: Vec<String> = status
                .mounts
                .iter()
                .map(|m| m.container_path.clone())
                .collect();
            // The contract names the mounts a container was given, not their order nor that no
            // other may be listed (a runtime may report mounts of its own): a subset.
            if wanted.iter().any(|path| !actual.contains(path)) {
                return Err(mismatch(
                    "mounts",
                    format!("at least {}", show(wanted)),
                    show(&actual),
                ));
            }
            let added: Vec<&String> = actual.iter().filter(|p| !wanted.contains(p)).collect();
            if !added.is_empty() {
                world.note_observed(format!("mounts: the runtime added {added:?}"));
            }
        }
        if let Some(wanted) = &expect.user {
            wanted.check(status.user.as_ref().and_then(|u| u.linux.as_ref()))?;
        }
        Ok(())
    }
}

/// The container's `image_id` in its status and in ListContainers is the id ImageStatus
/// answers for `image`. An empty one is a runtime without CRI 1.30's field.
async fn check_image_id(
    world: &World,
    container_id: &str,
    image: &str,
    in_status: &str,
) -> Result<(), StepError> {
    let Some(found) = world.runtime.image_status(&world.image(image)).await? else {
        return Err(mismatch(
            format!("image_id: {image}"),
            "an image the runtime holds",
            "no image",
        ));
    };
    let filter = v1::ContainerFilter {
        id: container_id.to_owned(),
        ..Default::default()
    };
    let listed = world.runtime.list_containers(Some(filter)).await?;
    let Some(in_list) = listed.iter().find(|c| c.id == container_id) else {
        return Err(mismatch(
            "image_id (ListContainers)",
            "the container listed",
            "not listed",
        ));
    };
    for (field, actual) in [
        ("image_id", in_status),
        ("image_id (ListContainers)", in_list.image_id.as_str()),
    ] {
        if actual.is_empty() {
            return Err(StepError::RuntimeLacks(format!(
                "{field}: CRI 1.30's image id of a container is empty"
            )));
        }
        expect_eq(format!("{field}, {image}'s id"), &found.id, actual)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[test]
    fn a_user_matches_whatever_the_order_of_its_groups() {
        let wanted = UserExpect {
            uid: 1000,
            gid: 1000,
            supplemental_groups: vec![1000, 1234, 50000],
        };
        let reported = |groups: Vec<i64>| crate::cri::v1::LinuxContainerUser {
            uid: 1000,
            gid: 1000,
            supplemental_groups: groups,
        };
        assert!(wanted
            .check(Some(&reported(vec![50000, 1000, 1234])))
            .is_ok());
        assert!(wanted.check(Some(&reported(vec![1000, 1234]))).is_err());
        assert!(wanted.check(None).is_err());
    }

    #[rstest]
    #[case::created_only(10, 0, 0, None)]
    #[case::running(10, 20, 0, None)]
    #[case::exited(10, 20, 30, None)]
    #[case::same_instant(10, 10, 10, None)]
    #[case::started_before_created(20, 10, 0, Some("created_at <= started_at"))]
    #[case::finished_before_started(10, 30, 20, Some("started_at <= finished_at"))]
    #[case::finished_without_start(10, 0, 20, Some("a finished container that started"))]
    #[case::never_created(0, 0, 0, Some("created_at: expected set"))]
    fn container_times_must_be_ordered(
        #[case] created: i64,
        #[case] started: i64,
        #[case] finished: i64,
        #[case] failure: Option<&str>,
    ) {
        match (check_order(created, started, finished), failure) {
            (Ok(()), None) => {}
            (Err(err), Some(part)) => {
                assert!(err.to_string().contains(part), "{err} lacks {part:?}")
            }
            (result, _) => panic!("got {result:?}, expected failure {failure:?}"),
        }
    }
}
