//! `runtime_config`: the runtime's CRI `RuntimeConfig`, asked directly. It checks that the
//! answer names the Linux configuration (the cgroup driver the kubelet builds its cgroups for)
//! and, with `unchanged`, that it is the answer the case's first `runtime_config` step got, as
//! the kubelet asks once and assumes it static. A runtime that answers Unimplemented lacks the
//! RPC: cases declare `needs: [runtime_config]`.

use serde::{Deserialize, Serialize};

use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{expect_eq, mismatch, StepError, World};

/// `runtime_config`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `runtime_config` step: `expect`")]
pub struct RuntimeConfig {
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: RuntimeConfigExpect,
}

/// What `runtime_config` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `runtime_config` expectation: `linux`, `unchanged`"
)]
pub struct RuntimeConfigExpect {
    /// The answer carries the Linux configuration, with a cgroup driver CRI names.
    #[serde(default, skip_serializing_if = "is_default")]
    pub linux: bool,
    /// The answer is the one the case's first `runtime_config` step got.
    #[serde(default, skip_serializing_if = "is_default")]
    pub unchanged: bool,
}

/// What the case's first `runtime_config` step got, kept for `unchanged`.
struct FirstAnswer(v1::RuntimeConfigResponse);

/// The name a cgroup driver value shows as.
pub(crate) fn driver_name(driver: i32) -> String {
    v1::CgroupDriver::try_from(driver).map_or_else(
        |_| format!("unknown driver {driver}"),
        |d| d.as_str_name().to_owned(),
    )
}

fn show(answer: &v1::RuntimeConfigResponse) -> String {
    match &answer.linux {
        None => "no linux configuration".to_owned(),
        Some(linux) => format!("cgroup_driver {}", driver_name(linux.cgroup_driver)),
    }
}

impl StepDef for RuntimeConfig {
    const NAME: &'static str = "runtime_config";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "CRI `RuntimeConfig`: checks it names the Linux cgroup driver and, with `unchanged`, that it answers as at the case's first `runtime_config` step.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<RuntimeConfigExpect>()
    }

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let answer = world.runtime.runtime_config().await?;
        if self.expect.linux {
            let Some(linux) = &answer.linux else {
                return Err(mismatch(
                    "linux",
                    "a Linux configuration with a cgroup driver",
                    show(&answer),
                ));
            };
            if v1::CgroupDriver::try_from(linux.cgroup_driver).is_err() {
                return Err(mismatch(
                    "linux.cgroup_driver",
                    "SYSTEMD or CGROUPFS",
                    driver_name(linux.cgroup_driver),
                ));
            }
        }
        match world
            .kept
            .get(Self::NAME)
            .and_then(|k| k.downcast_ref::<FirstAnswer>())
        {
            Some(FirstAnswer(first)) => {
                if self.expect.unchanged {
                    expect_eq("unchanged", &show(first), &show(&answer))?;
                }
            }
            None if self.expect.unchanged => {
                return Err(StepError::Unsupported(
                    "runtime_config: `unchanged` needs an earlier runtime_config step in the case"
                        .to_owned(),
                ))
            }
            None => {
                world.kept.insert(Self::NAME, Box::new(FirstAnswer(answer)));
            }
        }
        Ok(())
    }
}
