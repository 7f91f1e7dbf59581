//! Parsing and checking suite files. serde does the shape (its messages name the valid variants
//! and fields); this file adds the file:line:column, the checks serde cannot make (aliases
//! defined before use, mock-only steps marked), and the merging of embedded and extra suites.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;
use serde::Deserialize;

use super::step::{IpExpect, Step, StepKind};
use super::{Case, Need, Suite, SuiteError, EMBEDDED};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    suite: String,
    about: String,
    #[serde(default)]
    tags: Vec<String>,
    cases: Vec<RawCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    #[serde(default)]
    about: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    needs: Vec<Need>,
    steps: Vec<Step>,
}

/// Suites that loaded and the files that did not.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Usable suites, sorted by name.
    pub suites: Vec<Suite>,
    /// One error per unusable file.
    pub errors: Vec<SuiteError>,
}

/// The embedded suites.
pub fn load_embedded() -> Loaded {
    let mut loaded = Loaded::default();
    for (path, text) in EMBEDDED {
        match parse(path, text) {
            Ok(suite) => loaded.suites.push(suite),
            Err(err) => loaded.errors.push(err),
        }
    }
    loaded.suites.sort_by(|a, b| a.name.cmp(&b.name));
    loaded
}

/// Every `*.yaml`/`*.yml` file of `dir` (not recursive), in name order.
pub fn load_dir(dir: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            loaded.errors.push(SuiteError::Read {
                path: dir.to_owned(),
                source,
            });
            return loaded;
        }
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.is_file()
                && path
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    paths.sort();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for path in paths {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(source) => {
                loaded.errors.push(SuiteError::Read { path, source });
                continue;
            }
        };
        match parse(&shown, &text) {
            Ok(suite) => {
                if let Some(first) = seen.insert(suite.name.clone(), shown.clone()) {
                    loaded.errors.push(SuiteError::Duplicate {
                        suite: suite.name,
                        first,
                        second: shown,
                    });
                } else {
                    loaded.suites.push(suite);
                }
            }
            Err(err) => loaded.errors.push(err),
        }
    }
    loaded.suites.sort_by(|a, b| a.name.cmp(&b.name));
    loaded
}

/// The embedded suites plus those of `extra`; a suite of `extra` replaces the embedded one of
/// the same name (so a vendor can adapt a suite without recompiling).
pub fn load(extra: Option<&Path>) -> Loaded {
    let mut loaded = load_embedded();
    if let Some(dir) = extra {
        let more = load_dir(dir);
        for suite in more.suites {
            loaded.suites.retain(|s| s.name != suite.name);
            loaded.suites.push(suite);
        }
        loaded.errors.extend(more.errors);
        loaded.suites.sort_by(|a, b| a.name.cmp(&b.name));
    }
    loaded
}

/// Parses one suite file; `file` is how messages name it.
pub fn parse(file: &str, text: &str) -> Result<Suite, SuiteError> {
    // Steps are single-key maps (`- stop_sandbox: old`), not serde_yaml's `!tag` enums.
    let raw: RawSuite = serde_yaml::with::singleton_map_recursive::deserialize(
        serde_yaml::Deserializer::from_str(text),
    )
    .map_err(|err| parse_error(file, &err))?;
    let invalid = |line: usize, message: String| SuiteError::Invalid {
        file: file.to_owned(),
        line,
        message,
    };
    if !is_name(&raw.suite) {
        return Err(invalid(
            find_line(text, "suite", &raw.suite).unwrap_or(1),
            format!(
                "suite name `{}` must be lower-case letters, digits, `-` and `_`",
                raw.suite
            ),
        ));
    }
    if raw.cases.is_empty() {
        return Err(invalid(1, format!("suite `{}` has no cases", raw.suite)));
    }
    let mut names = BTreeSet::new();
    let mut cases = Vec::with_capacity(raw.cases.len());
    let mut search_from = 0;
    for raw_case in raw.cases {
        let line = find_line_from(text, "name", &raw_case.name, search_from).unwrap_or(1);
        search_from = line;
        let step_lines = step_lines(text, line);
        let fail = |message: String| invalid(line, format!("case `{}`: {message}", raw_case.name));
        if !is_name(&raw_case.name) {
            return Err(fail(
                "a case name must be lower-case letters, digits, `-` and `_`".to_owned(),
            ));
        }
        if !names.insert(raw_case.name.clone()) {
            return Err(fail(
                "another case of this suite has the same name".to_owned(),
            ));
        }
        let mut case = Case {
            name: raw_case.name.clone(),
            about: raw_case.about,
            tags: raw.tags.iter().chain(&raw_case.tags).cloned().collect(),
            needs: raw_case.needs,
            steps: raw_case.steps,
            line,
            step_lines,
        };
        case.tags.sort();
        case.tags.dedup();
        check_case(&case).map_err(|(index, message)| {
            let line = index.map_or(case.line, |i| case.step_line(i));
            invalid(line, format!("case `{}`: {message}", case.name))
        })?;
        cases.push(case);
    }
    Ok(Suite {
        name: raw.suite,
        about: raw.about.trim().to_owned(),
        tags: raw.tags,
        cases,
        source: file.to_owned(),
    })
}

