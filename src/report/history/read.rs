//! Reading one night: a directory holding run reports (one lane per report, known by what ran,
//! as `report diff` pairs them) and bench reports (`bench --json`), boiled down on the spot to
//! what a history keeps, so a thousand nights fit in memory.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::report::bench;
use crate::report::diff;
use crate::report::lane::Placed;
use crate::report::merge::model::runtime_label;
use crate::report::merge::read::{self as report_read, ReadError};
use crate::report::model::{RunReport, Verdict};

/// One case's result in one night: `(suite/case, verdict, reason)`.
pub type CaseResult = (String, Verdict, Option<String>);

/// One lane's run in a night.
#[derive(Debug, Clone)]
pub struct LaneRun {
    /// The lane's label, once the nights' lanes are resolved (see [`crate::report::lane`]).
    pub lane: String,
    /// Where the report was and what ran.
    pub placed: Placed,
    /// The runtime's name and version from its Version answer.
    pub runtime: String,
    /// Every case's result, in the report's order.
    pub cases: Vec<CaseResult>,
}

/// One operation's samples from a bench report: `(benchmark, operation, samples in ms)`.
pub type OperationSamples = (String, String, Vec<f64>);

/// One bench report of a night.
#[derive(Debug, Clone)]
pub struct BenchRun {
    /// The runtime benchmarked: its name and version, else its endpoint; with the handler.
    pub runtime: String,
    /// Every operation's samples.
    pub operations: Vec<OperationSamples>,
}

/// A night as read.
#[derive(Debug, Clone)]
pub struct Night {
    /// The directory's name.
    pub name: String,
    /// The directory.
    pub dir: PathBuf,
    /// The earliest start any of its reports recorded, as written.
    pub started_at: Option<String>,
    /// The same, as a time.
    pub start: Option<SystemTime>,
    /// Its run reports.
    pub runs: Vec<LaneRun>,
    /// Its bench reports.
    pub benches: Vec<BenchRun>,
    /// Files that held neither kind of report, and start times that did not parse: why.
    pub passed_over: Vec<String>,
}

/// The label of the runtime a bench report measured.
pub fn bench_runtime(report: &bench::Report) -> String {
    let mut label = match (&report.runtime_name, &report.runtime_version) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name.clone(),
        _ => report.endpoint.clone(),
    };
    if !report.runtime_handler.is_empty() {
        label.push_str(&format!(" (handler {})", report.runtime_handler));
    }
    label
}

fn lane_run(placed: Placed, report: RunReport) -> LaneRun {
    LaneRun {
        lane: String::new(),
        placed,
        runtime: runtime_label(&report.node),
        cases: report
            .cases
            .into_iter()
            .map(|case| {
                let reason = case.outcome.reason().map(str::to_owned);
                (case.full_name(), case.outcome.verdict(), reason)
            })
            .collect(),
    }
}

fn bench_run(report: bench::Report) -> BenchRun {
    BenchRun {
        runtime: bench_runtime(&report),
        operations: report
            .benchmarks
            .into_iter()
            .flat_map(|b| {
                let name = b.name;
                b.operations
                    .into_iter()
                    .map(move |op| (name.clone(), op.name, op.samples_ms))
            })
            .collect(),
    }
}

/// Reads the night in `dir`: every `*.json` and `*.log` file under it, each a run report, a
/// bench report or passed over (with a line in [`Night::passed_over`]).
pub fn night(dir: &Path) -> Result<Night, ReadError> {
    let meta = std::fs::metadata(dir).map_err(|source| ReadError::Io {
        path: dir.to_owned(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(ReadError::Io {
            path: dir.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let (files, mut errors) = report_read::files(&[dir.to_owned()]);
    if let Some(error) = errors.drain(..).next() {
        return Err(error);
    }
    let mut night = Night {
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string()),
        dir: dir.to_owned(),
        started_at: None,
        start: None,
        runs: Vec::new(),
        benches: Vec::new(),
        passed_over: Vec::new(),
    };
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| ReadError::Io {
            path: file.clone(),
            source,
        })?;
        let started_at = if let Ok(report) = report_read::parse(&text) {
            let started_at = report.started_at.clone();
            night
                .runs
                .push(lane_run(diff::placed(dir, &file, &report), report));
            started_at
        } else if let Ok(report) = serde_json::from_str::<bench::Report>(&text) {
            let started_at = report.started_at.clone();
            night.benches.push(bench_run(report));
            started_at
        } else {
            night.passed_over.push(format!(
                "{} holds neither a run report nor a bench report",
                file.display()
            ));
            continue;
        };
        let Some(text) = started_at else { continue };
        match humantime::parse_rfc3339_weak(&text) {
            Ok(time) if night.start.is_none_or(|s| time < s) => {
                night.start = Some(time);
                night.started_at = Some(text);
            }
            Ok(_) => {}
            Err(_) => night.passed_over.push(format!(
                "{}: started_at {text:?} is not an RFC 3339 UTC time",
                file.display()
            )),
        }
    }
    Ok(night)
}
