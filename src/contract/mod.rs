//! The CRI contract as the harness holds runtimes to it: every expectation a case makes names
//! one clause of this module, and the clause's level decides what breaking it means. The
//! clauses are data, in `clauses.yaml` beside this file, compiled in; each cites where the
//! contract says so (cri-api's `api.proto`, a critest assertion, or the kubelet function that
//! relies on it), or, for `observed`, which runtime was seen doing it.
//!
//! The model follows the OCI runtime-tools validator's spec errors (a code, an RFC 2119 level
//! and a reference into the spec, with `--compliance-level` choosing what fails), made for CRI.

pub mod known;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// The clause file, compiled into the binary.
const CLAUSES_YAML: &str = include_str!("clauses.yaml");

/// How binding a clause is, in RFC 2119 terms.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, strum::Display,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Level {
    /// The contract requires it: breaking it fails the case.
    Must,
    /// The contract recommends it and the kubelet copes without it: breaking it is a warning.
    Should,
    /// What a named runtime was seen doing: recorded, never a verdict.
    Observed,
}

/// Where a clause comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A comment of kubernetes/cri-api's `pkg/apis/runtime/v1/api.proto`.
    ApiProto,
    /// An assertion of kubernetes-sigs/cri-tools' `pkg/validate` (critest) at v1.36.0 or master.
    Critest,
    /// A kubelet function (kubernetes/kubernetes `pkg/kubelet/...`) that relies on it.
    Kubelet,
    /// A runtime's behaviour, seen: only for `observed` clauses.
    Runtime,
}

impl Source {
    fn label(self) -> &'static str {
        match self {
            Source::ApiProto => "cri-api api.proto",
            Source::Critest => "critest",
            Source::Kubelet => "kubelet",
            Source::Runtime => "runtime",
        }
    }
}

/// Where exactly: the source, the file in it, and the message, spec or function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Basis {
    /// Which kind of source.
    pub source: Source,
    /// The file in its repository (`pkg/validate/pod.go`), or the runtime and version.
    pub file: String,
    /// The message and field, the critest spec, or the Go function.
    pub at: String,
}

/// One clause of the contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clause {
    /// Stable id, `area.subject.rule`, that cases name.
    pub id: String,
    /// How binding it is.
    pub level: Level,
    /// What it requires, in the project's words.
    pub says: String,
    /// Where it comes from.
    pub basis: Basis,
    /// What the clause leaves a runtime free to do otherwise than containerd does, each a
    /// named item the mock's other-runtime profile takes (see [`crate::mock::Freedom`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freedoms: Vec<Freedom>,
}

/// One freedom a clause grants: a way to answer that differs from containerd's and that the
/// clause still allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Freedom {
    /// Stable id, lower-case words with `-`, unique over the contract.
    pub id: String,
    /// What a runtime taking it does (the mock's other-runtime profile does so).
    pub does: String,
}

/// A clause file that does not hold together; the embedded one is tested never to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// The YAML does not parse as a list of clauses.
    #[error("the clause file does not parse: {0}")]
    Parse(String),
    /// Two clauses share an id.
    #[error("clause `{0}` is defined twice")]
    Duplicate(String),
    /// An id is not `area.subject.rule` in lower case.
    #[error("clause id `{0}` must be dot-separated lower-case words with `-`")]
    BadId(String),
    /// A freedom's id is not lower-case words with `-`, or two freedoms share one.
    #[error("clause `{clause}`: freedom `{id}` must be lower-case words with `-`, used once")]
    BadFreedom {
        /// The clause granting it.
        clause: String,
        /// The freedom's id.
        id: String,
    },
    /// An `observed` clause cites no runtime, or a `must`/`should` clause cites one.
    #[error("clause `{id}`: a {level} clause cannot rest on a {basis}")]
    WrongSource {
        /// The clause.
        id: String,
        /// Its level.
        level: Level,
        /// Its source, as a label.
        basis: &'static str,
    },
}

/// Every clause, by id.
#[derive(Debug, Clone, Default)]
pub struct Contract {
    clauses: BTreeMap<String, Clause>,
}

impl Contract {
    /// Reads and checks a clause file.
    pub fn parse(text: &str) -> Result<Self, ContractError> {
        let list: Vec<Clause> =
            serde_saphyr::from_str(text).map_err(|err| ContractError::Parse(err.to_string()))?;
        let mut clauses = BTreeMap::new();
        let mut freedoms = std::collections::BTreeSet::new();
        for clause in list {
            if !valid_id(&clause.id) {
                return Err(ContractError::BadId(clause.id));
            }
            for freedom in &clause.freedoms {
                if !valid_word(&freedom.id) || !freedoms.insert(freedom.id.clone()) {
                    return Err(ContractError::BadFreedom {
                        clause: clause.id.clone(),
                        id: freedom.id.clone(),
                    });
                }
            }
            let runtime = clause.basis.source == Source::Runtime;
            if runtime != (clause.level == Level::Observed) {
                return Err(ContractError::WrongSource {
                    id: clause.id,
                    level: clause.level,
                    basis: clause.basis.source.label(),
                });
            }
            if let Some(first) = clauses.insert(clause.id.clone(), clause) {
                return Err(ContractError::Duplicate(first.id));
            }
        }
        Ok(Self { clauses })
    }

