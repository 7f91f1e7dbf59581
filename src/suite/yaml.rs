//! The YAML layer of the loader: serde-saphyr with this project's limits, reading suite paths
//! without blocking or following them blindly, and turning parser errors into messages in the
//! suite's words (case, step, key) at the offending node.

use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::ops::ControlFlow;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::rc::Rc;
use std::sync::LazyLock;

use regex::Regex;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::{Event, Parser};
use serde_saphyr::options::MergeKeyPolicy;
use serde_saphyr::{Budget, Error, Location, Options};

use super::{ReadProblem, SuiteError};

/// The largest suite file read, in bytes. 40,000 generated cases take 5 MB; a person writes
/// far less.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The deepest nesting of lists and mappings a suite may have; the format itself needs 8.
pub const MAX_DEPTH: usize = 32;

/// The most scalar text a suite may hold once aliases are expanded, in bytes: an alias repeats
/// its anchor's text, so this bounds what a small file can make the loader allocate.
pub const MAX_EXPANDED_BYTES: usize = 32 * 1024 * 1024;

/// The most nodes that aliases may replay in one file (a billion-laughs file needs 10⁹).
const MAX_REPLAYED_NODES: usize = 100_000;

/// The parser options every suite is read with.
pub(super) fn options() -> Options {
    let mut budget = Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.flow_nesting_limit = MAX_DEPTH;
    // The defaults (250,000 nodes) refuse a 40,000-case suite; the file size bounds these.
    budget.max_nodes = MAX_FILE_BYTES as usize;
    budget.max_events = 2 * MAX_FILE_BYTES as usize;
    budget.max_total_scalar_bytes = MAX_EXPANDED_BYTES;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = MAX_REPLAYED_NODES;
    // YAML 1.2 booleans only (`yes` stays a string), as serde_yaml read suites before.
    options.strict_booleans = true;
    // `<<` would silently add keys to a step; the format has no use for it.
    options.merge_keys = MergeKeyPolicy::Error;
    options
}

/// Reads one suite file: a regular file (or a link to one) of at most [`MAX_FILE_BYTES`] of
/// UTF-8 text. A FIFO, socket or device is refused without opening it, so a stray FIFO cannot
/// block the loader.
pub(super) fn read(path: &Path, shown: &str) -> Result<String, SuiteError> {
    let fail = |problem| SuiteError::Read {
        path: path.to_owned(),
        problem,
    };
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(fail(match std::fs::read_link(path) {
                Ok(target) => ReadProblem::DanglingLink(target),
                Err(_) => ReadProblem::Missing,
            }));
        }
        Err(err) => return Err(fail(io_problem(err))),
    };
    if meta.is_dir() {
        return Err(fail(ReadProblem::Directory));
    }
    if !meta.is_file() {
        return Err(fail(ReadProblem::NotAFile(file_kind(&meta.file_type()))));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(fail(ReadProblem::TooLarge { size: meta.len() }));
    }
    // O_NONBLOCK: should the path become a FIFO after the check, opening it must not wait for
    // a writer. It does not change reads of a regular file.
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| fail(io_problem(err)))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| fail(io_problem(err)))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(fail(ReadProblem::TooLarge {
            size: bytes.len() as u64,
        }));
    }
    String::from_utf8(bytes).map_err(|err| {
        let bytes = err.as_bytes();
        let at = err.utf8_error().valid_up_to();
        let valid = String::from_utf8_lossy(&bytes[..at]);
        error_at(
            shown,
            &valid,
            valid.len(),
            &format!(
                "byte 0x{:02X} is not UTF-8 text; a suite file is UTF-8 YAML",
                bytes[at]
            ),
        )
    })
}

fn io_problem(err: std::io::Error) -> ReadProblem {
    match err.kind() {
        std::io::ErrorKind::NotFound => ReadProblem::Missing,
        _ => ReadProblem::Io(err),
    }
}

fn file_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

