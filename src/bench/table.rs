//! The plain-text table `cri-harness bench` prints: one row per benchmark operation, columns
//! aligned, then a line per benchmark that had failures and one for the final sweep.

use std::fmt::Write as _;

use super::Report;

/// A figure in milliseconds as the table shows it, `-` without samples.
fn figure(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.2}"))
}

/// The table of `report`, ending in a newline.
pub fn table(report: &Report) -> String {
    let header = ["benchmark", "operation", "n", "p50 ms", "p95 ms", "max ms"];
    let mut rows: Vec<[String; 6]> = Vec::new();
    for benchmark in &report.benchmarks {
        for op in &benchmark.operations {
            rows.push([
                benchmark.name.to_owned(),
                op.name.to_owned(),
                op.count.to_string(),
                figure(op.p50_ms),
                figure(op.p95_ms),
                figure(op.max_ms),
            ]);
        }
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 6]| {
        // Names left-aligned, numbers right-aligned.
        let _ = writeln!(
            out,
            "{:<w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {:>w4$}  {:>w5$}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
            w5 = widths[5],
        );
    };
    line(header);
    for row in &rows {
        line([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]]);
    }
    for benchmark in report.benchmarks.iter().filter(|b| b.failures > 0) {
        let _ = writeln!(
            out,
            "{}: {} failed: {}",
            benchmark.name,
            benchmark.failures,
            benchmark.errors.first().map_or("", String::as_str)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{BenchmarkReport, CleanupReport, OperationReport};

    fn op(name: &'static str, count: usize, p50: Option<f64>) -> OperationReport {
        OperationReport {
            name: name.to_owned(),
            count,
            min_ms: p50,
            p50_ms: p50,
            p95_ms: p50,
            max_ms: p50,
            mean_ms: p50,
            samples_ms: Vec::new(),
        }
    }

    fn report(benchmarks: Vec<BenchmarkReport>) -> Report {
        Report {
            run_id: "r".to_owned(),
            endpoint: "unix:///x".to_owned(),
            started_at: None,
            runtime_name: None,
            runtime_version: None,
            runtime_handler: String::new(),
            iterations: 3,
            parallel: 1,
            image: "busybox".to_owned(),
            image_was_present: true,
            interrupted: false,
            benchmarks,
            cleanup: CleanupReport::default(),
        }
    }

    #[test]
    fn the_table_has_a_header_and_one_aligned_row_per_operation() {
        let text = table(&report(vec![BenchmarkReport {
            name: "pod_lifecycle".into(),
            critest_spec: String::new(),
            workers: 1,
            wall_ms: 1.0,
            failures: 0,
            errors: Vec::new(),
            operations: vec![
                op("run_pod_sandbox", 3, Some(79.04)),
                op("stop_pod_sandbox", 0, None),
            ],
        }]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("benchmark"), "{text}");
        assert!(
            lines[1].contains("run_pod_sandbox") && lines[1].ends_with("79.04"),
            "{text}"
        );
        assert!(lines[2].ends_with('-'), "{text}");
        let width = lines[0].len();
        assert!(lines.iter().all(|l| l.len() == width), "{text}");
    }

    #[test]
    fn a_benchmark_with_failures_gets_a_line_with_its_first_error() {
        let text = table(&report(vec![BenchmarkReport {
            name: "image_listing".into(),
            critest_spec: String::new(),
            workers: 1,
            wall_ms: 1.0,
            failures: 2,
            errors: vec!["first".to_owned(), "second".to_owned()],
            operations: vec![op("list_images", 1, Some(1.0))],
        }]));
        assert!(text.contains("image_listing: 2 failed: first\n"), "{text}");
    }
}
