//! Parsing and checking suite files. serde does the shape (its messages name the valid variants
//! and fields) and serde-saphyr gives every node's position; this file adds the checks serde
//! cannot make (aliases defined before use, mock-only steps marked), reading directories and
//! files, and the merging of embedded and extra suites.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, MapAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::step::{CheckError, Kind, Scope, Step};
use super::{yaml, Case, Need, PodIdentity, ReadProblem, Suite, SuiteError, EMBEDDED};
use crate::manager::KubeletProfile;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    suite: Spanned<String>,
    about: String,
    #[serde(default)]
    tags: Vec<String>,
    cases: Spanned<Vec<Spanned<RawCase>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: Spanned<String>,
    #[serde(default)]
    about: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    needs: Vec<Need>,
    #[serde(default)]
    kubelet: Option<KubeletProfile>,
    #[serde(default)]
    feature_gates: crate::manager::FeatureGates,
    #[serde(default)]
    crash_loop_back_off: crate::manager::lifecycle::CrashLoopConfig,
    #[serde(default)]
    mock_latency: super::MockLatency,
    #[serde(default)]
    pods: BTreeMap<String, PodIdentity>,
    /// The clause every expectation of the case checks unless its step names its own.
    #[serde(default)]
    clause: Option<Spanned<String>>,
    steps: Vec<Spanned<RawStep>>,
}

/// A step as written: the step's single key first, then optionally `clause: ID`, the
/// contract clause its expectation checks.
#[derive(Debug)]
struct RawStep {
    step: Step,
    clause: Option<String>,
}

impl<'de> Deserialize<'de> for RawStep {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StepVisitor;

        impl<'de> Visitor<'de> for StepVisitor {
            type Value = RawStep;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a step: a map of one step name, optionally followed by `clause:`")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawStep, A::Error> {
                // The step is the first key; serde's enum reading takes exactly that entry.
                let step = Step::deserialize(MapAccessDeserializer::new(&mut map))?;
                let mut clause = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "clause" {
                        return Err(de::Error::unknown_field(&key, &["clause"]));
                    }
                    if clause.is_some() {
                        return Err(de::Error::duplicate_field("clause"));
                    }
                    clause = Some(map.next_value::<String>()?);
                }
                Ok(RawStep { step, clause })
            }
        }

        deserializer.deserialize_map(StepVisitor)
    }
}

/// Suites that loaded and the files that did not.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Usable suites, sorted by name.
    pub suites: Vec<Suite>,
    /// One error per unusable file.
    pub errors: Vec<SuiteError>,
}

impl Loaded {
    /// Adds a parsed file, refusing a second file that defines an already loaded suite.
    fn add(&mut self, result: Result<Suite, SuiteError>) {
        match result {
            Ok(suite) => match self.suites.iter().find(|s| s.name == suite.name) {
                Some(first) => self.errors.push(SuiteError::Duplicate {
                    first: first.source.clone(),
                    second: suite.source,
                    suite: suite.name,
                }),
                None => self.suites.push(suite),
            },
            Err(err) => self.errors.push(err),
        }
    }

    fn sort(&mut self) {
        self.suites.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// The embedded suites.
pub fn load_embedded() -> Loaded {
    let mut loaded = Loaded::default();
    for (path, text) in EMBEDDED {
        loaded.add(parse(path, text));
    }
    loaded.sort();
    loaded
}

/// Every `*.yaml`/`*.yml` entry of `dir` (not recursive), in name order. An entry with that
/// name that is not a readable suite file (a directory, a dangling link, a FIFO) is an error,
/// not skipped: the user meant it as a suite.
pub fn load_dir(dir: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    let read_error = |problem| SuiteError::Read {
        path: dir.to_owned(),
        problem,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            loaded.errors.push(read_error(read_problem(err, dir)));
            return loaded;
        }
    };
    let mut paths = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                if path
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
                {
                    paths.push(path);
                }
            }
            Err(err) => loaded.errors.push(read_error(ReadProblem::Io(err))),
        }
    }
    paths.sort();
    for path in paths {
        loaded.add(read_and_parse(&path));
    }
    loaded.sort();
    loaded
}