/// The 1-based line and character column of byte `at` of `text`.
pub(super) fn position_of(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// A YAML location as 1-based `(line, column)`, `None` when the parser did not know it.
pub(super) fn at(location: &Location) -> Option<(usize, usize)> {
    let line = usize::try_from(location.line()).ok()?;
    let column = usize::try_from(location.column()).ok()?;
    (line > 0 && column > 0).then_some((line, column))
}

/// A serde-saphyr error as a suite error: the position of the offending node (moved inside the
/// file when the parser points past its end) and a message that names the case, step and key.
pub(super) fn parse_error(file: &str, text: &str, err: &Error) -> SuiteError {
    let (line, column) = inside(text, err.location().as_ref().and_then(at));
    let mut context = Context::at(text, (line, column));
    if matches!(err.without_snippet(), Error::SerdeUnknownVariant { .. }) && context.at_step() {
        // "step 1 `run_sandbx`: unknown step `run_sandbx`" says it twice.
        context.step_name = None;
    }
    if !matches!(err.without_snippet(), Error::ExternalMessage { .. }) {
        // Only a syntax error needs the key before it to be placed; for the others the last
        // key may belong to another case (or to the first of two documents).
        context.near = None;
    }
    let message = escape(&format!(
        "{}{}",
        context.prefix(),
        describe(err, &context, text)
    ));
    SuiteError::Parse {
        file: file.to_owned(),
        line,
        column,
        message,
    }
}

/// An error the loader finds itself (a NUL byte, a byte that is not UTF-8) at byte `at` of
/// `text`, placed in the suite like a parser error.
pub(super) fn error_at(file: &str, text: &str, at: usize, message: &str) -> SuiteError {
    let (line, column) = position_of(text, at);
    let context = Context::at(&text[..at], (line, column));
    SuiteError::Parse {
        file: file.to_owned(),
        line,
        column,
        message: escape(&format!("{}{message}", context.prefix())),
    }
}

/// `position`, or the last non-blank character of the file when it is unknown or past the end
/// (the parser reports a missing value at the start of the line after the file).
fn inside(text: &str, position: Option<(usize, usize)>) -> (usize, usize) {
    let last = text
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_whitespace())
        .map_or((1, 1), |(i, _)| position_of(text, i));
    let Some((line, column)) = position else {
        return last;
    };
    match text.lines().nth(line - 1) {
        Some(content) if (line, column) <= last => (line, column.min(content.chars().count() + 1)),
        _ => last,
    }
}

/// One step of the path from the document's root to a node.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    /// The value of this key of a mapping (shared: the walker copies paths at every node).
    Key(Rc<str>),
    /// This item (0-based) of a list.
    Index(usize),
}

/// Where in the suite a position is: the key path of the node there, and the names of its case
/// and step, which may be written after it (`name:` after `steps:`).
#[derive(Debug, Default)]
struct Context {
    path: Vec<Seg>,
    /// The text of the scalar that starts at the position, if one does.
    scalar: Option<String>,
    case_name: Option<String>,
    step_name: Option<String>,
    /// The step is a bare scalar (`- stop_sandbox`), not a single-key mapping.
    step_is_scalar: bool,
    /// The last key before the position, to place an error that has no path (a syntax error
    /// at the top level).
    near: Option<String>,
}

/// What the walker tells its visitor about each node.
struct Node<'a> {
    /// The node is a mapping key.
    key: bool,
    /// Its text, for a scalar.
    scalar: Option<&'a str>,
    /// 1-based line and column of its start.
    at: (usize, usize),
}

impl Context {
    /// Finds the node at `target`: the last one that starts at or before it. Two passes over
    /// the events, only when a file fails to load.
    fn at(text: &str, target: (usize, usize)) -> Context {
        let mut context = Context::default();
        walk(text, |path, node| {
            if node.at > target {
                return ControlFlow::Break(());
            }
            context.path.clear();
            context.path.extend_from_slice(path);
            context.scalar = (node.at == target)
                .then(|| node.scalar.map(str::to_owned))
                .flatten();
            if node.key && node.at < target {
                context.near = node.scalar.map(str::to_owned);
            }
            ControlFlow::Continue(())
        });
        let (Some(case), step) = (context.case(), context.step()) else {
            return context;
        };
        let mut seen = false;
        walk(text, |path, node| {
            match path {
                [Seg::Key(cases), Seg::Index(i), rest @ ..]
                    if &**cases == "cases" && *i == case =>
                {
                    seen = true;
                    match rest {
                        [Seg::Key(name)] if &**name == "name" && !node.key => {
                            context.case_name = node.scalar.map(str::to_owned);
                        }
                        [Seg::Key(steps), Seg::Index(j)]
                            if &**steps == "steps"
                                && Some(*j) == step
                                && context.step_name.is_none() =>
                        {
                            context.step_name = node.scalar.map(str::to_owned);
                            context.step_is_scalar = !node.key && node.scalar.is_some();
                        }
                        _ => {}
                    }
                }
                _ if seen => return ControlFlow::Break(()),
                _ => {}
            }
            ControlFlow::Continue(())
        });
        context
    }

