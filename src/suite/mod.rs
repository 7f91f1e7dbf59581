//! Suites: declarative YAML files of cases (setup steps, manager calls, expectations) that the
//! runner executes. The suites under `suites/` are embedded in the binary; `--suites DIR` adds
//! more. A bad file is reported with file, line and column and the other files still load.

mod embedded;
mod load;
pub mod step;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Deserialize;

pub use crate::world::PodIdentity;
pub use embedded::EMBEDDED;
pub use load::{load, load_dir, load_embedded, parse, Loaded};
pub use step::Step;

/// A suite: cases that check one documented behaviour.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The suite's name, unique; snapshots are named after it.
    pub name: String,
    /// What it checks and which spec rule it follows.
    pub about: String,
    /// Tags every case inherits.
    pub tags: Vec<String>,
    /// The cases, in file order.
    pub cases: Vec<Case>,
    /// The file it came from, as shown to users (`suites/x.yaml` for embedded suites).
    pub source: String,
}

/// One case: steps run in order against a fresh state.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Name, unique within its suite.
    pub name: String,
    /// What it shows, optional.
    pub about: Option<String>,
    /// Its own tags plus the suite's.
    pub tags: Vec<String>,
    /// What it needs from the target beyond plain CRI.
    pub needs: Vec<Need>,
    /// Pod identities the case fixes, by pod alias (others are made unique per run).
    pub pods: BTreeMap<String, PodIdentity>,
    /// The steps.
    pub steps: Vec<Step>,
    /// Line of its `name:` in the file (1-based), for messages.
    pub line: usize,
    /// Line of each step (1-based), for messages.
    pub step_lines: Vec<usize>,
}

impl Case {
    /// True when it needs the mock's control service.
    pub fn needs_mock_control(&self) -> bool {
        self.needs.contains(&Need::MockControl)
    }

    /// `suite/case`, what `--focus` and `--skip` match.
    pub fn full_name(&self, suite: &Suite) -> String {
        format!("{}/{}", suite.name, self.name)
    }

    /// The line of step `index` (0-based), or the case's line.
    pub fn step_line(&self, index: usize) -> usize {
        self.step_lines.get(index).copied().unwrap_or(self.line)
    }
}

/// A capability a case needs from the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// The mock runtime's control service (error injection, version, clock, seeding).
    MockControl,
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Need::MockControl => f.write_str("mock_control"),
        }
    }
}

/// A suite file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The file or directory could not be read.
    #[error("cannot read suite path {}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The YAML does not match the suite format.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// The file as shown to users.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong, with the valid choices where there are any.
        message: String,
    },
    /// The file parses but a case is inconsistent (an unknown alias, a mock step without the
    /// mark, a duplicate name).
    #[error("{file}:{line}: {message}")]
    Invalid {
        /// The file as shown to users.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Two files of one directory define the same suite.
    #[error("suite `{suite}` is defined in both {first} and {second}")]
    Duplicate {
        /// The suite name.
        suite: String,
        /// The file seen first.
        first: String,
        /// The other file.
        second: String,
    },
}

/// All tags of all cases, sorted, for `--tags` help and errors.
pub fn all_tags(suites: &[Suite]) -> BTreeSet<String> {
    suites
        .iter()
        .flat_map(|s| s.cases.iter())
        .flat_map(|c| c.tags.iter().cloned())
        .collect()
}
