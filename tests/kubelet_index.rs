//! The index of the upstream kubelet kuberuntime tests (docs/kubelet-tests.yaml): every test
//! function and table row of the inventory under tests/fixtures/kubelet/v1.34/ maps to a unit
//! case, a suite case or a reason, each mapped case exists, and docs/kubelet-tests.md is the
//! index rendered. `UPDATE_KUBELET_INDEX=1 cargo test --test all kubelet_index` rewrites the page.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

const INDEX: &str = "docs/kubelet-tests.yaml";
const PAGE: &str = "docs/kubelet-tests.md";
const FIXTURES: &str = "tests/fixtures/kubelet/v1.34";
/// A reason shorter than this says nothing a reviewer could accept.
const SHORTEST_REASON: usize = 24;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    version: String,
    /// What a reader must know about the upstream copies read.
    #[serde(default)]
    notes: Vec<String>,
    files: Vec<File>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    file: String,
    source: String,
    functions: Vec<Function>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Function {
    name: String,
    #[serde(default)]
    port: Option<Ports>,
    #[serde(default)]
    rows: Vec<Row>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    name: String,
    port: Ports,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Ports {
    One(String),
    Many(Vec<String>),
}

impl Ports {
    fn all(&self) -> Vec<&str> {
        match self {
            Ports::One(port) => vec![port.as_str()],
            Ports::Many(ports) => ports.iter().map(String::as_str).collect(),
        }
    }
}

/// Where one function or row went.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Port {
    /// An rstest case or test function: module path, function, case.
    Unit {
        module: String,
        function: String,
        case: Option<String>,
    },
    /// A suite case.
    Suite { suite: String, case: String },
    /// Work another change is bringing.
    Pending(String),
    /// Left out, with the reason.
    NotPorted(String),
}

fn parse(port: &str) -> Result<Port, String> {
    if let Some(path) = port.strip_prefix("unit: ") {
        let (path, case) = match path.split_once('#') {
            Some((path, case)) => (path, Some(case.to_owned())),
            None => (path, None),
        };
        let (module, function) = path
            .rsplit_once("::")
            .ok_or_else(|| format!("`{port}`: a unit port is MODULE::FN[#CASE]"))?;
        return Ok(Port::Unit {
            module: module.to_owned(),
            function: function.to_owned(),
            case,
        });
    }
    if let Some(path) = port.strip_prefix("suite: ") {
        let (suite, case) = path
            .split_once('/')
            .ok_or_else(|| format!("`{port}`: a suite port is SUITE/CASE"))?;
        return Ok(Port::Suite {
            suite: suite.to_owned(),
            case: case.to_owned(),
        });
    }
    if let Some(reason) = port.strip_prefix("not ported: ") {
        if let Some(feature) = reason.strip_prefix("pending ") {
            return Ok(Port::Pending(feature.trim().to_owned()));
        }
        if reason.trim().len() < SHORTEST_REASON {
            return Err(format!("`{port}`: the reason says too little"));
        }
        return Ok(Port::NotPorted(reason.trim().to_owned()));
    }
    Err(format!(
        "`{port}`: a port is `unit: MODULE::FN[#CASE]`, `suite: SUITE/CASE` or `not ported: REASON`"
    ))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: impl AsRef<Path>) -> String {
    let path = root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn index() -> Index {
    serde_saphyr::from_str(&read(INDEX)).unwrap_or_else(|e| panic!("{INDEX}: {e}"))
}

/// Each entry of the index: file, function, row (if a table's), its ports.
fn entries(index: &Index) -> Vec<(&str, &str, Option<&str>, Vec<&str>)> {
    let mut out = Vec::new();
    for file in &index.files {
        for function in &file.functions {
            match (&function.port, function.rows.is_empty()) {
                (Some(port), true) => {
                    out.push((file.file.as_str(), function.name.as_str(), None, port.all()))
                }
                (None, false) => {
                    for row in &function.rows {
                        out.push((
                            file.file.as_str(),
                            function.name.as_str(),
                            Some(row.name.as_str()),
                            row.port.all(),
                        ));
                    }
                }
                _ => panic!(
                    "{}: {}: give either `port` or `rows`, one of them",
                    file.file, function.name
                ),
            }
        }
    }
    out
}

/// The source file a module path lives in: the longest prefix that is a file (`a/b.rs` or
/// `a/b/mod.rs`), so inline `mod tests` resolve to their parent's file.
fn module_file(module: &str) -> Option<PathBuf> {
    let segments: Vec<&str> = module.split("::").collect();
    (1..=segments.len()).rev().find_map(|n| {
        let base = root().join("src").join(segments[..n].join("/"));
        [base.with_extension("rs"), base.join("mod.rs")]
            .into_iter()
            .find(|p| p.is_file())
    })
}

/// Whether `function` is defined in `module` and, for a case, whether the attributes right
/// above that function name it.
fn unit_exists(module: &str, function: &str, case: Option<&str>) -> Result<(), String> {
    let file = module_file(module).ok_or_else(|| format!("no source file for `{module}`"))?;
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    let starts: Vec<usize> = [format!("fn {function}("), format!("fn {function}<")]
        .iter()
        .flat_map(|needle| text.match_indices(needle.as_str()).map(|(i, _)| i))
        .collect();
    let [start] = starts[..] else {
        return Err(format!(
            "`{function}` is defined {} times in {}",
            starts.len(),
            file.display()
        ));
    };
    let Some(case) = case else { return Ok(()) };
    // The attribute block: from the last blank line before the function to the function.
    let block_start = text[..start].rfind("\n\n").unwrap_or(0);
    let block = &text[block_start..start];
    let named = [format!("#[case::{case}("), format!("#[case::{case}]")]
        .iter()
        .any(|attribute| block.contains(attribute.as_str()));
    if named {
        Ok(())
    } else {
        Err(format!(
            "`{function}` in {} has no case `{case}`",
            file.display()
        ))
    }
}

#[derive(Debug, Deserialize)]
struct SuiteFile {
    suite: String,
    #[serde(default)]
    cases: Vec<SuiteCase>,
}

#[derive(Debug, Deserialize)]
struct SuiteCase {
    name: String,
}

/// Every suite's case names, read from suites/.
fn suite_cases() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("suites")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let suite: SuiteFile =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.insert(
            suite.suite,
            suite.cases.into_iter().map(|c| c.name).collect(),
        );
    }
    out
}