    fn case(&self) -> Option<usize> {
        match &self.path[..] {
            [Seg::Key(cases), Seg::Index(i), ..] if &**cases == "cases" => Some(*i),
            _ => None,
        }
    }

    fn step(&self) -> Option<usize> {
        match &self.path[..] {
            [Seg::Key(cases), Seg::Index(_), Seg::Key(steps), Seg::Index(j), ..]
                if &**cases == "cases" && &**steps == "steps" =>
            {
                Some(*j)
            }
            _ => None,
        }
    }

    /// True when the node is a step item itself, not something inside it.
    fn at_step(&self) -> bool {
        self.step().is_some() && self.path.len() == 4
    }

    /// "case `x`: step 2 `run_sandbox`: `labels.app`: " for the node's place.
    fn prefix(&self) -> String {
        let mut parts = Vec::new();
        let mut rest = &self.path[..];
        if let Some(case) = self.case() {
            parts.push(match &self.case_name {
                Some(name) => format!("case `{}`", shorten(name)),
                None => format!("case {}", case + 1),
            });
            rest = &rest[2..];
            if let Some(step) = self.step() {
                parts.push(match &self.step_name {
                    Some(name) => format!("step {} `{}`", step + 1, shorten(name)),
                    None => format!("step {}", step + 1),
                });
                // Past the step's own key (its name, already said).
                rest = rest.get(3..).unwrap_or_default();
            }
        }
        if !rest.is_empty() {
            parts.push(format!("`{}`", key_path(rest)));
        } else if let (true, Some(near)) = (self.path.is_empty(), &self.near) {
            parts.push(format!("after `{}`", shorten(near)));
        }
        parts.iter().map(|p| format!("{p}: ")).collect()
    }
}

/// `expect.results[2].action`, list items counted from 1 as steps are.
fn key_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&shorten(key));
            }
            Seg::Index(i) => out.push_str(&format!("[{}]", i + 1)),
        }
    }
    out
}

/// Walks the document's nodes in order with the key path of each, until `visit` breaks or the
/// text stops parsing. A key's path is its mapping's; a value's path ends with its key.
fn walk(text: &str, mut visit: impl FnMut(&[Seg], Node<'_>) -> ControlFlow<()>) {
    #[derive(PartialEq)]
    enum Role {
        Root,
        Key,
        Value,
        Item,
    }
    struct Frame {
        map: bool,
        expecting_key: bool,
        key: Rc<str>,
        items: usize,
        role: Role,
    }
    fn finish(stack: &mut [Frame], path: &mut Vec<Seg>, role: &Role) {
        let Some(top) = stack.last_mut() else {
            return;
        };
        match role {
            Role::Root => {}
            Role::Key => top.expecting_key = false,
            Role::Value => {
                path.pop();
                top.expecting_key = true;
            }
            Role::Item => {
                path.pop();
                top.items += 1;
            }
        }
    }
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut path: Vec<Seg> = Vec::new();
    while let Some(Ok((event, span))) = parser.next_event() {
        let (collection, map, scalar) = match &event {
            Event::Scalar(value, ..) => (false, false, Some(value.as_ref())),
            Event::Alias(_) => (false, false, None),
            Event::MappingStart(..) => (true, true, None),
            Event::SequenceStart(..) => (true, false, None),
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some(frame) = stack.pop() {
                    finish(&mut stack, &mut path, &frame.role);
                }
                continue;
            }
            _ => continue,
        };
        let role = match stack.last_mut() {
            None => Role::Root,
            Some(top) if top.map && top.expecting_key => {
                top.key = Rc::from(scalar.unwrap_or("?"));
                Role::Key
            }
            Some(top) if top.map => {
                path.push(Seg::Key(top.key.clone()));
                Role::Value
            }
            Some(top) => {
                path.push(Seg::Index(top.items));
                Role::Item
            }
        };
        let node = Node {
            key: role == Role::Key,
            scalar,
            at: (span.start.line(), span.start.col() + 1),
        };
        if visit(&path, node).is_break() {
            return;
        }
        if collection {
            stack.push(Frame {
                map,
                expecting_key: true,
                key: Rc::from(""),
                items: 0,
                role,
            });
        } else {
            finish(&mut stack, &mut path, &role);
        }
    }
}

