//! The history page in headless Chromium (Debian's `chromium`), driven over the DevTools
//! protocol: thirty generated nights load with no exception or console error, the grid and the
//! tables have exactly the generated cells and rows, clicking a failed cell opens its message,
//! the charts have one point per night and the planted slowdown is marked, and nothing is
//! fetched. Skips without Chromium, except under CI=true, where it fails.

use crate::support;

use cri_harness::report::history::generate::{self, Plan, LANES, PATTERNS};
use cri_harness::report::merge::generate::case_names;
use serde_json::json;
use support::browser::{chromium, open_browser};

/// The grid's letter of each generated cell, counted: what the page must show.
fn expected_cells(plan: &Plan) -> serde_json::Map<String, serde_json::Value> {
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for lane in 0..plan.lanes {
        for j in 0..plan.cases {
            for i in 0..plan.nights {
                let class = match generate::outcome(PATTERNS.get(j).copied(), i, plan.nights, lane)
                {
                    None => "m",
                    Some(v) => match v["outcome"].as_str().unwrap() {
                        "passed" => "p",
                        "failed" => "f",
                        "warning" => "w",
                        "error" => "e",
                        "known" => "k",
                        "skipped" => "s",
                        "flaky" => "y",
                        "interrupted" => "i",
                        other => panic!("{other}"),
                    },
                };
                *counts.entry(class).or_default() += 1;
            }
        }
    }
    ["p", "f", "w", "e", "k", "s", "y", "i", "m"]
        .iter()
        .map(|k| (k.to_string(), json!(counts.get(k).copied().unwrap_or(0))))
        .collect()
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs headless Chromium (CHROMIUM or chromium on PATH)"
)]
async fn the_history_page_loads_cleanly_counts_every_cell_opens_a_failure_and_charts_each_night() {
    let binary = chromium();
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        slowdown: 1.4,
        ..Plan::new(30, 12)
    };
    let nights = generate::write(&dir.path().join("nights"), &plan).unwrap();
    let out = dir.path().join("out");
    let written = std::process::Command::new(env!("CARGO_BIN_EXE_cri-harness"))
        .args(["report", "history"])
        .args(&nights)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let (_child, mut cdp) = open_browser(&binary, &dir.path().join("profile")).await;
    cdp.call(
        "Page.navigate",
        json!({"url": format!("file://{}", out.join("index.html").display())}),
    )
    .await;
    cdp.wait_event("Page.loadEventFired").await;
    let counts = cdp
        .eval(
            "(() => { const g = document.getElementById('grid'); const n = (s) => g.querySelectorAll(s).length;
               const cells = {}; for (const k of ['p', 'f', 'w', 'e', 'k', 's', 'y', 'i', 'm']) cells[k] = n('td.' + k);
               return {cells, rows: n('tbody tr[data-case]'), lanes: n('tbody tr.lane'), nights: n('thead th.night'),
                       failing: document.querySelectorAll('#failing tbody tr').length,
                       flakes: document.querySelectorAll('#flakes tbody tr').length,
                       range: document.getElementById('range').textContent}; })()",
        )
        .await;
    assert_eq!(
        counts,
        json!({"cells": expected_cells(&plan), "rows": 24, "lanes": 2, "nights": 30,
               "failing": 3, "flakes": 4, "range": "nights 1–30 of 30"})
    );
    assert_eq!(
        cdp.eval("document.getElementById('detail').hidden").await,
        json!(true)
    );
    // The regressed case's latest failure, clicked with a real mouse event at its centre.
    let (suite, case) = &case_names(12)[0];
    let spot = cdp
        .eval(&format!(
            "(() => {{ const row = [...document.querySelectorAll('#grid tbody tr[data-case]')]
                 .find((tr) => tr.dataset.lane === '1' && tr.cells[0].textContent === {});
               const td = row.cells[row.cells.length - 1]; td.scrollIntoView({{block: 'center', inline: 'center'}});
               const r = td.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2;
               return {{x, y, cls: td.className, hit: document.elementFromPoint(x, y) === td}}; }})()",
            json!(format!("{suite}/{case}"))
        ))
        .await;
    assert_eq!(
        (&spot["cls"], &spot["hit"]),
        (&json!("f"), &json!(true)),
        "{spot}"
    );
    cdp.click(&spot).await;
    let shown = cdp
        .eval(
            "(() => { const d = document.getElementById('detail');
               return {visible: !d.hidden && d.getBoundingClientRect().height > 0,
                       title: document.getElementById('detail-title').textContent,
                       night: document.getElementById('detail-night').textContent,
                       message: document.getElementById('detail-message').textContent}; })()",
        )
        .await;
    assert_eq!(
        shown,
        json!({"visible": true,
               // The lane as its reports record what ran, not the directory they were in.
               "title": format!("FAIL {} {} (endpoint, kubelet seed): {suite}/{case}", LANES[0].1, LANES[0].2),
               "night": "night 2026-01-30 (2026-01-30T02:00:00Z) · containerd v1.7.24",
               "message": "RemoveContainer left the container on night 30"})
    );
    // Two runtimes × five operations, a p50 and a p95 line each with one point per night.
    let charts = cdp
        .eval(
            "(() => { const figs = [...document.querySelectorAll('#bench figure')];
               const points = (q) => [...new Set(figs.map((f) => f.querySelector('polyline.' + q).points.numberOfItems))];
               return {figures: figs.length, runtimes: [...document.querySelectorAll('#bench h3')].map((h) => h.textContent),
                       p50: points('p50'), p95: points('p95'),
                       slow: figs.filter((f) => f.classList.contains('slow')).map((f) => f.closest('.charts').previousElementSibling.textContent + ' ' + f.querySelector('figcaption').textContent.split(':')[0]),
                       steady: figs.filter((f) => f.dataset.status === 'steady').length}; })()",
        )
        .await;
    assert_eq!(
        charts,
        json!({"figures": 10, "runtimes": ["containerd v1.6.20", "containerd v1.7.24"],
               "p50": [30], "p95": [30], "slow": ["containerd v1.7.24 pod_lifecycle/run_pod_sandbox"],
               "steady": 9})
    );
    let errors = cdp.errors();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        cdp.eval("performance.getEntriesByType('resource').length")
            .await,
        json!(0)
    );
}

