//! Why a step cannot stand where a case writes it: the errors of the load-time checks
//! ([`super::StepDef::check`]). They keep the suite's words as data (the field, the alias, what
//! the case defined so far); the loader adds the case, the step and its position when it makes
//! the message.

use std::fmt;

/// A step that fails its load-time check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// An alias no earlier step of the case defined.
    #[error("{}", unknown_alias(.alias, .defined))]
    UnknownAlias {
        /// The alias as written.
        alias: String,
        /// Which kind of alias the step wanted, with those defined so far.
        defined: Defined,
    },
    /// A new alias that an earlier step already defined (as a sandbox or a container).
    #[error("alias `{alias}` is already defined")]
    AliasTaken {
        /// The alias.
        alias: String,
    },
    /// A new alias with characters other than letters, digits, `-` and `_`.
    #[error("alias `{alias}` must be letters, digits, `-` and `_`")]
    NotAlias {
        /// The alias as written.
        alias: String,
    },
    /// A name that cannot be an alias of the object it names (an object that need not exist).
    #[error("`{name}` cannot name a {what}")]
    CannotName {
        /// The name as written.
        name: String,
        /// What it was to name (`sandbox`).
        what: String,
    },
    /// A pod alias that is not letters, digits, `-` and `_`, or is the reserved `none`.
    #[error("`{name}` cannot name a pod; use letters, digits, `-` and `_` (not `none`)")]
    NotPod {
        /// The name as written.
        name: String,
    },
    /// A text expectation whose `matches` pattern does not compile.
    #[error("{field}: `matches` is not a valid regular expression: {why}")]
    Pattern {
        /// Where the text expectation is (`expect.stdout`).
        field: String,
        /// The regular expression parser's complaint.
        why: String,
    },
    /// A field that is empty where it must name or hold something.
    #[error("`{field}` is empty{}", colon(.hint))]
    Empty {
        /// The field.
        field: String,
        /// What to write instead, or why empty cannot work; may be empty.
        hint: String,
    },
    /// A number that must be above 0 (a deadline, a count).
    #[error("`{field}` must be above 0")]
    Zero {
        /// The field.
        field: String,
    },
    /// A Unix time at or before the epoch, where an instant is meant.
    #[error("`{field}` must be after the epoch")]
    BeforeEpoch {
        /// The field.
        field: String,
    },
    /// A port number outside 1 to 65535.
    #[error("`{field}` must be a port, 1 to 65535")]
    NotAPort {
        /// The field.
        field: String,
    },
    /// Two fields of which a step takes one at most.
    #[error("{}", conflict(.within, .one, .other))]
    Conflict {
        /// The block both are in (`expect`); empty for the step's own fields.
        within: String,
        /// One field.
        one: String,
        /// The other.
        other: String,
    },
    /// A field that means something only with another one set.
    #[error("`{field}` needs `{needs}`{}", colon(.why))]
    Needs {
        /// The field written.
        field: String,
        /// The field (or the field and value, `tty: true`) it needs.
        needs: String,
        /// Why it needs it; may be empty.
        why: String,
    },
    /// A path that leaves the place it must stay in, or is not absolute where it must be.
    #[error("{field} `{path}` must {must}")]
    Path {
        /// The field (`mounts[0].host_path`).
        field: String,
        /// The path as written.
        path: String,
        /// What the path must be.
        must: PathRule,
    },
    /// A value that does not read as what its field takes (a duration, a quantity).
    #[error("{field}: `{value}` is not {expected}{}", colon(.why))]
    Malformed {
        /// The field.
        field: String,
        /// The value as written.
        value: String,
        /// What the field takes (`a duration`).
        expected: String,
        /// The reader's complaint, or how to write it; may be empty.
        why: String,
    },
    /// An expectation about an item the step itself does not name.
    #[error("{field}: `{item}` is not one of the step's `{of}`")]
    NotOneOf {
        /// The expectation's field.
        field: String,
        /// The item it names.
        item: String,
        /// The step's field that lists the items.
        of: String,
    },
    /// An expectation of a failing call that also expects what only an answer carries.
    #[error("`expect` names an error and {what}; a failed call has no {what}")]
    ErrorAndAnswers {
        /// What the answer would carry (`figures`).
        what: String,
    },
    /// A rule of the step's own, not shared with other steps.
    #[error("{}{rule}", prefix(.field))]
    Rule {
        /// The YAML field it concerns; empty when the rule's words name the fields themselves.
        field: String,
        /// The rule, in the suite's words.
        rule: String,
    },
}