/// What the error says, in the suite's words.
fn describe(err: &Error, context: &Context, text: &str) -> String {
    let found = || {
        context
            .scalar
            .as_deref()
            .map(|s| format!(", found `{}`", shorten(s)))
            .unwrap_or_default()
    };
    match err {
        Error::WithSnippet { error, .. } => describe(error, context, text),
        Error::AliasError {
            error, locations, ..
        } => {
            let anchor = at(&locations.defined_location)
                .map(|(l, c)| format!(" (through an alias of the anchor at {l}:{c})"))
                .unwrap_or_default();
            format!("{}{anchor}", describe(error, context, text))
        }
        Error::Eof { .. } if text.trim().is_empty() => {
            "the file is empty; a suite needs `suite`, `about` and `cases`".to_owned()
        }
        Error::Eof { .. } => "the file ends in the middle of a value".to_owned(),
        Error::MultipleDocuments { .. } => {
            "a second YAML document starts here; a suite file holds one".to_owned()
        }
        Error::SerdeUnknownField {
            field, expected, ..
        } => format!(
            "unknown field `{}`, expected one of {}",
            shorten(field),
            choices(expected)
        ),
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } if context.at_step() => format!(
            "unknown step `{}`, expected one of {}",
            shorten(variant),
            choices(expected)
        ),
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } => format!(
            "unknown value `{}`, expected one of {}",
            shorten(variant),
            choices(expected)
        ),
        Error::SerdeMissingField { field, .. } => format!("missing field `{field}`"),
        Error::DuplicateMappingKey { key: Some(key), .. } => {
            format!("duplicate key `{}`: it is already set above", shorten(key))
        }
        Error::DuplicateMappingKey { key: None, .. } => {
            "duplicate key: it is already set above".to_owned()
        }
        Error::ExpectedMappingEndAfterEnumVariantValue { .. } => {
            "a second key in one step; a step is a single-key mapping, so start a new `- ` item"
                .to_owned()
        }
        Error::ExpectedStringKeyForExternallyTaggedEnum { .. }
        | Error::ExternallyTaggedEnumExpectedScalarOrMapping { .. } => {
            "expected a step: a single-key mapping such as `stop_sandbox: old`".to_owned()
        }
        _ if context.at_step() && context.step_is_scalar => format!(
            "a step is a single-key mapping such as `stop_sandbox: old`; `{}` has no value",
            context
                .step_name
                .as_deref()
                .map(shorten)
                .unwrap_or_default()
        ),
        Error::Unexpected { expected, .. } if context.path.is_empty() => format!(
            "a suite file is a mapping of `suite`, `about` and `cases`; expected {}{}",
            words(expected),
            found()
        ),
        Error::Unexpected { expected, .. } => format!("expected {}{}", words(expected), found()),
        Error::InvalidScalar { ty, .. } => format!("expected {}{}", words(ty), found()),
        // Where the walk names no key, the empty text is a key itself (`: value`).
        Error::NullIntoString { .. } if context.path.is_empty() => {
            "expected a string, found nothing: a key is empty (nothing before its `:`)".to_owned()
        }
        Error::NullIntoString { .. } => "expected a string, found nothing".to_owned(),
        Error::InvalidBooleanStrict { .. } => format!("expected `true` or `false`{}", found()),
        Error::SerdeInvalidType {
            unexpected,
            expected,
            ..
        }
        | Error::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        } => format!(
            "expected {}, found {}",
            words(expected),
            rust_free(unexpected)
        ),
        Error::SerdeInvalidLength { len, expected, .. } => {
            format!("{len} items, expected {}", words(expected))
        }
        Error::UnexpectedValueForUnitEnumVariant { .. } => {
            format!("this takes no value{}", found())
        }
        Error::UnknownAnchor { .. } => "an alias of an anchor not defined before it".to_owned(),
        Error::MergeKeyNotAllowed { .. } => "merge keys (`<<`) are not supported".to_owned(),
        Error::UnsupportedTag { tag, .. } => format!("unsupported tag `{}`", shorten(tag)),
        Error::Budget { breach, .. } => budget(breach),
        Error::AliasReplayLimitExceeded { .. }
        | Error::AliasExpansionLimitExceeded { .. }
        | Error::AliasReplayCounterOverflow { .. } => format!(
            "aliases expand to more than {MAX_REPLAYED_NODES} nodes, the most a suite may expand"
        ),
        Error::AliasReplayStackDepthExceeded { max_depth, .. } => {
            format!("aliases nest more than {max_depth} deep")
        }
        Error::Message { msg, .. } | Error::ExternalMessage { msg, .. } => rust_free(msg),
        other => rust_free(&strip_location(&other.without_snippet().to_string())),
    }
}