/// The fixture's lines: `FUNCTION` or `FUNCTION/ROW`, comments and blanks skipped.
fn fixture(file: &str) -> Vec<String> {
    let name = Path::new(file).file_name().unwrap().to_str().unwrap();
    read(format!("{FIXTURES}/{name}.txt"))
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_port_parses_and_every_mapped_case_exists() {
    let index = index();
    let suites = suite_cases();
    let mut problems = Vec::new();
    for (file, function, row, ports) in entries(&index) {
        let at = match row {
            Some(row) => format!("{file}: {function}/{row}"),
            None => format!("{file}: {function}"),
        };
        if ports.is_empty() {
            problems.push(format!("{at}: no port"));
        }
        for port in ports {
            match parse(port) {
                Err(e) => problems.push(format!("{at}: {e}")),
                Ok(Port::Unit {
                    module,
                    function,
                    case,
                }) => {
                    if let Err(e) = unit_exists(&module, &function, case.as_deref()) {
                        problems.push(format!("{at}: {e}"));
                    }
                }
                Ok(Port::Suite { suite, case }) => match suites.get(&suite) {
                    None => problems.push(format!("{at}: no suite `{suite}` in suites/")),
                    Some(cases) if !cases.contains(&case) => {
                        problems.push(format!("{at}: suite `{suite}` has no case `{case}`"))
                    }
                    Some(_) => {}
                },
                Ok(Port::Pending(_) | Port::NotPorted(_)) => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_index_covers_the_upstream_inventory_exactly() {
    let index = index();
    let mut problems = Vec::new();
    let fixtures: BTreeSet<String> = std::fs::read_dir(root().join(FIXTURES))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let indexed: BTreeSet<String> = index
        .files
        .iter()
        .map(|f| {
            format!(
                "{}.txt",
                Path::new(&f.file).file_name().unwrap().to_str().unwrap()
            )
        })
        .collect();
    for missing in fixtures.difference(&indexed) {
        problems.push(format!("fixture {missing} has no file in the index"));
    }
    for file in &index.files {
        let expected = fixture(&file.file);
        let listed: Vec<String> = entries(&index)
            .into_iter()
            .filter(|(f, ..)| *f == file.file)
            .map(|(_, function, row, _)| match row {
                Some(row) => format!("{function}/{row}"),
                None => function.to_owned(),
            })
            .collect();
        let once: BTreeSet<&String> = listed.iter().collect();
        if once.len() != listed.len() {
            problems.push(format!("{}: an entry is listed twice", file.file));
        }
        let expected_set: BTreeSet<&String> = expected.iter().collect();
        for missing in expected_set.difference(&once) {
            problems.push(format!("{}: `{missing}` is not in the index", file.file));
        }
        for extra in once.difference(&expected_set) {
            problems.push(format!("{}: `{extra}` is not upstream", file.file));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The figures the page opens with.
#[derive(Default)]
struct Counts {
    functions: usize,
    rows: usize,
    entries: usize,
    unit: usize,
    suite: usize,
    pending: BTreeMap<String, usize>,
    not_ported: BTreeMap<String, usize>,
}

fn count(index: &Index) -> Counts {
    let mut counts = Counts::default();
    for file in &index.files {
        counts.functions += file.functions.len();
        counts.rows += file.functions.iter().map(|f| f.rows.len()).sum::<usize>();
    }
    for (.., ports) in entries(index) {
        counts.entries += 1;
        // An entry counts once, by its first port.
        match parse(ports[0]).unwrap() {
            Port::Unit { .. } => counts.unit += 1,
            Port::Suite { .. } => counts.suite += 1,
            Port::Pending(feature) => *counts.pending.entry(feature).or_default() += 1,
            Port::NotPorted(reason) => *counts.not_ported.entry(reason).or_default() += 1,
        }
    }
    counts
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn render(index: &Index) -> String {
    let counts = count(index);
    let mut page = String::new();
    let _ = writeln!(page, "# The kubelet's kuberuntime tests, row by row\n");
    let _ = writeln!(
        page,
        "Generated from `{INDEX}` by `tests/kubelet_index.rs` (`UPDATE_KUBELET_INDEX=1 cargo test \
         --test all kubelet_index`); edit the YAML, not this page.\n"
    );
    let _ = writeln!(
        page,
        "Target: **{}**. Every upstream test function, and every row of a table test, maps to an \
         rstest case (`unit:`, a module path in `src/`), a suite case (`suite: SUITE/CASE` in \
         `suites/`), or a reason it is not ported. `pending` marks work in flight \
         and is counted apart. The test fails when a row has no mapping, a mapped case is \
         missing, or the inventory in `{FIXTURES}/` is not covered exactly.\n",
        index.version
    );
    if !index.notes.is_empty() {
        let _ = writeln!(page, "## Sources\n");
        for note in &index.notes {
            let _ = writeln!(page, "- {}", cell(note));
        }
        let _ = writeln!(page);
    }
    let _ = writeln!(page, "## Figures\n");
    let _ = writeln!(page, "| | count |\n|---|---|");
    let _ = writeln!(page, "| test functions | {} |", counts.functions);
    let _ = writeln!(page, "| table rows | {} |", counts.rows);
    let _ = writeln!(
        page,
        "| entries (rows, and functions without rows) | {} |",
        counts.entries
    );
    let _ = writeln!(page, "| ported as unit tables | {} |", counts.unit);
    let _ = writeln!(page, "| ported as suite cases | {} |", counts.suite);
    let _ = writeln!(
        page,
        "| pending | {} |",
        counts.pending.values().sum::<usize>()
    );
    let _ = writeln!(
        page,
        "| not ported | {} |\n",
        counts.not_ported.values().sum::<usize>()
    );
    let _ = writeln!(page, "### Pending\n\n| feature | entries |\n|---|---|");
    for (feature, n) in &counts.pending {
        let _ = writeln!(page, "| {} | {n} |", cell(feature));
    }
    let _ = writeln!(page, "\n### Not ported\n\n| reason | entries |\n|---|---|");
    for (reason, n) in &counts.not_ported {
        let _ = writeln!(page, "| {} | {n} |", cell(reason));
    }
    for file in &index.files {
        let _ = writeln!(page, "\n## `{}`\n\n{}\n", file.file, file.source);
        let _ = writeln!(page, "| function | row | port |\n|---|---|---|");
        for function in &file.functions {
            let mut emit = |row: &str, ports: &Ports| {
                let ports: Vec<String> = ports
                    .all()
                    .iter()
                    .map(|p| format!("`{}`", cell(p)))
                    .collect();
                let _ = writeln!(
                    page,
                    "| {} | {} | {} |",
                    function.name,
                    cell(row),
                    ports.join("<br>")
                );
            };
            match &function.port {
                Some(port) => emit("", port),
                None => {
                    for row in &function.rows {
                        emit(&row.name, &row.port);
                    }
                }
            }
        }
    }
    page
}

#[test]
fn nothing_is_left_pending() {
    // Pending marked work in flight while the rows were being ported; a finished index has
    // every row ported or given a reason.
    let pending = count(&index()).pending;
    assert!(pending.is_empty(), "rows still pending: {pending:?}");
}

#[test]
fn the_page_is_the_index_rendered() {
    let page = render(&index());
    if std::env::var_os("UPDATE_KUBELET_INDEX").is_some() {
        std::fs::write(root().join(PAGE), &page).unwrap();
        return;
    }
    let current = std::fs::read_to_string(root().join(PAGE)).unwrap_or_default();
    assert!(
        current == page,
        "{PAGE} is stale: run `UPDATE_KUBELET_INDEX=1 cargo test --test all kubelet_index`"
    );
}

#[test]
fn a_port_is_one_of_three_kinds() {
    assert_eq!(
        parse("unit: a::b::f#c"),
        Ok(Port::Unit {
            module: "a::b".into(),
            function: "f".into(),
            case: Some("c".into())
        })
    );
    assert_eq!(
        parse("suite: s/c"),
        Ok(Port::Suite {
            suite: "s".into(),
            case: "c".into()
        })
    );
    assert_eq!(
        parse("not ported: pending lifecycle hooks"),
        Ok(Port::Pending("lifecycle hooks".into()))
    );
    assert!(parse("not ported: later").is_err(), "too short a reason");
    assert!(parse("ported").is_err());
    assert!(unit_exists("manager::lifecycle::actions::tests", "no_such_fn", None).is_err());
}