// Constructors, one per variant the steps make, so that a check reads as one line.
impl CheckError {
    /// [`CheckError::Empty`].
    pub fn empty(field: impl Into<String>, hint: impl Into<String>) -> Self {
        CheckError::Empty {
            field: field.into(),
            hint: hint.into(),
        }
    }

    /// [`CheckError::Zero`].
    pub fn zero(field: impl Into<String>) -> Self {
        CheckError::Zero {
            field: field.into(),
        }
    }

    /// [`CheckError::BeforeEpoch`].
    pub fn before_epoch(field: impl Into<String>) -> Self {
        CheckError::BeforeEpoch {
            field: field.into(),
        }
    }

    /// [`CheckError::NotAPort`].
    pub fn not_a_port(field: impl Into<String>) -> Self {
        CheckError::NotAPort {
            field: field.into(),
        }
    }

    /// [`CheckError::Conflict`]; `within` is empty for the step's own fields.
    pub fn conflict(
        within: impl Into<String>,
        one: impl Into<String>,
        other: impl Into<String>,
    ) -> Self {
        CheckError::Conflict {
            within: within.into(),
            one: one.into(),
            other: other.into(),
        }
    }

    /// [`CheckError::Needs`].
    pub fn needs(
        field: impl Into<String>,
        needs: impl Into<String>,
        why: impl Into<String>,
    ) -> Self {
        CheckError::Needs {
            field: field.into(),
            needs: needs.into(),
            why: why.into(),
        }
    }

    /// [`CheckError::Path`].
    pub fn path(field: impl Into<String>, path: impl Into<String>, must: PathRule) -> Self {
        CheckError::Path {
            field: field.into(),
            path: path.into(),
            must,
        }
    }

    /// [`CheckError::Malformed`].
    pub fn malformed(
        field: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
        why: impl Into<String>,
    ) -> Self {
        CheckError::Malformed {
            field: field.into(),
            value: value.into(),
            expected: expected.into(),
            why: why.into(),
        }
    }

    /// [`CheckError::NotOneOf`].
    pub fn not_one_of(
        field: impl Into<String>,
        item: impl Into<String>,
        of: impl Into<String>,
    ) -> Self {
        CheckError::NotOneOf {
            field: field.into(),
            item: item.into(),
            of: of.into(),
        }
    }

    /// [`CheckError::ErrorAndAnswers`].
    pub fn error_and_answers(what: impl Into<String>) -> Self {
        CheckError::ErrorAndAnswers { what: what.into() }
    }