/// One suite file, whatever its name.
pub fn load_file(path: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    loaded.add(read_and_parse(path));
    loaded
}

fn read_and_parse(path: &Path) -> Result<Suite, SuiteError> {
    let shown = path.display().to_string();
    let text = yaml::read(path, &shown)?;
    parse(&shown, &text)
}

fn read_problem(err: std::io::Error, path: &Path) -> ReadProblem {
    match err.kind() {
        std::io::ErrorKind::NotFound => match std::fs::read_link(path) {
            Ok(target) => ReadProblem::DanglingLink(target),
            Err(_) => ReadProblem::Missing,
        },
        std::io::ErrorKind::NotADirectory => ReadProblem::NotAFile("file"),
        _ => ReadProblem::Io(err),
    }
}

/// The embedded suites plus those of `extra`, a directory of suite files or one file; a suite
/// of `extra` replaces the embedded one of the same name (so a vendor can adapt a suite without
/// recompiling).
pub fn load(extra: Option<&Path>) -> Loaded {
    let mut loaded = load_embedded();
    if let Some(path) = extra {
        let more = if path.is_dir() {
            load_dir(path)
        } else {
            load_file(path)
        };
        for suite in more.suites {
            loaded.suites.retain(|s| s.name != suite.name);
            loaded.suites.push(suite);
        }
        loaded.errors.extend(more.errors);
        loaded.sort();
    }
    loaded
}

/// Parses one suite file; `file` is how messages name it.
pub fn parse(file: &str, text: &str) -> Result<Suite, SuiteError> {
    let invalid = |(line, column): (usize, usize), message: String| SuiteError::Invalid {
        file: file.to_owned(),
        line,
        column,
        message: yaml::escape(&message),
    };
    if let Some(at) = text.find('\0') {
        return Err(yaml::error_at(
            file,
            text,
            at,
            "a NUL byte: this is a binary file, not YAML text",
        ));
    }
    // Steps are single-key maps (`- stop_sandbox: old`): serde's externally tagged enums.
    let raw: RawSuite = serde_saphyr::from_str_with_options(text, yaml::options())
        .map_err(|err| yaml::parse_error(file, text, &err))?;
    let suite_at = spanned_at(&raw.suite, (1, 1));
    if !is_name(&raw.suite.value) {
        return Err(invalid(
            suite_at,
            format!(
                "suite name `{}` must be lower-case letters, digits, `-` and `_`",
                raw.suite.value
            ),
        ));
    }
    if raw.cases.value.is_empty() {
        return Err(invalid(
            spanned_at(&raw.cases, suite_at),
            format!("suite `{}` has no cases", raw.suite.value),
        ));
    }
    // The binary's own suites read the files they name from the binary too.
    let embedded = EMBEDDED
        .iter()
        .any(|&(path, own)| path == file && own == text);
    let mut names = BTreeSet::new();
    let mut cases = Vec::with_capacity(raw.cases.value.len());
    for raw_case in raw.cases.value {
        let (line, column) = spanned_at(&raw_case, suite_at);
        let raw_case = raw_case.value;
        let name_at = spanned_at(&raw_case.name, (line, column));
        let name = raw_case.name.value;
        let fail = |message: &str| invalid(name_at, format!("case `{name}`: {message}"));
        if !is_name(&name) {
            return Err(fail(
                "a case name must be lower-case letters, digits, `-` and `_`",
            ));
        }
        if !names.insert(name.clone()) {
            return Err(fail("another case of this suite has the same name"));
        }
        if raw_case.crash_loop_back_off != Default::default() {
            if raw_case.kubelet != Some(KubeletProfile::Current) {
                return Err(fail(
                    "`crash_loop_back_off` configures today's kubelet: the case must say `kubelet: current`",
                ));
            }
            if let Err(err) = raw_case.crash_loop_back_off.max() {
                return Err(fail(&format!("crash_loop_back_off: {err}")));
            }
        }
        let clause_at = raw_case
            .clause
            .as_ref()
            .map_or((line, column), |c| spanned_at(c, (line, column)));
        let (step_lines, step_columns) = raw_case
            .steps
            .iter()
            .map(|step| spanned_at(step, (line, column)))
            .unzip();
        let mut case = Case {
            name,
            about: raw_case.about,
            tags: raw.tags.iter().chain(&raw_case.tags).cloned().collect(),
            needs: raw_case.needs,
            kubelet: raw_case.kubelet,
            feature_gates: raw_case.feature_gates,
            crash_loop_back_off: raw_case.crash_loop_back_off,
            mock_latency: raw_case.mock_latency,
            pods: raw_case.pods,
            mentioned_pods: BTreeSet::new(),
            clause: raw_case.clause.as_ref().map(|c| c.value.clone()),
            step_clauses: raw_case
                .steps
                .iter()
                .map(|s| s.value.clause.clone())
                .collect(),
            steps: raw_case.steps.into_iter().map(|s| s.value.step).collect(),
            line,
            column,
            step_lines,
            step_columns,
        };
        case.tags.sort();
        case.tags.dedup();
        read_files(&mut case, file, embedded).map_err(|(index, message)| {
            invalid(
                case.step_position(index),
                format!("case `{}`: step {}: {message}", case.name, index + 1),
            )
        })?;
        case.mentioned_pods = check_case(&case).map_err(|err| {
            let at = err
                .step()
                .map_or((case.line, case.column), |i| case.step_position(i));
            invalid(at, format!("case `{}`: {err}", case.name))
        })?;
        check_clauses(&case, clause_at)
            .map_err(|(at, message)| invalid(at, format!("case `{}`: {message}", case.name)))?;
        cases.push(case);
    }
    Ok(Suite {
        name: raw.suite.value,
        about: raw.about.trim().to_owned(),
        tags: raw.tags,
        cases,
        source: file.to_owned(),
        embedded,
    })
}