fn parse_error(file: &str, err: &serde_yaml::Error) -> SuiteError {
    let (line, column) = err
        .location()
        .map_or((1, 1), |loc| (loc.line(), loc.column()));
    // serde_yaml appends " at line L column C"; the location is already in front.
    let text = err.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) if text[at..].contains(" column ") => text[..at].to_owned(),
        _ => text,
    };
    SuiteError::Parse {
        file: file.to_owned(),
        line,
        column,
        message,
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn is_alias(alias: &str) -> bool {
    !alias.is_empty()
        && alias
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn find_line(text: &str, key: &str, value: &str) -> Option<usize> {
    find_line_from(text, key, value, 0)
}

/// The 1-based line after line `from` where `key: value` is written (as a list item or not,
/// quoted or not). serde_yaml has no spans for valid documents, so this finds them again.
fn find_line_from(text: &str, key: &str, value: &str, from: usize) -> Option<usize> {
    let pattern = format!(
        r#"^\s*(-\s+)?{}\s*:\s*['"]?{}['"]?\s*(#.*)?$"#,
        regex::escape(key),
        regex::escape(value)
    );
    let re = Regex::new(&pattern).ok()?;
    text.lines()
        .enumerate()
        .skip(from)
        .find(|(_, line)| re.is_match(line))
        .map(|(i, _)| i + 1)
}

/// The 1-based lines where the steps of the case named on `case_line` start: the items of the
/// first `steps:` list after it.
fn step_lines(text: &str, case_line: usize) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |line: &str| line.len() - line.trim_start().len();
    let Some(steps_at) = (case_line.saturating_sub(1)..lines.len()).find(|&i| {
        lines[i]
            .trim_start()
            .trim_start_matches("- ")
            .starts_with("steps:")
    }) else {
        return Vec::new();
    };
    let steps_indent = indent(lines[steps_at]);
    let mut item_indent = None;
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(steps_at + 1) {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let here = indent(line);
        if trimmed.starts_with("- ") {
            match item_indent {
                None if here >= steps_indent => {
                    item_indent = Some(here);
                    found.push(i + 1);
                }
                Some(at) if here == at => found.push(i + 1),
                Some(at) if here < at => break,
                _ => {}
            }
        } else if here <= steps_indent {
            break;
        }
    }
    found
}

/// Sandbox and container aliases defined so far in a case.
#[derive(Default)]
struct Aliases<'a> {
    sandboxes: BTreeSet<&'a str>,
    containers: BTreeSet<&'a str>,
}

impl<'a> Aliases<'a> {
    fn sandbox(&self, alias: &str) -> Result<(), String> {
        if self.sandboxes.contains(alias) {
            return Ok(());
        }
        Err(format!(
            "unknown sandbox alias `{alias}`; defined so far: {}",
            list(&self.sandboxes)
        ))
    }

    fn container(&self, alias: &str) -> Result<(), String> {
        if self.containers.contains(alias) {
            return Ok(());
        }
        Err(format!(
            "unknown container alias `{alias}`; defined so far: {}",
            list(&self.containers)
        ))
    }

