//! A history: the nights in order, each lane's case × night grid, the cases failing in the
//! latest night with the night their streak began, and each case's flake rate.
//!
//! A night counts as a flake of a case when the case was flaky that night (it failed and
//! passed within the run), or when its verdict flipped between passing and failing against
//! both neighbours: a failure between two passing nights, or a pass between two failing ones.
//! Neighbours are the nearest nights on which the case ran; nights it was skipped, interrupted
//! or absent are passed over. The rate is flakes over the nights the case ran.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::read::Night;
use super::trend::{self, Series};
use crate::report::model::Verdict;

/// The words the page and the text use for the flake rate.
pub const FLAKE_DEFINITION: &str = "A night counts as a flake of a case when the case was flaky that night \
(it failed and passed within the run), or when its verdict flipped between passing and failing against \
both neighbouring nights: a failure between two passing nights, or a pass between two failing ones. \
Neighbours are the nearest nights on which the case ran; nights it was skipped, interrupted or absent are \
passed over. Flake rate = flakes / nights the case ran (not skipped or interrupted).";

/// How the nights were ordered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum Order {
    /// By the start time their reports recorded.
    StartTime,
    /// By directory name, because these nights recorded no start time.
    DirectoryName {
        /// The nights without one.
        without_start: Vec<String>,
    },
}

/// A night of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NightInfo {
    /// Its directory's name.
    pub name: String,
    /// Its start, as recorded.
    pub started_at: Option<String>,
}

/// A case's result in a night: its verdict and its message (an index into
/// [`History::strings`]), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// The verdict.
    pub verdict: Verdict,
    /// The message's index into the history's strings.
    pub message: Option<u32>,
}

/// One case's row of a lane's grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `suite/case`.
    pub case: String,
    /// One per night: none where the lane did not run it.
    pub cells: Vec<Option<Cell>>,
}

/// One lane's grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    /// The lane: what ran (see [`crate::report::lane`]).
    pub name: String,
    /// The runtimes it ran against, in the order first seen.
    pub runtimes: Vec<String>,
    /// Its cases, by name.
    pub rows: Vec<Row>,
}

/// A case failing in the latest night.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failing {
    /// The lane.
    pub lane: String,
    /// `suite/case`.
    pub case: String,
    /// The night its current failing streak began.
    pub since: usize,
    /// Nights it failed in the streak.
    pub nights: usize,
    /// The latest night's message.
    pub message: Option<String>,
}

/// A case's flakes over the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flake {
    /// The lane.
    pub lane: String,
    /// `suite/case`.
    pub case: String,
    /// Nights counted as flakes.
    pub flakes: usize,
    /// Nights it ran.
    pub runs: usize,
    /// `flakes / runs`.
    pub rate: f64,
}

/// Everything the page and the summary show.
#[derive(Debug, Clone)]
pub struct History {
    /// The nights, oldest first.
    pub nights: Vec<NightInfo>,
    /// How they were ordered.
    pub order: Order,
    /// Each lane's grid, by name.
    pub lanes: Vec<Lane>,
    /// Messages, each stored once.
    pub strings: Vec<String>,
    /// Cases failing in the latest night, by lane and case.
    pub failing: Vec<Failing>,
    /// Cases with at least one flake, highest rate first.
    pub flakes: Vec<Flake>,
    /// The bench figures.
    pub series: Vec<Series>,
    /// Files passed over and other problems, for the reader.
    pub problems: Vec<String>,
}

/// What a verdict means for streaks and flakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Pass,
    Fail,
    Flaky,
    /// Ran, but neither passed nor failed anew (a listed finding).
    Other,
    /// Did not run.
    NotRun,
}

fn class(verdict: Verdict) -> Class {
    match verdict {
        Verdict::Passed | Verdict::Warning => Class::Pass,
        Verdict::Failed | Verdict::Error => Class::Fail,
        Verdict::Known => Class::Other,
        // A signal cut it short: no evidence either way, like a skip.
        Verdict::Skipped | Verdict::Interrupted => Class::NotRun,
        Verdict::Flaky => Class::Flaky,
    }
}

