//! Suite loading time against the number of cases: generated suites of 1,000, 10,000 and
//! 40,000 cases (five steps each, block and flow style mixed) parsed as `--suites` parses them.
//! Prints the best of three runs, the time per case (flat when loading is linear) and the
//! loader's answer to a file that aliases a 1 MB string 300 times. Run with
//! `cargo bench --bench suite_load`.

use std::time::{Duration, Instant};

use cri_harness::suite;

fn generated(cases: usize) -> String {
    let mut text = String::from("suite: generated\nabout: Load-time benchmark.\ncases:\n");
    for i in 0..cases {
        text.push_str(&format!(
            "  - name: case-{i}\n    about: \"name: not-{i}\"\n    steps:\n      - run_sandbox: {{as: old, pod: web, labels: {{app: a{i}}}}}\n      - create_container: {{as: c, sandbox: old}}\n      - stop_sandbox: old\n      - get_pods: {{expect: {{pods: {{web: {{sandboxes: [old]}}}}}}}}\n    tags: [bench]\n"
        ));
    }
    text
}

fn best_of_three(text: &str) -> Result<Duration, suite::SuiteError> {
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let loaded = suite::parse("generated.yaml", text)?;
        best = best.min(start.elapsed());
        std::hint::black_box(loaded);
    }
    Ok(best)
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    // The bomb first, so the peak memory it shows is its own.
    let mut bomb = format!(
        "suite: s\nabout: &big {}\ncases:\n  - name: c\n    steps:\n      - run_sandbox:\n          as: a\n          pod: p\n          labels:\n",
        "x".repeat(1_000_000)
    );
    for i in 0..300 {
        bomb.push_str(&format!("            l{i}: *big\n"));
    }
    let before = peak_rss_kib();
    let start = Instant::now();
    let answer = suite::parse("bomb.yaml", &bomb);
    let took = start.elapsed();
    let verdict = match answer {
        Ok(_) => "loaded".to_owned(),
        Err(err) => err.to_string(),
    };
    println!(
        "1 MB aliased 300 times: {:.1} ms, peak memory {} → {} KiB: {verdict}",
        took.as_secs_f64() * 1e3,
        before.map_or("?".into(), |k| k.to_string()),
        peak_rss_kib().map_or("?".into(), |k| k.to_string()),
    );
    println!("cases   bytes       load     per case");
    for cases in [1_000, 10_000, 40_000] {
        let text = generated(cases);
        match best_of_three(&text) {
            Ok(took) => println!(
                "{cases:>6} {:>9} {:>9.1} ms {:>6.1} µs",
                text.len(),
                took.as_secs_f64() * 1e3,
                took.as_secs_f64() * 1e6 / cases as f64
            ),
            Err(err) => {
                eprintln!("the generated suite does not load: {err}");
                std::process::exit(1);
            }
        }
    }
}