    fn either(&self, alias: &str) -> Result<(), String> {
        if self.sandboxes.contains(alias) || self.containers.contains(alias) {
            return Ok(());
        }
        Err(format!(
            "unknown alias `{alias}`; sandboxes so far: {}; containers so far: {}",
            list(&self.sandboxes),
            list(&self.containers)
        ))
    }

    fn define(&mut self, alias: &'a str, is_sandbox: bool) -> Result<(), String> {
        if !is_alias(alias) {
            return Err(format!(
                "alias `{alias}` must be letters, digits, `-` and `_`"
            ));
        }
        if self.sandboxes.contains(alias) || self.containers.contains(alias) {
            return Err(format!("alias `{alias}` is already defined"));
        }
        if is_sandbox {
            self.sandboxes.insert(alias);
        } else {
            self.containers.insert(alias);
        }
        Ok(())
    }
}

fn pod(alias: &str) -> Result<(), String> {
    // The empty alias names the pod of containers without pod labels.
    if alias == "none" || (!alias.is_empty() && !is_alias(alias)) {
        return Err(format!(
            "`{alias}` cannot name a pod; use letters, digits, `-` and `_` (not `none`)"
        ));
    }
    Ok(())
}

fn pod_labels(labels: Option<&str>) -> Result<(), String> {
    match labels {
        Some("none") | None => Ok(()),
        Some(alias) => pod(alias),
    }
}

/// Checks what serde cannot: aliases defined before use and not twice, mock-only steps marked,
/// at least one manager call. The error carries the step index when there is one.
fn check_case(case: &Case) -> Result<(), (Option<usize>, String)> {
    let mut aliases = Aliases::default();
    for (index, step) in case.steps.iter().enumerate() {
        check_step(step, case.needs_mock_control(), &mut aliases).map_err(|message| {
            (
                Some(index),
                format!("step {} `{}`: {message}", index + 1, step.name()),
            )
        })?;
    }
    if !case
        .steps
        .iter()
        .any(|step| step.kind() == StepKind::Manager)
    {
        return Err((None, "has no manager call, so it checks nothing".to_owned()));
    }
    Ok(())
}

fn check_step<'a>(step: &'a Step, marked: bool, aliases: &mut Aliases<'a>) -> Result<(), String> {
    if step.kind() == StepKind::MockControl && !marked {
        return Err(
            "needs the mock's control service; add `needs: [mock_control]` to the case".to_owned(),
        );
    }
    match step {
        Step::RunSandbox(s) => {
            pod(&s.pod)?;
            aliases.define(&s.alias, true)?;
        }
        Step::MockSeedSandbox(s) => {
            pod(&s.pod)?;
            aliases.define(&s.alias, true)?;
        }
        Step::StopSandbox(a) | Step::RemoveSandbox(a) => aliases.sandbox(a)?,
        Step::CheckNetwork(c) => aliases.sandbox(&c.sandbox)?,
        Step::CreateContainer(c) => {
            aliases.sandbox(&c.sandbox)?;
            pod_labels(c.pod_labels.as_deref())?;
            aliases.define(&c.alias, false)?;
        }
        Step::MockSeedContainer(c) => {
            // The sandbox need not exist: orphans are seeded this way.
            if !is_alias(&c.sandbox) {
                return Err(format!("`{}` cannot name a sandbox", c.sandbox));
            }
            pod_labels(c.pod_labels.as_deref())?;
            aliases.define(&c.alias, false)?;
        }
        Step::StartContainer(a) | Step::RemoveContainer(a) => aliases.container(a)?,
        Step::StopContainer(s) => aliases.container(&s.container)?,
        Step::GetPodStatus(g) => {
            pod(&g.pod)?;
            if let Some(IpExpect::Of(alias)) = &g.expect.ip {
                aliases.sandbox(alias)?;
            }
            for alias in g.expect.sandboxes.iter().flatten() {
                aliases.sandbox(alias)?;
            }
            for alias in g.expect.containers.iter().flatten() {
                aliases.container(alias)?;
            }
        }
        Step::GetPods(g) => {
            for (name, expect) in &g.expect.pods {
                pod(name)?;
                for alias in expect.sandboxes.iter().flatten() {
                    aliases.sandbox(alias)?;
                }
                for alias in expect.containers.iter().flatten() {
                    aliases.container(alias)?;
                }
                for alias in expect.states.keys() {
                    aliases.either(alias)?;
                }
            }
            for name in g.expect.only.iter().flatten().chain(&g.expect.absent) {
                pod(name)?;
            }
        }
        Step::KillPod(k) => {
            pod(&k.pod)?;
            for alias in k.expect.teardown.iter().flatten() {
                aliases.sandbox(alias)?;
            }
        }
        Step::GetNetns(g) => aliases.sandbox(&g.sandbox)?,
        Step::MockInjectError(i) => {
            if let Some(alias) = &i.target {
                aliases.either(alias)?;
            }
        }
        Step::GetPodContainerId(g) => {
            pod(&g.pod)?;
            if let Some(alias) = &g.expect.of {
                aliases.sandbox(alias)?;
            }
        }
        Step::PullImage(_)
        | Step::SleepMs(_)
        | Step::MockSetVersion(_)
        | Step::MockSetClock(_)
        | Step::MockAdvanceClock(_)
        | Step::NewManager(_)
        | Step::Version(_)
        | Step::ApiVersion(_)
        | Step::Status(_) => {}
    }
    Ok(())
}

