//! The alias ledger of a case: which sandbox and container ids its aliases stand for, in the
//! order the case made them, and how an id reads back in suite terms.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::check::StepError;
use crate::cri::v1;

/// A sandbox the case made or seeded.
#[derive(Debug, Clone)]
pub struct SandboxRef {
    /// The case's alias.
    pub alias: String,
    /// The runtime's id.
    pub id: String,
    /// The pod alias it belongs to.
    pub pod: String,
    /// Whether it shares the node's network.
    pub host_network: bool,
    /// The config it was run with (empty for seeded ones).
    pub config: v1::PodSandboxConfig,
    /// Its log directory on the host, when the case gave it one.
    pub log_directory: Option<PathBuf>,
}

/// A container the case made or seeded.
#[derive(Debug, Clone)]
pub struct ContainerRef {
    /// The case's alias.
    pub alias: String,
    /// The runtime's id.
    pub id: String,
    /// Its container name.
    pub name: String,
    /// The image it was asked to run.
    pub image: String,
    /// Its log file on the host, when its sandbox has a log directory.
    pub log_path: Option<PathBuf>,
}

/// Sandboxes and containers by alias, in creation order.
#[derive(Debug, Default)]
pub(crate) struct Aliases {
    pub sandboxes: Vec<SandboxRef>,
    pub containers: Vec<ContainerRef>,
    /// Seed for made-up ids: the run and case.
    seed: String,
}

impl Aliases {
    /// An empty ledger whose made-up ids are unique to `run_id`'s case `case_no`.
    pub fn new(run_id: &str, case_no: usize) -> Self {
        Self {
            seed: format!("{run_id}/{case_no}"),
            ..Self::default()
        }
    }

    /// The sandbox of an alias.
    pub fn sandbox(&self, alias: &str) -> Result<&SandboxRef, StepError> {
        self.sandboxes
            .iter()
            .find(|s| s.alias == alias)
            .ok_or_else(|| StepError::Unknown(format!("no sandbox `{alias}`")))
    }

    /// The container of an alias.
    pub fn container(&self, alias: &str) -> Result<&ContainerRef, StepError> {
        self.containers
            .iter()
            .find(|c| c.alias == alias)
            .ok_or_else(|| StepError::Unknown(format!("no container `{alias}`")))
    }

    /// The id a mock fault aims at: the one `alias` names, or "" (every call) without one.
    pub fn target_id(&self, alias: Option<&str>) -> Result<String, StepError> {
        alias.map_or_else(|| Ok(String::new()), |alias| self.id(alias))
    }

    /// The id of the sandbox or container an alias names (aliases are unique across both).
    pub fn id(&self, alias: &str) -> Result<String, StepError> {
        self.sandboxes
            .iter()
            .find(|s| s.alias == alias)
            .map(|s| s.id.clone())
            .or_else(|| {
                self.containers
                    .iter()
                    .find(|c| c.alias == alias)
                    .map(|c| c.id.clone())
            })
            .ok_or_else(|| StepError::Unknown(format!("no sandbox or container `{alias}`")))
    }

    /// The id a sandbox alias has, or the one a seeded container makes up for a missing one.
    pub fn sandbox_id_or_made_up(&self, alias: &str) -> String {
        self.sandbox(alias)
            .map(|s| s.id.clone())
            .unwrap_or_else(|_| self.made_up_id(alias))
    }

    /// A stable 64-hex id for a seeded object.
    pub fn made_up_id(&self, alias: &str) -> String {
        hex::encode(Sha256::digest(format!("{}/{alias}", self.seed)))
    }

    /// True for an id the case made.
    pub fn is_known(&self, id: &str) -> bool {
        self.sandboxes.iter().any(|s| s.id == id) || self.containers.iter().any(|c| c.id == id)
    }

    /// The position the case made an id in (sandboxes first), unknown ids last.
    pub fn rank(&self, id: &str) -> usize {
        self.sandboxes
            .iter()
            .position(|s| s.id == id)
            .or_else(|| {
                self.containers
                    .iter()
                    .position(|c| c.id == id)
                    .map(|i| i + self.sandboxes.len())
            })
            .unwrap_or(usize::MAX)
    }

    /// The alias of an id, if the case made it.
    pub fn alias_of(&self, id: &str) -> Option<&str> {
        self.sandboxes
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.alias.as_str())
            .or_else(|| {
                self.containers
                    .iter()
                    .find(|c| c.id == id)
                    .map(|c| c.alias.as_str())
            })
    }

    /// A container's alias by its name or id.
    pub fn container_alias_of(&self, name_or_id: &str) -> Option<&str> {
        self.containers
            .iter()
            .find(|c| c.name == name_or_id || c.id == name_or_id)
            .map(|c| c.alias.as_str())
    }
}
