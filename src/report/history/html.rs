//! The history as one static page. As on the merge page, the data rides in the page as JSON
//! (messages interned) and inline script draws it with `textContent` and SVG elements, so no
//! text is parsed as markup and nothing is fetched. The grid holds every night but shows a
//! window of them at a time, so a thousand nights stay a page a browser opens at once.

use serde::Serialize;

use super::model::{Failing, Flake, History, NightInfo, Order, FLAKE_DEFINITION};
use super::trend::{self, Series};
use crate::report::merge::html::script_safe;
use crate::report::ReportError;

const PAGE: &str = include_str!("page.html");

/// Nights the grid shows at once.
pub const WINDOW: usize = 60;

#[derive(Serialize)]
struct Data<'a> {
    nights: &'a [NightInfo],
    order: &'a Order,
    warnings: Vec<String>,
    strings: &'a [String],
    window: usize,
    lanes: Vec<LaneData<'a>>,
    failing: &'a [Failing],
    flakes: &'a [Flake],
    flake_definition: &'static str,
    test: String,
    series: &'a [Series],
}

#[derive(Serialize)]
struct LaneData<'a> {
    name: &'a str,
    runtimes: &'a [String],
    cases: Vec<&'a str>,
    /// Per case, one letter per night: `p`assed, `f`ailed, `w`arning, `e`rror, `k`nown,
    /// `s`kipped, fla`y`, `i`nterrupted, `-` not run.
    cells: Vec<String>,
    /// `[case, night, message]` of each cell with a message.
    notes: Vec<[u32; 3]>,
}

/// The slowdown check in words, as the page states it.
pub fn test_description() -> String {
    format!(
        "A benchmark operation is flagged slower when both hold: (1) a two-sided Mann–Whitney U test \
(normal approximation with tie and continuity correction) of the latest night's samples against the \
pooled samples of up to {} preceding nights rejects at α = {}; and (2) the latest p50 lies above the \
preceding nights' p50s' median + {} scaled MADs (MAD × 1.4826). The rank test suits skewed, \
heavy-tailed latencies; the band keeps night-to-night drift within the history's own spread from being \
flagged. At least {} preceding nights are needed for a verdict. A change downwards is noted as faster, \
not flagged.",
        trend::HISTORY_NIGHTS,
        trend::ALPHA,
        trend::BAND,
        trend::MIN_HISTORY
    )
}

/// The page.
pub fn render(history: &History) -> Result<String, ReportError> {
    let lanes = history
        .lanes
        .iter()
        .map(|lane| {
            let mut notes = Vec::new();
            let cells = lane
                .rows
                .iter()
                .enumerate()
                .map(|(case, row)| {
                    row.cells
                        .iter()
                        .enumerate()
                        .map(|(night, cell)| match cell {
                            None => '-',
                            Some(cell) => {
                                if let Some(message) = cell.message {
                                    let at = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                                    notes.push([at(case), at(night), message]);
                                }
                                cell.verdict.letter()
                            }
                        })
                        .collect()
                })
                .collect();
            LaneData {
                name: &lane.name,
                runtimes: &lane.runtimes,
                cases: lane.rows.iter().map(|r| r.case.as_str()).collect(),
                cells,
                notes,
            }
        })
        .collect();
    let mut warnings = Vec::new();
    if let Order::DirectoryName { without_start } = &history.order {
        warnings.push(format!(
            "nights ordered by directory name: no start time recorded in {}",
            without_start.join(", ")
        ));
    }
    warnings.extend(history.problems.iter().cloned());
    let data = Data {
        nights: &history.nights,
        order: &history.order,
        warnings,
        strings: &history.strings,
        window: WINDOW,
        lanes,
        failing: &history.failing,
        flakes: &history.flakes,
        flake_definition: FLAKE_DEFINITION,
        test: test_description(),
        series: &history.series,
    };
    let json = serde_json::to_string(&data).map_err(ReportError::Json)?;
    Ok(PAGE.replacen("{{DATA}}", &script_safe(&json), 1))
}