    /// The clause `id`, if there is one.
    pub fn get(&self, id: &str) -> Option<&Clause> {
        self.clauses.get(id)
    }

    /// Every clause, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Clause> {
        self.clauses.values()
    }

    /// Every freedom the clauses grant, with the clause granting it, in clause order.
    pub fn freedoms(&self) -> impl Iterator<Item = (&Clause, &Freedom)> {
        self.iter()
            .flat_map(|clause| clause.freedoms.iter().map(move |f| (clause, f)))
    }

    /// The docs' contract table: one row per clause, in id order, with the freedoms it grants.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| clause | level | what it requires | basis | freedoms |\n|---|---|---|---|---|\n",
        );
        for clause in self.iter() {
            let freedoms: Vec<String> = clause
                .freedoms
                .iter()
                .map(|f| format!("`{}`: {}", f.id, f.does.trim().replace('|', "\\|")))
                .collect();
            out.push_str(&format!(
                "| `{}` | {} | {} | {} `{}`: {} | {} |\n",
                clause.id,
                clause.level,
                clause.says.trim().replace('|', "\\|"),
                clause.basis.source.label(),
                clause.basis.file,
                clause.basis.at.trim().replace('|', "\\|"),
                freedoms.join("<br>"),
            ));
        }
        out
    }
}

fn valid_id(id: &str) -> bool {
    id.split('.').count() >= 2 && id.split('.').all(valid_word)
}

fn valid_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The contract compiled into the binary.
pub fn contract() -> &'static Contract {
    static CONTRACT: LazyLock<Contract> = LazyLock::new(|| {
        // The embedded file is checked by a test; a broken one must not pass that test.
        Contract::parse(CLAUSES_YAML).unwrap_or_default()
    });
    &CONTRACT
}

/// The level of clause `id`; an unknown id counts as `must` (the loader refuses unknown ids,
/// so only a suite built in code can get here).
pub fn level(id: &str) -> Level {
    contract().get(id).map_or(Level::Must, |c| c.level)
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}; {} {}: {})",
            self.id,
            self.level,
            self.basis.source.label(),
            self.basis.file,
            self.basis.at
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_clause_file_parses_and_holds_together() {
        let contract = Contract::parse(CLAUSES_YAML).unwrap();
        assert!(contract.iter().count() > 20);
        assert!(contract.iter().any(|c| c.level == Level::Should));
        assert!(contract.iter().any(|c| c.level == Level::Observed));
    }

    #[test]
    fn the_docs_contract_table_is_the_clause_files() {
        let doc = include_str!("../../docs/contract.md");
        let begin = "<!-- contract table: generated by contract::Contract::table() -->\n";
        let start = doc.find(begin).map(|at| at + begin.len());
        let end = doc.find("<!-- end of contract table -->");
        let (Some(start), Some(end)) = (start, end) else {
            panic!("docs/contract.md has no contract table between its markers")
        };
        assert_eq!(
            &doc[start..end],
            contract().table(),
            "docs/contract.md's table is stale; paste contract::contract().table() in (cargo run -- contract)"
        );
    }

    #[test]
    fn a_clause_file_with_a_duplicate_a_bad_id_or_a_wrong_source_is_refused() {
        let clause = |id: &str, level: &str, source: &str| {
            format!("- id: {id}\n  level: {level}\n  says: x\n  basis: {{source: {source}, file: f, at: a}}\n")
        };
        let twice = clause("a.b", "must", "api_proto") + &clause("a.b", "should", "kubelet");
        assert_eq!(
            Contract::parse(&twice).unwrap_err(),
            ContractError::Duplicate("a.b".into())
        );
        assert_eq!(
            Contract::parse(&clause("Nope", "must", "api_proto")).unwrap_err(),
            ContractError::BadId("Nope".into())
        );
        assert!(matches!(
            Contract::parse(&clause("a.b", "must", "runtime")).unwrap_err(),
            ContractError::WrongSource { .. }
        ));
        assert!(matches!(
            Contract::parse(&clause("a.b", "observed", "critest")).unwrap_err(),
            ContractError::WrongSource { .. }
        ));
    }

    #[test]
    fn a_freedom_granted_twice_or_badly_named_is_refused() {
        let clause = |id: &str, freedom: &str| {
            format!(
                "- id: {id}\n  level: must\n  says: x\n  basis: {{source: api_proto, file: f, at: a}}\n  freedoms: [{{id: {freedom}, does: y}}]\n"
            )
        };
        let twice = clause("a.b", "keeps-ip") + &clause("a.c", "keeps-ip");
        assert_eq!(
            Contract::parse(&twice).unwrap_err(),
            ContractError::BadFreedom {
                clause: "a.c".into(),
                id: "keeps-ip".into()
            }
        );
        assert!(matches!(
            Contract::parse(&clause("a.b", "Keeps_IP")).unwrap_err(),
            ContractError::BadFreedom { .. }
        ));
        let once = Contract::parse(&clause("a.b", "keeps-ip")).unwrap();
        let granted: Vec<(&str, &str)> = once
            .freedoms()
            .map(|(c, f)| (c.id.as_str(), f.id.as_str()))
            .collect();
        assert_eq!(granted, [("a.b", "keeps-ip")]);
        assert!(once.table().contains("`keeps-ip`: y"));
    }
}