fn budget(breach: &BudgetBreach) -> String {
    match breach {
        BudgetBreach::Depth { .. } => {
            format!("nested more than {MAX_DEPTH} levels deep, the most a suite may nest")
        }
        BudgetBreach::ScalarBytes { .. } => format!(
            "more than {MAX_EXPANDED_BYTES} bytes of text once aliases are expanded, the most a \
             suite may hold"
        ),
        BudgetBreach::Aliases { aliases } => format!("too many aliases ({aliases})"),
        BudgetBreach::Anchors { anchors } => format!("too many anchors ({anchors})"),
        BudgetBreach::AliasAnchorRatio { aliases, anchors } => {
            format!("{aliases} aliases of only {anchors} anchors, which looks like an alias bomb")
        }
        BudgetBreach::Documents { documents } => {
            format!("{documents} YAML documents; a suite file holds one")
        }
        BudgetBreach::Nodes { .. } | BudgetBreach::Events { .. } => {
            "more nodes than a suite file may have".to_owned()
        }
        other => rust_free(&format!("a parser limit is exceeded: {other:?}")),
    }
}

/// `` `a`, `b`, `c` `` for serde's lists of valid names.
fn choices(names: &[&str]) -> String {
    if names.is_empty() {
        return "nothing (no keys allowed here)".to_owned();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// serde's and the parser's names of what was expected, in suite words.
fn words(expected: &str) -> String {
    let expected = expected.trim();
    let spelled = match expected {
        "u8" | "u16" | "u32" => {
            return format!("a whole number from 0 to {}", max_of(expected));
        }
        "u64" | "u128" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "bool" | "a boolean" => "`true` or `false`",
        "char" | "a character" => "a single character",
        "string" | "a string" | "string scalar" | "String" | "scalar" | "a borrowed string" => {
            "a string"
        }
        "mapping start" | "mapping" | "a map" | "map" | "struct variant" => "a mapping",
        "sequence start" | "sequence" | "a sequence" | "seq" => "a list",
        "enum Step" => "a step: a single-key mapping such as `stop_sandbox: old`",
        _ => return rust_free(expected),
    };
    spelled.to_owned()
}

fn max_of(ty: &str) -> u32 {
    match ty {
        "u8" => u8::MAX.into(),
        "u16" => u16::MAX.into(),
        _ => u32::MAX,
    }
}

/// Replaces the Rust type names serde puts in messages (`struct RawCase`, `enum NetworkState`,
/// `u32`) with what a suite author writes; the position and key path say which one.
fn rust_free(text: &str) -> String {
    static RUST: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"\b(?:(struct|enum) [A-Z][A-Za-z0-9_]*|(tuple|newtype|unit|struct) variant|[ui](?:8|16|32|64|128|size)|f32|f64|Option<[^>]*>|Vec<[^>]*>|BTreeMap<[^>]*>)(?: [A-Z][A-Za-z0-9_]*(?:::[A-Za-z0-9_]+)*)?")
            .ok()
    });
    static TAGGED: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"tagged enum `([^`]*)` does not match target enum `[^`]*`").ok()
    });
    let Some(re) = RUST.as_ref() else {
        return text.to_owned();
    };
    // A YAML tag where a name is expected: suites never use tags.
    let text = match TAGGED.as_ref() {
        Some(tagged) => tagged
            .replace_all(
                text,
                "the YAML tag `!$1` is not allowed here; write the value without a tag",
            )
            .into_owned(),
        None => text.to_owned(),
    };
    re.replace_all(&text, |caps: &regex::Captures<'_>| {
        let whole = &caps[0];
        if whole.starts_with("struct ") && caps.get(1).is_some() {
            "a mapping".to_owned()
        } else if whole.starts_with("enum Step") {
            words("enum Step")
        } else if whole.starts_with("enum ") {
            "one of the valid names".to_owned()
        } else if whole.starts_with("Vec<") {
            "a list".to_owned()
        } else if whole.starts_with("BTreeMap<") {
            "a mapping".to_owned()
        } else if whole.starts_with("Option<") || whole.ends_with("variant") {
            "a value".to_owned()
        } else {
            words(whole)
        }
    })
    .into_owned()
}

