//! The merged report's page in headless Chromium (Debian's `chromium`), driven over the
//! DevTools protocol: it loads with no exception or console error, the matrix has exactly the
//! generated reports' cells, and clicking a failed cell shows its message and diff. Skips
//! without Chromium, except under CI=true, where it fails. Traffic: file:// and 127.0.0.1.

use crate::support;

use cri_harness::report::merge::generate;
use cri_harness::runner::{CaseOutcome, RunReport};
use serde_json::json;
use support::browser::{chromium, open_browser};

const HOSTILE: &str = "</script><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> & <!-- \u{2028}";

/// Generated reports with hostile text, a node lacking a case and a duplicate name.
fn reports() -> Vec<RunReport> {
    let mut reports = generate::node_reports(30, &generate::case_names(40));
    reports[2].node.name = HOSTILE.into();
    reports[2].cases[7].outcome = CaseOutcome::Failed(format!("{HOSTILE}\nsecond line"));
    reports[4].cases.remove(11);
    reports[6].node.name = reports[5].node.name.clone();
    reports
}

fn count(reports: &[RunReport], pick: fn(&CaseOutcome) -> bool) -> u64 {
    reports
        .iter()
        .flat_map(|r| &r.cases)
        .filter(|c| pick(&c.outcome))
        .count() as u64
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs headless Chromium (CHROMIUM or chromium on PATH)"
)]
async fn the_merged_page_loads_cleanly_shows_every_cell_and_opens_a_failure() {
    let binary = chromium();
    let dir = tempfile::tempdir().unwrap();
    let reports = reports();
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    for (i, report) in reports.iter().enumerate() {
        let line = cri_harness::report::line(report).unwrap();
        std::fs::write(
            inputs.join(format!("pod-{i}.log")),
            format!("PASS x\n{line}\n"),
        )
        .unwrap();
    }
    let out = dir.path().join("out");
    let merged = std::process::Command::new(env!("CARGO_BIN_EXE_cri-harness"))
        .args(["report", "merge"])
        .arg(&inputs)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let page = out.join("index.html");
    let (_child, mut cdp) = open_browser(&binary, &dir.path().join("profile")).await;
    cdp.call(
        "Page.navigate",
        json!({"url": format!("file://{}", page.display())}),
    )
    .await;
    cdp.wait_event("Page.loadEventFired").await;
    let cells = cdp
        .eval(
            "(() => { const m = document.getElementById('matrix'); const n = (s) => m.querySelectorAll(s).length;
               return {p: n('td.p'), f: n('td.f'), s: n('td.s'), m: n('td.m'), rows: n('tbody tr[data-node]'),
                       groups: n('tbody tr.group'), columns: n('thead th.case'), pwned: window.__pwned === undefined ? null : window.__pwned}; })()",
        )
        .await;
    let nodes = reports.len() as u64;
    let all = 40 * nodes;
    let passed = count(&reports, |o| matches!(o, CaseOutcome::Passed));
    let failed = count(&reports, |o| matches!(o, CaseOutcome::Failed(_)));
    let skipped = count(&reports, |o| matches!(o, CaseOutcome::Skipped(_)));
    assert!(failed > 3 && skipped > 3, "{failed} {skipped}");
    assert_eq!(
        cells,
        json!({"p": passed, "f": failed, "s": skipped, "m": all - passed - failed - skipped,
               "rows": nodes, "groups": cells["groups"], "columns": 40, "pwned": null})
    );
    assert!(cells["groups"].as_u64().unwrap() >= 6, "{cells}");
    assert!(cdp.eval("document.getElementById('detail').hidden").await == json!(true));
    // The hostile node's failure, clicked with a real mouse event at the cell's centre.
    let hostile_case = &reports[2].cases[7].case;
    let spot = cdp
        .eval(&format!(
            "(() => {{ const name = {}; const row = [...document.querySelectorAll('#matrix tbody tr[data-node]')]
                 .find((tr) => tr.cells[0].textContent === name);
               const col = [...document.querySelectorAll('#matrix thead th.case')].findIndex((th) => th.textContent.endsWith('/' + {}));
               const td = row.cells[col + 1]; td.scrollIntoView({{block: 'center', inline: 'center'}});
               const r = td.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2;
               return {{x, y, cls: td.className, top: String(document.elementFromPoint(x, y)?.outerHTML).slice(0, 80), hit: document.elementFromPoint(x, y) === td, w: innerWidth, h: innerHeight, r: [r.x, r.y, r.width, r.height]}}; }})()",
            json!(HOSTILE),
            json!(hostile_case)
        ))
        .await;
    assert_eq!(spot["cls"], "f", "{spot}");
    assert_eq!(
        spot["hit"], true,
        "the cell is on top at its centre: {spot}"
    );
    cdp.click(&spot).await;
    let shown = cdp
        .eval(
            "(() => { const d = document.getElementById('detail'); const s = getComputedStyle(d);
               return {visible: !d.hidden && s.display !== 'none' && d.getBoundingClientRect().height > 0,
                       title: document.getElementById('detail-title').textContent,
                       message: document.getElementById('detail-message').textContent,
                       diffShown: !document.getElementById('detail-diff').hidden}; })()",
        )
        .await;
    assert_eq!(shown["visible"], true, "{shown}");
    assert_eq!(shown["message"], format!("{HOSTILE}\nsecond line"));
    assert_eq!(
        shown["title"],
        format!("FAIL {}/{}", reports[2].cases[7].suite, hostile_case)
    );
    assert_eq!(shown["diffShown"], false);
    // A snapshot failure: its diff opens with it (el.click() this time). Past the nodes whose
    // names were made alike, so the name finds the row.
    let (node, case) = reports
        .iter()
        .skip(7)
        .flat_map(|r| r.cases.iter().map(move |c| (r, c)))
        .find(|(_, c)| c.snapshot.is_some())
        .unwrap();
    let opened = cdp
        .eval(&format!(
            "(() => {{ const row = [...document.querySelectorAll('#matrix tbody tr[data-node]')].find((tr) => tr.cells[0].textContent === {});
               const col = [...document.querySelectorAll('#matrix thead th.case')].findIndex((th) => th.textContent === {});
               row.cells[col + 1].click();
               const diff = document.getElementById('detail-diff');
               return {{visible: !document.getElementById('detail').hidden, diff: diff.hidden ? null : diff.innerText,
                        message: document.getElementById('detail-message').textContent,
                        added: diff.querySelectorAll('.add').length, removed: diff.querySelectorAll('.del').length}}; }})()",
            json!(node.node.name),
            json!(format!("{}/{}", case.suite, case.case))
        ))
        .await;
    let CaseOutcome::Failed(reason) = &case.outcome else {
        panic!("the snapshot case failed");
    };
    assert_eq!(opened["visible"], true, "{opened}");
    assert_eq!(opened["message"], reason.as_str());
    let diff = opened["diff"].as_str().unwrap();
    assert!(diff.contains("+  state: SANDBOX_NOTREADY"), "{diff}");
    assert_eq!(
        (opened["added"].clone(), opened["removed"].clone()),
        (json!(1), json!(1))
    );
    let errors = cdp.errors();
    assert!(errors.is_empty(), "{errors:#?}");
    // Only the page itself was loaded: no network request left the file.
    assert!(
        cdp.eval("performance.getEntriesByType('resource').length")
            .await
            == json!(0)
    );
}