/// Every clause the case names is one of the contract's.
fn check_clauses(case: &Case, clause_at: (usize, usize)) -> Result<(), ((usize, usize), String)> {
    let unknown = |id: &str| {
        format!(
            "unknown clause `{id}`; the clauses are listed in docs/contract.md (`cri-harness contract`)"
        )
    };
    if let Some(id) = case.clause.as_deref() {
        if crate::contract::contract().get(id).is_none() {
            return Err((clause_at, unknown(id)));
        }
    }
    for (index, clause) in case.step_clauses.iter().enumerate() {
        if let Some(id) = clause.as_deref() {
            if crate::contract::contract().get(id).is_none() {
                return Err((
                    case.step_position(index),
                    format!("step {}: {}", index + 1, unknown(id)),
                ));
            }
        }
    }
    Ok(())
}

/// Where a node was used (an alias's own position, not its anchor's), or `default`.
fn spanned_at<T>(node: &Spanned<T>, default: (usize, usize)) -> (usize, usize) {
    yaml::at(&node.referenced).unwrap_or(default)
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Reads the files the case's steps name (`sync_pod`'s `file:`), beside the suite file `file`;
/// the error carries the step's index.
fn read_files(case: &mut Case, file: &str, embedded: bool) -> Result<(), (usize, String)> {
    for (index, step) in case.steps.iter_mut().enumerate() {
        if let Step::SyncPod(sync) = step {
            sync.read_file(file, embedded)
                .map_err(|message| (index, format!("`sync_pod`: {message}")))?;
        }
    }
    Ok(())
}

/// Why a case fails the loader's checks; the message follows "case `NAME`: ".
#[derive(Debug, thiserror::Error)]
enum CaseError {
    /// A step fails its own check.
    #[error("step {} `{name}`: {error}", .index + 1)]
    Step {
        /// The step's index.
        index: usize,
        /// The step's name.
        name: &'static str,
        /// Why.
        error: CheckError,
    },
    /// A mock-only step in a case without `needs: [mock_control]`.
    #[error(
        "step {} `{name}`: needs the mock's control service; add `needs: [mock_control]` to the case",
        .index + 1
    )]
    Unmarked {
        /// The step's index.
        index: usize,
        /// The step's name.
        name: &'static str,
    },
    /// A pod alias of the case's `pods:` that cannot name a pod.
    #[error("pods: {0}")]
    Pod(CheckError),
    /// No step makes an expectation of the target.
    #[error("has no manager call and no checking step, so it checks nothing")]
    ChecksNothing,
    /// The mock's control service and a need the mock cannot meet.
    #[error(
        "needs both mock_control and {0}, which no target has: the mock runs no process and reaches no registry"
    )]
    NoTarget(Need),
}