fn list(aliases: &BTreeSet<&str>) -> String {
    if aliases.is_empty() {
        "none".to_owned()
    } else {
        aliases
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::suite::step::{GrpcCode, KillPod, RunSandbox};

    const GOOD: &str = "\
suite: demo
about: A demo.
tags: [demo]
cases:
  - name: first
    tags: [ip]
    steps:
      - run_sandbox: {as: old, pod: web}
      - stop_sandbox: old
      - get_pod_status:
          pod: web
          expect: {ip: none, sandboxes: [old]}
  - name: second
    needs: [mock_control]
    steps:
      - mock_inject_error: {method: StopContainer, code: NotFound}
      - kill_pod: {pod: web}
";

    #[test]
    fn a_good_file_parses_with_lines_tags_and_steps() {
        let suite = parse("suites/demo.yaml", GOOD).unwrap();
        assert_eq!(suite.name, "demo");
        assert_eq!(suite.cases.len(), 2);
        let first = &suite.cases[0];
        assert_eq!(first.line, 5);
        assert_eq!(first.step_lines, vec![8, 9, 10]);
        assert_eq!(first.tags, vec!["demo".to_owned(), "ip".to_owned()]);
        assert_eq!(
            first.steps[0],
            Step::RunSandbox(RunSandbox {
                alias: "old".into(),
                pod: "web".into(),
                attempt: 0,
                host_network: false,
                labels: Default::default(),
                pod_labels: true,
            })
        );
        let second = &suite.cases[1];
        assert_eq!(second.line, 13);
        assert_eq!(second.step_lines, vec![16, 17]);
        assert!(second.needs_mock_control());
        match &second.steps[0] {
            Step::MockInjectError(inject) => {
                assert_eq!(inject.code, GrpcCode(tonic::Code::NotFound));
                assert_eq!(inject.count, 1);
            }
            other => panic!("unexpected {other:?}"),
        }
        match &second.steps[1] {
            Step::KillPod(KillPod { with_spec, .. }) => assert!(with_spec),
            other => panic!("unexpected {other:?}"),
        }
    }

    fn parse_err(text: &str) -> String {
        parse("suites/bad.yaml", text).unwrap_err().to_string()
    }

    #[rstest]
    #[case::misspelt_step_lists_the_valid_steps(
        "      - run_sandbx: {as: a, pod: p}\n",
        &["suites/bad.yaml:6:", "unknown variant `run_sandbx`", "`run_sandbox`", "`get_pod_status`"]
    )]
    #[case::misspelt_field_lists_the_valid_fields(
        "      - run_sandbox: {as: a, pod: p, atempt: 1}\n",
        &["suites/bad.yaml:6:", "unknown field `atempt`", "`attempt`", "`host_network`"]
    )]
    #[case::bad_grpc_code_lists_the_codes(
        "      - mock_inject_error: {method: Version, code: Nope}\n",
        &["suites/bad.yaml:6:", "unknown gRPC code `Nope`", "`NotFound`"]
    )]
    #[case::mock_step_without_the_mark_names_the_mark(
        "      - mock_set_version: {version: 0.2.0}\n      - version: {}\n",
        &["suites/bad.yaml:6:", "case `c`", "step 1 `mock_set_version`", "needs: [mock_control]"]
    )]
    #[case::unknown_sandbox_alias_names_the_defined_ones(
        "      - run_sandbox: {as: a, pod: p}\n      - stop_sandbox: b\n      - version: {}\n",
        &["suites/bad.yaml:7:", "step 2 `stop_sandbox`", "unknown sandbox alias `b`", "`a`"]
    )]
    #[case::alias_defined_twice(
        "      - run_sandbox: {as: a, pod: p}\n      - run_sandbox: {as: a, pod: p}\n      - version: {}\n",
        &["suites/bad.yaml:7:", "alias `a` is already defined"]
    )]
    #[case::expectation_on_an_unknown_container(
        "      - get_pod_status: {pod: p, expect: {containers: [x]}}\n",
        &["suites/bad.yaml:6:", "unknown container alias `x`"]
    )]
    #[case::no_manager_call(
        "      - run_sandbox: {as: a, pod: p}\n",
        &["suites/bad.yaml:4:", "has no manager call"]
    )]
    #[case::pod_named_none(
        "      - run_sandbox: {as: a, pod: none}\n      - version: {}\n",
        &["suites/bad.yaml:6:", "`none` cannot name a pod"]
    )]
    fn a_bad_case_is_reported_with_its_line_and_the_choices(
        #[case] steps: &str,
        #[case] wanted: &[&str],
    ) {
        let text = format!("suite: bad\nabout: x\ncases:\n  - name: c\n    steps:\n{steps}");
        let message = parse_err(&text);
        for part in wanted {
            assert!(message.contains(part), "{message:?} lacks {part:?}");
        }
    }

    #[rstest]
    #[case::missing_about("suite: s\ncases: []\n", "missing field `about`")]
    #[case::unknown_top_level_key("suite: s\nabout: a\ncase: []\n", "unknown field `case`")]
    #[case::no_cases("suite: s\nabout: a\ncases: []\n", "has no cases")]
    #[case::bad_suite_name("suite: Bad Name\nabout: a\ncases: []\n", "lower-case")]
    #[case::not_yaml("suite: [\n", "suites/bad.yaml:")]
    fn a_bad_file_is_reported(#[case] text: &str, #[case] wanted: &str) {
        let message = parse_err(text);
        assert!(message.contains(wanted), "{message:?} lacks {wanted:?}");
    }

    #[test]
    fn a_directory_suite_replaces_the_embedded_one_and_a_bad_file_does_not_stop_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let embedded = load_embedded();
        let replaced = embedded.suites[0].name.clone();
        std::fs::write(
            dir.path().join("a.yaml"),
            format!("suite: {replaced}\nabout: mine\ncases:\n  - name: only\n    steps:\n      - version: {{}}\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.yaml"),
            "suite: b\nabout: x\ncases:\n  - name: c\n    steps:\n      - bogus: {}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a suite").unwrap();
        let loaded = load(Some(dir.path()));
        assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
        assert!(loaded.errors[0].to_string().contains("b.yaml:6:"));
        assert_eq!(loaded.suites.len(), embedded.suites.len());
        let mine = loaded.suites.iter().find(|s| s.name == replaced).unwrap();
        assert_eq!(mine.about, "mine");
    }

    #[test]
    fn two_files_defining_one_suite_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = "suite: same\nabout: x\ncases:\n  - name: c\n    steps:\n      - version: {}\n";
        std::fs::write(dir.path().join("a.yaml"), text).unwrap();
        std::fs::write(dir.path().join("b.yml"), text).unwrap();
        let loaded = load_dir(dir.path());
        assert_eq!(loaded.suites.len(), 1);
        assert!(matches!(loaded.errors[..], [SuiteError::Duplicate { .. }]));
    }

    #[test]
    fn every_embedded_suite_loads() {
        let loaded = load_embedded();
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        assert_eq!(loaded.suites.len(), EMBEDDED.len());
    }
}
