//! `report merge` at fleet size: 1,000 generated node reports of the embedded suites' cases
//! (half as JSON files, half as pod logs ending in the report line) merged into JUnit, JSON
//! and HTML. Prints the input size, the time of each phase (best of three) and the output
//! sizes. Run with `cargo bench --bench report_merge`; `NODES=` and `CASES=` change the size,
//! `KEEP=DIR` copies the outputs there (to open the page).

use std::time::{Duration, Instant};

use cri_harness::report::merge::{self, generate, html, json, junit};
use cri_harness::report::model::Verdict;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn main() -> anyhow::Result<()> {
    let nodes = env_or("NODES", 1_000);
    let cases = env_or("CASES", 230);
    let dir = tempfile::tempdir()?;
    let names = generate::case_names(cases);
    let reports = generate::node_reports(nodes, &names);
    let mut input_bytes = 0;
    for (i, report) in reports.iter().enumerate() {
        let line = cri_harness::report::line(report)?;
        let (name, text) = if i % 2 == 0 {
            (format!("{}.json", report.node.name), line)
        } else {
            (
                format!("{}.log", report.node.name),
                format!("PASS a/b (1.0 ms)\n1 passed, 0 failed, 0 skipped\n{line}\n"),
            )
        };
        input_bytes += text.len();
        std::fs::write(dir.path().join(name), text)?;
    }
    drop(reports);
    println!(
        "report_merge: {nodes} nodes x {cases} cases ({} real case names), input {} in {nodes} files",
        names.iter().filter(|(s, _)| s != "generated").count(),
        mib(input_bytes)
    );
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out)?;
    let inputs = [dir.path().to_owned()];
    let mut best = [Duration::MAX; 5];
    let mut sizes = [0usize; 3];
    let mut counts = (0, 0, 0, 0, 0);
    for _ in 0..3 {
        let mut times = [Duration::ZERO; 5];
        let total = Instant::now();
        let start = Instant::now();
        let merged = merge::read_all(&inputs);
        times[0] = start.elapsed();
        let renders: [fn(&merge::Merged) -> Result<String, _>; 3] =
            [junit::render, json::render, html::render];
        for (k, render) in renders.iter().enumerate() {
            let start = Instant::now();
            let text = render(&merged)?;
            std::fs::write(out.join(merge::OUTPUTS[k]), &text)?;
            times[k + 1] = start.elapsed();
            sizes[k] = text.len();
        }
        times[4] = total.elapsed();
        counts = (
            merged.nodes.len(),
            merged.groups.len(),
            merged.count(Verdict::Passed),
            merged.count(Verdict::Failed),
            merged.count(Verdict::Skipped),
        );
        for (b, t) in best.iter_mut().zip(times) {
            *b = (*b).min(t);
        }
    }
    let (merged_nodes, groups, passed, failed, skipped) = counts;
    println!("merged {merged_nodes} nodes in {groups} groups: {passed} passed, {failed} failed, {skipped} skipped cells");
    let [read, junit_t, json_t, html_t, total] = best;
    println!("read+merge  {:>8.1} ms", read.as_secs_f64() * 1e3);
    println!(
        "junit.xml   {:>8.1} ms  {}",
        junit_t.as_secs_f64() * 1e3,
        mib(sizes[0])
    );
    println!(
        "merged.json {:>8.1} ms  {}",
        json_t.as_secs_f64() * 1e3,
        mib(sizes[1])
    );
    println!(
        "index.html  {:>8.1} ms  {}",
        html_t.as_secs_f64() * 1e3,
        mib(sizes[2])
    );
    println!(
        "total       {:>8.1} ms  (best of 3)",
        total.as_secs_f64() * 1e3
    );
    if let Some(keep) = std::env::var_os("KEEP") {
        std::fs::create_dir_all(&keep)?;
        for name in merge::OUTPUTS {
            std::fs::copy(out.join(name), std::path::Path::new(&keep).join(name))?;
        }
    }
    if let Some(rss) = peak_rss_mib() {
        println!("peak RSS    {rss:.0} MiB");
    }
    Ok(())
}
