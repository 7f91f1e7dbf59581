//! `report history`: a series of nights, each a directory of run reports (one lane per
//! report, known by what ran) and bench reports, read into one [`History`] and written as one
//! static page: the case × night grid per lane, the cases failing in the latest night with the
//! night their streak began, each case's flake rate, and the bench figures over time with a
//! slowdown check.

use std::path::{Path, PathBuf};

pub mod generate;
pub mod html;
pub mod model;
pub mod read;
pub mod stats;
pub mod trend;

pub use model::{History, Order};

use super::lane::{self, LaneError};
use super::merge::read::ReadError;
use super::ReportError;

/// Nights that give no history.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A night could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Two reports of a night could not be told apart.
    #[error(transparent)]
    Lanes(#[from] LaneError),
}

/// The page `report history` writes into its output directory.
pub const PAGE: &str = "index.html";

/// Reads every night (on all cores: at a thousand nights the reading is most of the work),
/// pairs their lanes by what ran and builds the history. A night that cannot be read stops
/// it: a gap would mislead streaks.
pub fn read_all(dirs: &[PathBuf]) -> Result<History, HistoryError> {
    let nights = super::read_in_parallel(dirs, read::night, |path| ReadError::NoReport {
        path: path.to_owned(),
        source: None,
    });
    let mut nights: Vec<read::Night> = nights.into_iter().collect::<Result<_, _>>()?;
    let placed: Vec<Vec<lane::Placed>> = nights
        .iter()
        .map(|night| night.runs.iter().map(|run| run.placed.clone()).collect())
        .collect();
    for (night, keys) in nights.iter_mut().zip(lane::resolve(&placed)?) {
        for (run, key) in night.runs.iter_mut().zip(keys) {
            run.lane = key.label();
        }
    }
    Ok(model::build(nights))
}

/// Writes the page for `history` into `dir` (created if needed); answers its path.
pub fn write(dir: &Path, history: &History) -> Result<PathBuf, ReportError> {
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(fail(dir))?;
    let path = dir.join(PAGE);
    std::fs::write(&path, html::render(history)?).map_err(fail(&path))?;
    Ok(path)
}

/// The history as text: the order, the cases failing in the latest night, the flakes and the
/// bench checks that flagged or noted a change. What `report history` prints.
pub fn text(history: &History) -> String {
    let night = |at: usize| {
        let info = &history.nights[at];
        match &info.started_at {
            Some(start) => format!("{} ({start})", info.name),
            None => info.name.clone(),
        }
    };
    let mut out = format!(
        "{} nights, {} lanes, ordered by {}\n",
        history.nights.len(),
        history.lanes.len(),
        match &history.order {
            Order::StartTime => "start time".to_owned(),
            Order::DirectoryName { without_start } => format!(
                "directory name: no start time recorded in {}",
                without_start.join(", ")
            ),
        }
    );
    out.push_str(&format!(
        "failing in the latest night ({}):\n",
        history.failing.len()
    ));
    for f in &history.failing {
        let first_line = f
            .message
            .as_deref()
            .and_then(|m| m.lines().next())
            .unwrap_or_default();
        out.push_str(&format!(
            "  {}: {} failing since {}, {} nights: {first_line}\n",
            f.lane,
            f.case,
            night(f.since),
            f.nights
        ));
    }
    out.push_str(&format!("flaky ({}):\n", history.flakes.len()));
    for f in &history.flakes {
        out.push_str(&format!(
            "  {}: {} {} of {} nights ({:.1} %)\n",
            f.lane,
            f.case,
            f.flakes,
            f.runs,
            f.rate * 100.0
        ));
    }
    let changed: Vec<&trend::Series> = history
        .series
        .iter()
        .filter(|s| {
            matches!(
                s.check.status,
                trend::Status::Slower | trend::Status::Faster
            )
        })
        .collect();
    out.push_str(&format!("bench changes ({}):\n", changed.len()));
    for s in changed {
        let c = &s.check;
        out.push_str(&format!(
            "  {} {}/{}: {} in {}, p50 {:.2} ms outside {:.2}..{:.2} ms, p = {:.1e}\n",
            s.runtime,
            s.benchmark,
            s.operation,
            if c.status == trend::Status::Slower {
                "SLOWER"
            } else {
                "faster"
            },
            night(c.night),
            c.latest,
            c.low.unwrap_or(f64::NAN),
            c.high.unwrap_or(f64::NAN),
            c.p.unwrap_or(f64::NAN)
        ));
    }
    out
}
