//! Property runs of the manager against generated runtime states: scenarios and their proptest
//! strategies, an independent reference model of what the runtime holds, applying scenarios over
//! CRI, the property checkers, the suite-file printer and the mock-versus-runtime differential.

mod apply;
pub mod check;
pub mod differential;
mod error;
mod model;
mod property;
mod scenario;
mod suite_out;

pub use apply::{
    apply, control_client, describe, read_state, sandbox_config, Applied, IpReads, RuntimeState,
    Target, INJECTED_MESSAGE,
};
pub use error::PropError;
pub use model::{
    Action, ContainerModel, ExpectedKill, ExpectedPod, ExpectedStatus, Model, Naming, Outcome,
    PodKey, Refusal, RunningView, SandboxModel, Step, CLOCK_BASE_SECONDS,
};
pub use property::{
    kill_key, kill_spec, run_case, running_pod, Case, Property, VERSION_RUNTIME_NAME,
};
pub use scenario::{
    faults, kill_plan, scenario, version_string, Faults, KillPlan, KillTarget, Op, PodLabels,
    Profile, Scenario, CONTAINER_NAMES, MAX_PODS, MAX_SANDBOXES_PER_POD,
};
pub use suite_out::{scenario_of, suite_case, suite_file, SuiteCase};