/// Orders `nights` (by start time when every night has one, else by directory name) and builds
/// the history.
pub fn build(mut nights: Vec<Night>) -> History {
    let mut without_start: Vec<String> = nights
        .iter()
        .filter(|n| n.start.is_none())
        .map(|n| n.name.clone())
        .collect();
    without_start.sort();
    let order = if without_start.is_empty() {
        nights.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.name.cmp(&b.name)));
        Order::StartTime
    } else {
        nights.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.dir.cmp(&b.dir)));
        Order::DirectoryName { without_start }
    };
    let count = nights.len();
    let mut strings: Vec<String> = Vec::new();
    let mut interned: HashMap<String, u32> = HashMap::new();
    // Per lane: its runtimes, and per case its cells.
    type Cells = BTreeMap<String, Vec<Option<Cell>>>;
    let mut lanes: BTreeMap<String, (Vec<String>, Cells)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (at, night) in nights.iter_mut().enumerate() {
        problems.append(&mut night.passed_over);
        for run in night.runs.drain(..) {
            let (runtimes, rows) = lanes.entry(run.lane).or_default();
            if !runtimes.contains(&run.runtime) {
                runtimes.push(run.runtime);
            }
            for (case, verdict, reason) in run.cases {
                let message = reason.map(|text| {
                    *interned.entry(text).or_insert_with_key(|text| {
                        strings.push(text.clone());
                        u32::try_from(strings.len() - 1).unwrap_or(u32::MAX)
                    })
                });
                rows.entry(case).or_insert_with(|| vec![None; count])[at] =
                    Some(Cell { verdict, message });
            }
        }
    }
    let series = trend::series(&nights);
    let lanes: Vec<Lane> = lanes
        .into_iter()
        .map(|(name, (runtimes, rows))| Lane {
            name,
            runtimes,
            rows: rows
                .into_iter()
                .map(|(case, cells)| Row { case, cells })
                .collect(),
        })
        .collect();
    let mut failing = Vec::new();
    let mut flakes = Vec::new();
    for lane in &lanes {
        for row in &lane.rows {
            if let Some((since, nights)) = streak(&row.cells) {
                let message = row.cells[count - 1]
                    .and_then(|c| c.message)
                    .and_then(|m| strings.get(m as usize).cloned());
                failing.push(Failing {
                    lane: lane.name.clone(),
                    case: row.case.clone(),
                    since,
                    nights,
                    message,
                });
            }
            let (flaked, runs) = flake_count(&row.cells);
            if flaked > 0 {
                flakes.push(Flake {
                    lane: lane.name.clone(),
                    case: row.case.clone(),
                    flakes: flaked,
                    runs,
                    rate: flaked as f64 / runs as f64,
                });
            }
        }
    }
    flakes.sort_by(|a, b| {
        b.rate
            .total_cmp(&a.rate)
            .then_with(|| b.flakes.cmp(&a.flakes))
            .then_with(|| (&a.lane, &a.case).cmp(&(&b.lane, &b.case)))
    });
    History {
        nights: nights
            .into_iter()
            .map(|n| NightInfo {
                name: n.name,
                started_at: n.started_at,
            })
            .collect(),
        order,
        lanes,
        strings,
        failing,
        flakes,
        series,
        problems,
    }
}

fn class_of(cell: &Option<Cell>) -> Class {
    cell.map_or(Class::NotRun, |c| class(c.verdict))
}

/// `(first night, failing nights)` of the streak a case failing in the latest night is in;
/// none when it does not fail there. Nights it did not run do not break the streak.
fn streak(cells: &[Option<Cell>]) -> Option<(usize, usize)> {
    let last = cells.len().checked_sub(1)?;
    if class_of(&cells[last]) != Class::Fail {
        return None;
    }
    let mut since = last;
    let mut nights = 1;
    for at in (0..last).rev() {
        match class_of(&cells[at]) {
            Class::NotRun => {}
            Class::Fail => {
                since = at;
                nights += 1;
            }
            _ => break,
        }
    }
    Some((since, nights))
}

/// `(flakes, nights run)` of one case, as [`FLAKE_DEFINITION`] says.
fn flake_count(cells: &[Option<Cell>]) -> (usize, usize) {
    let ran: Vec<Class> = cells
        .iter()
        .map(class_of)
        .filter(|c| *c != Class::NotRun)
        .collect();
    let flakes = (0..ran.len())
        .filter(|&i| {
            let flip = |this: Class, other: Class| {
                ran[i] == this
                    && i > 0
                    && ran[i - 1] == other
                    && ran.get(i + 1).is_some_and(|next| *next == other)
            };
            ran[i] == Class::Flaky
                || flip(Class::Fail, Class::Pass)
                || flip(Class::Pass, Class::Fail)
        })
        .count();
    (flakes, ran.len())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn cells(pattern: &str) -> Vec<Option<Cell>> {
        pattern
            .chars()
            .map(|c| {
                let verdict = match c {
                    'p' => Verdict::Passed,
                    'f' => Verdict::Failed,
                    'e' => Verdict::Error,
                    'w' => Verdict::Warning,
                    'k' => Verdict::Known,
                    's' => Verdict::Skipped,
                    'y' => Verdict::Flaky,
                    'i' => Verdict::Interrupted,
                    _ => return None,
                };
                Some(Cell {
                    verdict,
                    message: None,
                })
            })
            .collect()
    }

    #[rstest]
    #[case::passing_now("ffp", None)]
    #[case::failing_throughout("fff", Some((0, 3)))]
    #[case::since_the_last_pass("pffe", Some((1, 3)))]
    #[case::skips_and_gaps_pass_over("pf-sf", Some((1, 2)))]
    #[case::a_known_failure_ends_the_streak("fkf", Some((2, 1)))]
    #[case::a_flaky_night_ends_the_streak("fyff", Some((2, 2)))]
    #[case::an_interrupted_night_passes_over("fif", Some((0, 2)))]
    #[case::absent_now("pf-", None)]
    #[case::no_nights("", None)]
    fn a_streak_starts_at_the_first_failure_after_the_last_non_failure(
        #[case] pattern: &str,
        #[case] expected: Option<(usize, usize)>,
    ) {
        assert_eq!(streak(&cells(pattern)), expected);
    }

    #[rstest]
    #[case::steady("ppppp", (0, 5))]
    #[case::a_failure_between_passes("ppfpp", (1, 5))]
    #[case::a_pass_between_failures("ffpff", (1, 5))]
    #[case::alternating("pfpfp", (3, 5))]
    #[case::a_new_failure_is_no_flake("pppff", (0, 5))]
    #[case::the_last_night_has_one_neighbour("ppppf", (0, 5))]
    #[case::skips_are_passed_over("pfsp-p", (1, 4))]
    #[case::a_warning_passes("wfw", (1, 3))]
    #[case::a_known_neighbour_is_no_pass("kfp", (0, 3))]
    #[case::a_flaky_night_is_a_flake("pypyp", (2, 5))]
    #[case::a_flaky_neighbour_is_no_pass("yfp", (1, 3))]
    fn flakes_are_isolated_flips(#[case] pattern: &str, #[case] expected: (usize, usize)) {
        assert_eq!(flake_count(&cells(pattern)), expected);
    }
}
