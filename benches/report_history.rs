//! `report history` at scale: 1,000 generated nights × 300 cases × 3 runtimes (lanes), each
//! lane with its bench report, read and rendered to the page. Prints the input size, the time
//! of reading (with the history's build) and of rendering (best of three) and the page's size.
//! Run with `cargo bench --bench report_history`; `NIGHTS=`, `CASES=` and `LANES=` (1-3)
//! change the size, `KEEP=FILE` copies the page there.

use std::time::{Duration, Instant};

use cri_harness::report::history::{self, generate};

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

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn size_of(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => size_of(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

fn main() -> anyhow::Result<()> {
    let plan = generate::Plan {
        lanes: env_or("LANES", 3).clamp(1, generate::LANES.len()),
        slowdown: 1.4,
        ..generate::Plan::new(env_or("NIGHTS", 1_000), env_or("CASES", 300))
    };
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let nights = generate::write(dir.path(), &plan)?;
    println!(
        "report_history: {} nights x {} cases x {} runtimes, input {} ({} files, generated in {:.1} s)",
        plan.nights,
        plan.cases,
        plan.lanes,
        mib(size_of(dir.path())),
        plan.nights * plan.lanes * 2,
        started.elapsed().as_secs_f64()
    );
    let mut best = [Duration::MAX; 3];
    let mut size = 0;
    let mut page = String::new();
    let mut summary = String::new();
    for _ in 0..3 {
        let total = Instant::now();
        let start = Instant::now();
        let built = history::read_all(&nights)?;
        let read = start.elapsed();
        let start = Instant::now();
        page = history::html::render(&built)?;
        let render = start.elapsed();
        size = page.len();
        summary = format!(
            "{} lanes, {} failing now, {} flaky, {} series, {} flagged slower",
            built.lanes.len(),
            built.failing.len(),
            built.flakes.len(),
            built.series.len(),
            built
                .series
                .iter()
                .filter(|s| s.check.status == history::trend::Status::Slower)
                .count()
        );
        for (b, t) in best.iter_mut().zip([read, render, total.elapsed()]) {
            *b = (*b).min(t);
        }
    }
    println!("{summary}");
    let [read, render, total] = best;
    println!("read+build  {:>8.1} ms", read.as_secs_f64() * 1e3);
    println!(
        "index.html  {:>8.1} ms  {}",
        render.as_secs_f64() * 1e3,
        mib(size as u64)
    );
    println!(
        "total       {:>8.1} ms  (best of 3)",
        total.as_secs_f64() * 1e3
    );
    if let Some(keep) = std::env::var_os("KEEP") {
        std::fs::write(keep, &page)?;
    }
    if let Some(rss) = peak_rss_mib() {
        println!("peak RSS    {rss:.0} MiB");
    }
    Ok(())
}