impl CaseError {
    /// The index of the step the error is about, if it is about one.
    fn step(&self) -> Option<usize> {
        match self {
            CaseError::Step { index, .. } | CaseError::Unmarked { index, .. } => Some(*index),
            CaseError::Pod(_) | CaseError::ChecksNothing | CaseError::NoTarget(_) => None,
        }
    }
}

/// Checks what serde cannot: each step against the case so far (aliases defined before use and
/// not twice, pods named validly), mock-only steps marked, at least one manager call or checking
/// step, needs that some target can meet. Gives the pod aliases the case names.
fn check_case(case: &Case) -> Result<BTreeSet<String>, CaseError> {
    let mut scope = Scope::default();
    for (index, step) in case.steps.iter().enumerate() {
        let name = step.name();
        if step.kind() == Kind::MockControl && !case.needs_mock_control() {
            return Err(CaseError::Unmarked { index, name });
        }
        step.check(&mut scope)
            .map_err(|error| CaseError::Step { index, name, error })?;
    }
    for alias in case.pods.keys() {
        scope.pod(alias).map_err(CaseError::Pod)?;
    }
    if !case
        .steps
        .iter()
        .any(|step| matches!(step.kind(), Kind::Manager | Kind::Check))
    {
        return Err(CaseError::ChecksNothing);
    }
    for need in [Need::Process, Need::Online] {
        if case.needs_mock_control() && case.needs(need) {
            return Err(CaseError::NoTarget(need));
        }
    }
    Ok(scope.pods)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::suite::step::{Defined, GrpcCode, KillPod, RunSandbox, StopSandbox};

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
        assert_eq!((first.line, first.column), (5, 5));
        assert_eq!(first.step_lines, vec![8, 9, 10]);
        assert_eq!(first.step_columns, vec![9, 9, 9]);
        assert_eq!(first.tags, vec!["demo".to_owned(), "ip".to_owned()]);
        assert_eq!(
            first.steps[0],
            Step::RunSandbox(RunSandbox::new("old", "web"))
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

    #[rstest]
    #[case::absent("", None)]
    #[case::seed("    kubelet: seed\n", Some(KubeletProfile::Seed))]
    #[case::current("    kubelet: current\n", Some(KubeletProfile::Current))]
    fn a_case_may_state_the_kubelet_it_expects(
        #[case] line: &str,
        #[case] expected: Option<KubeletProfile>,
    ) {
        let text = format!(
            "suite: s\nabout: x\ncases:\n  - name: c\n{line}    steps:\n      - version: {{}}\n"
        );
        assert_eq!(parse("s.yaml", &text).unwrap().cases[0].kubelet, expected);
    }

    #[test]
    fn an_unknown_kubelet_is_refused_with_its_line_and_the_choices() {
        let text = "suite: s\nabout: x\ncases:\n  - name: c\n    kubelet: modern\n    steps:\n      - version: {}\n";
        let message = parse_err(text);
        for part in ["suites/bad.yaml:5:", "modern", "`seed`", "`current`"] {
            assert!(message.contains(part), "{message:?} lacks {part:?}");
        }
    }

    #[test]
    fn flow_style_steps_get_their_own_lines_and_columns() {
        let text = "suite: s\nabout: x\ncases:\n  - name: c\n    steps: [{run_sandbox: {as: a, pod: p}},\n      {stop_sandbox: a}, {version: {}}]\n";
        let case = &parse("s.yaml", text).unwrap().cases[0];
        assert_eq!(case.step_lines, vec![5, 6, 6]);
        assert_eq!(case.step_columns, vec![13, 7, 26]);
        assert_eq!(case.step_position(2), (6, 26));
    }

    #[test]
    fn a_steps_check_error_reaches_the_loader_typed_with_its_index() {
        let mut case = parse("s.yaml", GOOD).unwrap().cases.remove(0);
        case.steps
            .insert(1, Step::StopSandbox(StopSandbox("gone".to_owned())));
        let err = check_case(&case).unwrap_err();
        assert_eq!(err.step(), Some(1));
        let CaseError::Step { name, error, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(*name, "stop_sandbox");
        assert_eq!(
            *error,
            CheckError::UnknownAlias {
                alias: "gone".to_owned(),
                defined: Defined::Sandboxes(vec!["old".to_owned()]),
            }
        );
        assert_eq!(
            err.to_string(),
            "step 2 `stop_sandbox`: unknown sandbox alias `gone`; defined so far: `old`"
        );
    }

    fn parse_err(text: &str) -> String {
        parse("suites/bad.yaml", text).unwrap_err().to_string()
    }

    #[rstest]
    #[case::misspelt_step_lists_the_valid_steps(
        "      - run_sandbx: {as: a, pod: p}\n",
        &["suites/bad.yaml:6:9: case `c`: step 1: unknown step `run_sandbx`", "`run_sandbox`", "`get_pod_status`"]
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

    #[test]
    fn every_expectation_of_every_embedded_case_names_a_clause() {
        let mut missing = Vec::new();
        let mut expectations = 0;
        let mut by_level = BTreeMap::new();
        for suite in load_embedded().suites {
            for case in &suite.cases {
                for (index, step) in case.steps.iter().enumerate() {
                    if !case.expects(index) {
                        continue;
                    }
                    expectations += 1;
                    if let Some(clause) = case.clause_of(index) {
                        *by_level.entry(crate::contract::level(clause)).or_insert(0) += 1;
                    }
                    if case.clause_of(index).is_none() {
                        missing.push(format!(
                            "{}:{} `{}`",
                            suite.source,
                            case.step_line(index),
                            step.name()
                        ));
                    }
                }
            }
        }
        println!("{expectations} expectations, by level: {by_level:?}");
        assert!(expectations > 500, "{expectations} expectations");
        assert!(missing.is_empty(), "no clause: {missing:#?}");
    }

    #[rstest]
    #[case::on_the_case(
        "    clause: no.such-clause\n    steps:\n      - version: {}\n",
        "5:13: case `c`: unknown clause `no.such-clause`"
    )]
    #[case::on_a_step(
        "    steps:\n      - version: {}\n        clause: no.such-clause\n",
        "6:9: case `c`: step 1: unknown clause `no.such-clause`"
    )]
    #[case::before_the_step(
        "    steps:\n      - clause: runtime.status.ready\n        version: {}\n",
        "6:9: case `c`: step 1: unknown step `clause`"
    )]
    #[case::another_key(
        "    steps:\n      - version: {}\n        expect: {}\n",
        "7:9: case `c`: step 1 `version`: unknown field `expect`, expected one of `clause`"
    )]
    fn a_clause_is_checked_where_it_is_written(#[case] body: &str, #[case] wanted: &str) {
        let text = format!("suite: s\nabout: x\ncases:\n  - name: c\n{body}");
        let err = parse("s.yaml", &text).unwrap_err().to_string();
        assert!(err.contains(wanted), "{err}");
    }

    #[test]
    fn a_step_clause_overrides_the_cases_and_a_precondition_expects_nothing() {
        let text = "suite: s\nabout: x\ncases:\n  - name: c\n    clause: runtime.status.ready\n    steps:\n      - remove_image: {image: busybox, setup: true}\n      - runtime_status: {}\n      - runtime_version: {}\n        clause: runtime.version.answers\n";
        let case = &parse("s.yaml", text).unwrap().cases[0];
        assert!(!case.expects(0));
        assert_eq!(case.clause_of(1), Some("runtime.status.ready"));
        assert_eq!(case.clause_of(2), Some("runtime.version.answers"));
    }
}
