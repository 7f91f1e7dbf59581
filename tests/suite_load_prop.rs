//! The loader on mutated and truncated copies of the real suites: it never panics, every error
//! points inside the file, and its message names the key or step it is about.

use cri_harness::suite::{self, SuiteError, EMBEDDED};
use proptest::prelude::*;
use proptest::sample::Index;

/// Pieces of YAML and of the suite format that break a file in interesting ways.
const TOKENS: &[&str] = &[
    ":",
    ": ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    ", ",
    "'",
    "\"",
    "&a ",
    "*a",
    "*b ",
    "!tag ",
    "\t",
    "\u{202e}",
    "\u{0}",
    "\n",
    "  ",
    "# ",
    "? ",
    "|\n",
    ">-\n",
    "<<: ",
    "~",
    "yes",
    "-1",
    "99999999999",
    "\\",
    "name: two\n",
    "steps: []\n",
    "  - name: x\n",
    "---\n",
    "as: dup\n",
    "labels: {a: b, a: c}",
    "run_sandbox: {as: z, pod: p}",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// Cut the file at a point.
    Truncate(Index),
    /// Remove up to 16 characters.
    Delete(Index, usize),
    /// Insert a token.
    Insert(Index, &'static str),
    /// Repeat a line (a duplicate key, a duplicate step).
    DuplicateLine(Index),
    /// Swap two lines (a key after another, a step in a strange place).
    SwapLines(Index, Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), 1..16usize).prop_map(|(at, n)| Mutation::Delete(at, n)),
        (any::<Index>(), prop::sample::select(TOKENS)).prop_map(|(at, t)| Mutation::Insert(at, t)),
        any::<Index>().prop_map(Mutation::DuplicateLine),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

/// The byte offsets of `text`'s character boundaries, so cuts never split a character.
fn boundary(text: &str, at: &Index) -> usize {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    bounds[at.index(bounds.len())]
}

fn apply(text: &str, mutation: &Mutation) -> String {
    match mutation {
        Mutation::Truncate(at) => text[..boundary(text, at)].to_owned(),
        Mutation::Delete(at, n) => {
            let start = boundary(text, at);
            let end = text[start..]
                .char_indices()
                .nth(*n)
                .map_or(text.len(), |(i, _)| start + i);
            format!("{}{}", &text[..start], &text[end..])
        }
        Mutation::Insert(at, token) => {
            let at = boundary(text, at);
            format!("{}{token}{}", &text[..at], &text[at..])
        }
        Mutation::DuplicateLine(at) => {
            let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
            if !lines.is_empty() {
                let i = at.index(lines.len());
                lines.insert(i, lines[i]);
            }
            lines.concat()
        }
        Mutation::SwapLines(a, b) => {
            let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
            if !lines.is_empty() {
                let (a, b) = (a.index(lines.len()), b.index(lines.len()));
                lines.swap(a, b);
            }
            lines.concat()
        }
    }
}

/// True when 1-based `line:column` is a character of `text` or just after the last one of its
/// line.
fn inside(text: &str, line: usize, column: usize) -> bool {
    if text.is_empty() {
        return (line, column) == (1, 1);
    }
    let Some(content) = text.lines().nth(line.wrapping_sub(1)) else {
        return false;
    };
    column >= 1 && column <= content.chars().count() + 1
}

/// Messages about the whole file, which have no key or step to name.
const FILE_LEVEL: &[&str] = &[
    "the file is empty",
    "a second YAML document starts here",
    "a suite file is a mapping of",
    "a NUL byte: this is a binary file",
];

fn check(text: &str) -> Result<(), TestCaseError> {
    let (line, column, message) = match suite::parse("suites/mutated.yaml", text) {
        Ok(_) => return Ok(()),
        Err(SuiteError::Parse {
            line,
            column,
            message,
            ..
        })
        | Err(SuiteError::Invalid {
            line,
            column,
            message,
            ..
        }) => (line, column, message),
        Err(other) => return Err(TestCaseError::fail(format!("unexpected error {other}"))),
    };
    prop_assert!(
        inside(text, line, column),
        "{line}:{column} is outside the file: {message}\n{text}"
    );
    let names_something = message.contains('`') || message.contains("case ");
    // A syntax error on the first line comes before any key it could name.
    let nothing_to_name = line == 1 || FILE_LEVEL.iter().any(|m| message.starts_with(m));
    prop_assert!(
        names_something || nothing_to_name,
        "{line}:{column}: {message:?} names no key or step\n{text}"
    );
    prop_assert!(
        !message.chars().any(|c| c.is_control()),
        "{message:?} carries a raw control character"
    );
    for rust in [
        "struct ", "enum ", "Raw", "Expect", "Option<", "Vec<", "u32", "i64",
    ] {
        prop_assert!(!message.contains(rust), "{message:?} speaks Rust ({rust})");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        // Shrunk failures are kept under proptest-regressions/ (committed) and replayed first.
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/suite_load_prop.txt",
            ),
        )),
        // Under CI one fixed sequence, so a landing cannot fail by the draw; locally a new one
        // each run, so the mutations keep exploring.
        rng_seed: if std::env::var_os("CI").is_some() {
            proptest::test_runner::RngSeed::Fixed(0x5eed_cafe)
        } else {
            proptest::test_runner::RngSeed::Random
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_mutated_suite_never_panics_and_its_error_is_placed_and_named(
        file in 0..EMBEDDED.len(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut text = EMBEDDED[file].1.to_owned();
        for m in &mutations {
            text = apply(&text, m);
        }
        check(&text)?;
    }
}