/// serde-saphyr's " at line L, column C" suffix, which the position in front already says.
fn strip_location(text: &str) -> String {
    match text.rfind(" at line ") {
        Some(at) if text[at..].contains(", column ") => text[..at].to_owned(),
        _ => text.to_owned(),
    }
}

/// Long names and values cut to 60 characters, so one line stays one line.
fn shorten(text: &str) -> String {
    const MAX: usize = 60;
    if text.chars().count() <= MAX {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(MAX).collect();
    out.push('…');
    out
}

/// Control characters, bidirectional controls and other invisible format characters as
/// `\u{..}` escapes (`\n`, `\t` as themselves), so a message shows what the file holds and a
/// terminal cannot be steered by it.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || is_invisible(c) => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(escape("a\u{0}b\u{202e}c\td"), "a\\u{0}b\\u{202e}c\\td");
    }

    #[test]
    fn a_tag_on_a_name_is_refused_in_the_suites_words() {
        assert_eq!(
            rust_free("tagged enum `tag` does not match target enum `Stopped`"),
            "the YAML tag `!tag` is not allowed here; write the value without a tag"
        );
    }

    #[test]
    fn rust_type_names_become_suite_words() {
        assert_eq!(
            rust_free("invalid type: string \"x\", expected struct NetnsExpect"),
            "invalid type: string \"x\", expected a mapping"
        );
        assert_eq!(
            rust_free("expected u32"),
            "expected a whole number from 0 to 4294967295"
        );
        assert_eq!(
            rust_free("expected enum Step"),
            format!("expected {}", words("enum Step"))
        );
    }

    #[test]
    fn a_position_past_the_end_moves_to_the_last_character() {
        let text = "a: b\nc: d\n";
        assert_eq!(inside(text, Some((3, 1))), (2, 4));
        assert_eq!(inside(text, Some((2, 99))), (2, 4));
        assert_eq!(inside(text, Some((1, 99))), (1, 5));
        assert_eq!(inside(text, None), (2, 4));
        assert_eq!(inside("", Some((1, 1))), (1, 1));
    }

    #[test]
    fn the_walker_finds_the_case_and_step_of_a_position_even_when_the_name_comes_last() {
        let text = "suite: s\nabout: x\ncases:\n  - steps:\n      - run_sandbox: {as: a, pod: p}\n      - {stop_sandbox: b}\n    name: late\n";
        let context = Context::at(text, (6, 10));
        assert_eq!(context.case_name.as_deref(), Some("late"));
        assert_eq!(context.step_name.as_deref(), Some("stop_sandbox"));
        assert_eq!(context.prefix(), "case `late`: step 2 `stop_sandbox`: ");
        let context = Context::at(text, (5, 40));
        assert_eq!(
            context.prefix(),
            "case `late`: step 1 `run_sandbox`: `pod`: "
        );
    }
}
