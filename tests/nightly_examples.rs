//! The nightly-job examples of the book (`docs/examples/`) hold up: the GitHub Actions workflow
//! parses as YAML with the keys a workflow needs, the systemd units parse with their required
//! sections and keys (and pass `systemd-analyze verify`), the crontab line has five valid time
//! fields, the script is valid shell, and every cri-harness command in them is a real subcommand
//! with real flags, as the binary's `--help` lists them.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

fn example(name: &str) -> (PathBuf, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/examples")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    (path, text)
}

/// The `cri-harness` commands in `text`: `(subcommand, flags)`, the subcommand with its
/// sub-subcommand for `report`.
fn commands(text: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let tokens: Vec<&str> = line
            .split_whitespace()
            .map(|t| t.trim_matches('"'))
            .collect();
        let Some(at) = tokens
            .iter()
            .position(|t| *t == "cri-harness" || t.ends_with("/cri-harness"))
        else {
            continue;
        };
        let mut rest = tokens[at + 1..].iter();
        let mut sub = rest
            .next()
            .expect("a subcommand after cri-harness")
            .to_string();
        if sub == "report" {
            sub = format!("report {}", rest.next().expect("a report subcommand"));
        }
        let flags = rest
            .take_while(|t| {
                !["||", "&&", "|", ";"].contains(t) && !t.starts_with('>') && !t.starts_with("2>")
            })
            .filter(|t| t.starts_with('-'))
            .map(|t| t.split('=').next().unwrap_or(t).to_owned())
            .collect();
        found.push((sub, flags));
    }
    found
}

fn help(sub: &str) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cri-harness"))
        .args(sub.split(' '))
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cri-harness {sub} --help: {output:?}"
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Every command's subcommand exists and takes each of its flags.
fn check_commands(source: &str, text: &str) -> BTreeSet<String> {
    let found = commands(text);
    assert!(!found.is_empty(), "{source} runs no cri-harness command");
    let mut helps = BTreeMap::new();
    for (sub, flags) in &found {
        let help = helps.entry(sub.clone()).or_insert_with(|| help(sub));
        for flag in flags {
            // An option line: `-r, --runtime-endpoint <ENDPOINT>  description`.
            let listed = help
                .lines()
                .map(str::trim_start)
                .filter(|l| l.starts_with('-'))
                .any(|l| {
                    l.split_whitespace()
                        .take_while(|t| t.starts_with('-') || t.starts_with('<'))
                        .any(|t| t.trim_end_matches(',') == flag)
                });
            assert!(
                listed,
                "{source}: cri-harness {sub} has no flag {flag}:\n{help}"
            );
        }
    }
    found.into_iter().map(|(sub, _)| sub).collect()
}

#[test]
fn the_github_workflow_is_yaml_with_a_schedule_and_steps_that_run_real_commands() {
    let (_, text) = example("github-actions-nightly.yml");
    let workflow: Value = serde_saphyr::from_str(&text).expect("the workflow is YAML");
    let cron = workflow["on"]["schedule"][0]["cron"]
        .as_str()
        .expect("on.schedule[0].cron");
    check_cron_fields(cron);
    let jobs = workflow["jobs"].as_object().expect("jobs");
    assert!(!jobs.is_empty());
    let mut runs = String::new();
    for (id, job) in jobs {
        assert!(job["runs-on"].is_string(), "jobs.{id}.runs-on");
        let steps = job["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("jobs.{id}.steps"));
        assert!(!steps.is_empty());
        for (i, step) in steps.iter().enumerate() {
            match (&step["run"], &step["uses"]) {
                (Value::String(run), Value::Null) => {
                    runs.push_str(run);
                    runs.push('\n');
                }
                (Value::Null, Value::String(uses)) => {
                    assert!(
                        uses.contains('@'),
                        "jobs.{id}.steps[{i}].uses pins a version: {uses}"
                    )
                }
                _ => panic!("jobs.{id}.steps[{i}] has exactly one of run and uses: {step}"),
            }
        }
        let uses: BTreeSet<&str> = steps
            .iter()
            .filter_map(|s| s["uses"].as_str())
            .filter_map(|u| u.split('@').next())
            .collect();
        for action in [
            "actions/upload-artifact",
            "actions/cache/restore",
            "actions/cache/save",
        ] {
            assert!(uses.contains(action), "jobs.{id} uses {action}");
        }
    }
    let subs = check_commands("the workflow", &runs);
    let expected: BTreeSet<String> = ["run", "bench", "report diff", "report history"]
        .map(String::from)
        .into();
    assert_eq!(subs, expected);
}

#[test]
fn the_nightly_script_is_shell_and_runs_real_commands() {
    let (path, text) = example("cri-harness-nightly.sh");
    let subs = check_commands("the script", &text);
    let expected: BTreeSet<String> = ["run", "bench", "report diff", "report history"]
        .map(String::from)
        .into();
    assert_eq!(subs, expected);
    let sh = std::process::Command::new("sh")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "sh -n: {}",
        String::from_utf8_lossy(&sh.stderr)
    );
}