/// The nightly matrix CI writes: one night of its seven lanes (both mock profiles, containerd
/// 1.6, 1.7 and 2.1, CRI-O in both signature-policy modes) with two runtimes' bench figures, as `report history` draws it. The expected counts come from the
/// night's own reports: every case of every lane has its cell, each runtime that was
/// benchmarked has its charts with one point per operation, a clickable cell opens its
/// message, and nothing is fetched. CI's matrix stage runs it, with `--ignored`, on the
/// reports it has just written; there is no such night anywhere else.
#[tokio::test]
#[ignore = "run by CI's matrix stage on the night it wrote (CRIH_MATRIX_NIGHT, CRIH_MATRIX_PAGE)"]
async fn the_ci_matrix_page() {
    use cri_harness::report::model::Verdict;

    let night = std::path::PathBuf::from(support::need::env(
        "CRIH_MATRIX_NIGHT",
        "the night CI's matrix stage wrote",
    ));
    let page = support::need::env("CRIH_MATRIX_PAGE", "the history page of that night");
    let binary = chromium();
    // What the night holds: run reports (one lane each) and bench reports.
    let mut cells = std::collections::BTreeMap::<&str, u64>::new();
    let (mut lanes, mut cases, mut benches) = (0, 0, 0);
    let mut charted = std::collections::BTreeSet::new();
    let mut files: Vec<_> = walk(&night);
    files.sort();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let text = std::fs::read_to_string(path).unwrap();
        if let Ok(report) = cri_harness::report::merge::read::parse(&text) {
            lanes += 1;
            for case in &report.cases {
                cases += 1;
                let class = match case.outcome.verdict() {
                    Verdict::Passed => "p",
                    Verdict::Failed => "f",
                    Verdict::Warning => "w",
                    Verdict::Error => "e",
                    Verdict::Known => "k",
                    Verdict::Skipped => "s",
                    Verdict::Flaky => "y",
                    Verdict::Interrupted => "i",
                };
                *cells.entry(class).or_default() += 1;
            }
        } else if let Ok(bench) = serde_json::from_str::<cri_harness::bench::Report>(&text) {
            benches += 1;
            // One chart per runtime (as the page labels it), benchmark and operation.
            let runtime = cri_harness::report::history::read::bench_runtime(&bench);
            for b in &bench.benchmarks {
                for op in b.operations.iter().filter(|op| !op.samples_ms.is_empty()) {
                    charted.insert((runtime.clone(), b.name.clone(), op.name.clone()));
                }
            }
        }
    }
    let runtimes = charted
        .iter()
        .map(|(runtime, ..)| runtime)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let operations = charted.len();
    assert_eq!(
        (lanes, benches),
        (7, 2),
        "both mock profiles, the three containerd lanes and CRI-O's two, and both containerd benches"
    );
    let expected: serde_json::Map<String, serde_json::Value> =
        ["p", "f", "w", "e", "k", "s", "y", "i"]
            .iter()
            .map(|k| (k.to_string(), json!(cells.get(k).copied().unwrap_or(0))))
            .collect();

    let dir = tempfile::tempdir().unwrap();
    let (_child, mut cdp) = open_browser(&binary, &dir.path().join("profile")).await;
    cdp.call("Page.navigate", json!({"url": format!("file://{page}")}))
        .await;
    cdp.wait_event("Page.loadEventFired").await;
    let counts = cdp
        .eval(
            "(() => { const g = document.getElementById('grid'); const n = (s) => g.querySelectorAll(s).length;
               const cells = {}; for (const k of ['p', 'f', 'w', 'e', 'k', 's', 'y', 'i']) cells[k] = n('td.' + k);
               return {cells, rows: n('tbody tr[data-case]'), lanes: n('tbody tr.lane'), nights: n('thead th.night')}; })()",
        )
        .await;
    assert_eq!(
        counts,
        json!({"cells": expected, "rows": cases, "lanes": lanes, "nights": 1})
    );
    let charts = cdp
        .eval(
            "(() => { const figs = [...document.querySelectorAll('#bench figure')];
               const points = (q) => [...new Set(figs.map((f) => f.querySelector('polyline.' + q).points.numberOfItems))];
               return {runtimes: document.querySelectorAll('#bench h3').length, figures: figs.length,
                       p50: points('p50'), p95: points('p95')}; })()",
        )
        .await;
    assert_eq!(
        charts,
        json!({"runtimes": runtimes, "figures": operations, "p50": [1], "p95": [1]})
    );
    // The first cell that opens a message (a known finding, a skip, a failure...), clicked with
    // a real mouse event at its centre.
    let spot = cdp
        .eval(
            "(() => { const td = [...document.querySelectorAll('#grid tbody td')]
                 .find((td) => ['f', 'w', 'e', 'k', 's', 'y', 'i'].includes(td.classList[0]));
               if (!td) return null; td.scrollIntoView({block: 'center', inline: 'center'});
               const r = td.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2;
               return {x, y, hit: document.elementFromPoint(x, y) === td}; })()",
        )
        .await;
    assert_eq!(
        spot["hit"],
        json!(true),
        "no clickable cell was hit: {spot}"
    );
    cdp.click(&spot).await;
    let shown = cdp
        .eval(
            "(() => { const d = document.getElementById('detail');
               return {visible: !d.hidden && d.getBoundingClientRect().height > 0,
                       message: document.getElementById('detail-message').textContent.length > 0}; })()",
        )
        .await;
    assert_eq!(shown, json!({"visible": true, "message": true}));
    let errors = cdp.errors();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        cdp.eval("performance.getEntriesByType('resource').length")
            .await,
        json!(0)
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