    /// [`CheckError::Rule`]: a rule of the step's own about `field` (empty when `rule` names
    /// the fields itself).
    pub fn rule(field: impl Into<String>, rule: impl Into<String>) -> Self {
        CheckError::Rule {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// The kind of alias a step wanted, and the aliases of that kind the case defined before it
/// (sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Defined {
    /// A sandbox alias: the sandboxes so far.
    Sandboxes(Vec<String>),
    /// A container alias: the containers so far.
    Containers(Vec<String>),
    /// A sandbox or a container alias: both so far.
    Either {
        /// The sandboxes so far.
        sandboxes: Vec<String>,
        /// The containers so far.
        containers: Vec<String>,
    },
}

/// What a path must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRule {
    /// Relative, and inside the place named (no `..` out of it).
    Inside(&'static str),
    /// Absolute, or relative and inside the place named.
    AbsoluteOrInside(&'static str),
    /// Absolute.
    Absolute,
}

impl fmt::Display for PathRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathRule::Inside(place) => write!(f, "be relative and stay inside {place}"),
            PathRule::AbsoluteOrInside(place) => write!(f, "be absolute or stay inside {place}"),
            PathRule::Absolute => f.write_str("be absolute"),
        }
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items
            .iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn unknown_alias(alias: &str, defined: &Defined) -> String {
    match defined {
        Defined::Sandboxes(sandboxes) => format!(
            "unknown sandbox alias `{alias}`; defined so far: {}",
            list(sandboxes)
        ),
        Defined::Containers(containers) => format!(
            "unknown container alias `{alias}`; defined so far: {}",
            list(containers)
        ),
        Defined::Either {
            sandboxes,
            containers,
        } => format!(
            "unknown alias `{alias}`; sandboxes so far: {}; containers so far: {}",
            list(sandboxes),
            list(containers)
        ),
    }
}

fn conflict(within: &str, one: &str, other: &str) -> String {
    if within.is_empty() {
        format!("give `{one}` or `{other}`, not both")
    } else {
        format!("`{within}` takes `{one}` or `{other}`, not both")
    }
}

/// `": {text}"`, or nothing for an empty text.
fn colon(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// `"{field}: "`, or nothing for an empty field.
fn prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[rstest]
    #[case::a_sandbox_among_two(
        Defined::Sandboxes(names(&["a", "b"])),
        "unknown sandbox alias `x`; defined so far: `a`, `b`"
    )]
    #[case::a_container_before_any(
        Defined::Containers(Vec::new()),
        "unknown container alias `x`; defined so far: none"
    )]
    #[case::either_kind(
        Defined::Either { sandboxes: names(&["sb"]), containers: Vec::new() },
        "unknown alias `x`; sandboxes so far: `sb`; containers so far: none"
    )]
    fn an_unknown_alias_lists_those_defined_so_far(#[case] defined: Defined, #[case] text: &str) {
        let err = CheckError::UnknownAlias {
            alias: "x".to_owned(),
            defined,
        };
        assert_eq!(err.to_string(), text);
    }

    #[rstest]
    #[case::taken(CheckError::AliasTaken { alias: "a".into() }, "alias `a` is already defined")]
    #[case::not_an_alias(
        CheckError::NotAlias { alias: "a b".into() },
        "alias `a b` must be letters, digits, `-` and `_`"
    )]
    #[case::cannot_name(
        CheckError::CannotName { name: "a b".into(), what: "sandbox".into() },
        "`a b` cannot name a sandbox"
    )]
    #[case::not_a_pod(
        CheckError::NotPod { name: "none".into() },
        "`none` cannot name a pod; use letters, digits, `-` and `_` (not `none`)"
    )]
    #[case::pattern(
        CheckError::Pattern { field: "expect.stdout".into(), why: "unclosed group".into() },
        "expect.stdout: `matches` is not a valid regular expression: unclosed group"
    )]
    #[case::empty_with_a_hint(
        CheckError::empty("images", "name the images to look for"),
        "`images` is empty: name the images to look for"
    )]
    #[case::empty_alone(CheckError::empty("command", ""), "`command` is empty")]
    #[case::zero(CheckError::zero("within_ms"), "`within_ms` must be above 0")]
    #[case::before_the_epoch(CheckError::before_epoch("now"), "`now` must be after the epoch")]
    #[case::not_a_port(CheckError::not_a_port("port"), "`port` must be a port, 1 to 65535")]
    #[case::conflict_in_a_block(
        CheckError::conflict("expect", "answer", "error"),
        "`expect` takes `answer` or `error`, not both"
    )]
    #[case::conflict_of_the_steps_fields(
        CheckError::conflict("", "rounds", "until"),
        "give `rounds` or `until`, not both"
    )]
    #[case::needs(
        CheckError::needs("resize", "tty: true", "only a terminal has a size"),
        "`resize` needs `tty: true`: only a terminal has a size"
    )]
    #[case::path_inside(
        CheckError::path("path", "../x", PathRule::Inside("the case's host directory")),
        "path `../x` must be relative and stay inside the case's host directory"
    )]
    #[case::path_absolute_or_inside(
        CheckError::path("log", "../x", PathRule::AbsoluteOrInside("the case's host directory")),
        "log `../x` must be absolute or stay inside the case's host directory"
    )]
    #[case::path_absolute(
        CheckError::path("security.masked_paths", "etc", PathRule::Absolute),
        "security.masked_paths `etc` must be absolute"
    )]
    #[case::malformed(
        CheckError::malformed("expect.cpu_limit", "lots", "a quantity", ""),
        "expect.cpu_limit: `lots` is not a quantity"
    )]
    #[case::malformed_saying_why(
        CheckError::malformed("after", "soon", "a duration like `10s`", "expected number"),
        "after: `soon` is not a duration like `10s`: expected number"
    )]
    #[case::not_one_of(
        CheckError::not_one_of("expect.present", "b", "images"),
        "expect.present: `b` is not one of the step's `images`"
    )]
    #[case::error_and_answers(
        CheckError::error_and_answers("figures"),
        "`expect` names an error and figures; a failed call has no figures"
    )]
    #[case::rule_of_a_field(
        CheckError::rule("concurrent", "at least 2 removals at once"),
        "concurrent: at least 2 removals at once"
    )]
    #[case::rule_naming_its_fields(
        CheckError::rule("", "only a file has `content`"),
        "only a file has `content`"
    )]
    fn a_check_error_reads_in_the_suites_words(#[case] err: CheckError, #[case] text: &str) {
        assert_eq!(err.to_string(), text);
    }
}