/// Checks the five time fields of a cron schedule: each `*`, or a list of numbers or ranges
/// within its bounds, optionally with a `/step`.
fn check_cron_fields(schedule: &str) {
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    assert_eq!(fields.len(), 5, "five time fields: {schedule:?}");
    let bounds = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)];
    for (field, (low, high)) in fields.iter().zip(bounds) {
        for part in field.split(',') {
            let (range, step) = part.split_once('/').unwrap_or((part, "1"));
            assert!(
                step.parse::<u32>().is_ok_and(|s| s >= 1),
                "step in {field:?}"
            );
            if range == "*" {
                continue;
            }
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            let (a, b): (u32, u32) = (
                a.parse()
                    .unwrap_or_else(|_| panic!("a number in {field:?}")),
                b.parse()
                    .unwrap_or_else(|_| panic!("a number in {field:?}")),
            );
            assert!(
                low <= a && a <= b && b <= high,
                "{field:?} within {low}-{high}"
            );
        }
    }
}

#[test]
fn the_crontab_line_has_five_time_fields_and_runs_the_script() {
    let (_, text) = example("crontab");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let fields: Vec<&str> = lines[0].split_whitespace().collect();
    check_cron_fields(&fields[..5].join(" "));
    assert!(
        fields[5].ends_with("/cri-harness-nightly.sh"),
        "{}",
        lines[0]
    );
}

/// An INI file's sections, each a map of keys to their values (a key may repeat).
fn ini(text: &str) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut sections: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut current = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.to_owned());
            sections.entry(name.to_owned()).or_default();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("line {}: neither a section nor key=value: {line}", n + 1));
        let section = current
            .clone()
            .unwrap_or_else(|| panic!("line {}: a key before any section", n + 1));
        sections
            .entry(section)
            .or_default()
            .entry(key.trim().to_owned())
            .or_default()
            .push(value.trim().to_owned());
    }
    sections
}

#[test]
fn the_systemd_units_have_their_required_sections_and_keys() {
    let (_, service) = example("cri-harness-nightly.service");
    let service = ini(&service);
    assert_eq!(service.keys().collect::<Vec<_>>(), ["Service", "Unit"]);
    assert_eq!(service["Service"]["Type"], ["oneshot"]);
    let exec = &service["Service"]["ExecStart"];
    assert_eq!(exec.len(), 1);
    assert!(exec[0].ends_with("/cri-harness-nightly.sh"), "{exec:?}");
    let (_, timer) = example("cri-harness-nightly.timer");
    let timer = ini(&timer);
    assert_eq!(
        timer.keys().collect::<Vec<_>>(),
        ["Install", "Timer", "Unit"]
    );
    assert_eq!(timer["Timer"]["OnCalendar"].len(), 1);
    assert_eq!(timer["Timer"]["Unit"], ["cri-harness-nightly.service"]);
    assert_eq!(timer["Install"]["WantedBy"], ["timers.target"]);
}

#[test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs systemd-analyze (Debian's systemd package)"
)]
fn systemd_analyze_verifies_the_units() {
    let analyze = support::need::program("systemd-analyze", "Debian's systemd package");
    let dir = tempfile::tempdir().unwrap();
    // The units name the script where it is installed; verify checks it exists, so point the
    // copy at the example itself.
    let (script, _) = example("cri-harness-nightly.sh");
    for name in ["cri-harness-nightly.service", "cri-harness-nightly.timer"] {
        let (_, text) = example(name);
        let text = text.replace(
            "/usr/local/lib/cri-harness/cri-harness-nightly.sh",
            &script.display().to_string(),
        );
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let output = std::process::Command::new(analyze)
        .args(["verify", "--man=no"])
        .arg(dir.path().join("cri-harness-nightly.timer"))
        .arg(dir.path().join("cri-harness-nightly.service"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // Only complaints about the units on this machine (containerd absent) may show, none about ours.
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cri-harness-nightly"))
        .collect();
    assert!(ours.is_empty(), "{stderr}");
}
