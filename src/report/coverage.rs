//! The RPC coverage table of the book (docs/rpc-coverage.md): every RPC `proto/` declares, the
//! contract clauses that name it, and the cases whose steps call it, as runs on the mock record
//! them (`rpcs` of each case). A test makes the table from runs of every embedded case and
//! fails when an RPC has no case or the book's table is stale.

use std::collections::{BTreeMap, BTreeSet};

use super::model::RunReport;

/// The CRI schema the table is made from.
const API_PROTO: &str = include_str!("../../proto/runtime/v1/api.proto");

/// How many cases the table names for one RPC (it counts them all).
const NAMED_CASES: usize = 4;

/// One RPC's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcCoverage {
    /// `RuntimeService` or `ImageService`.
    pub service: String,
    /// The RPC's name.
    pub rpc: String,
    /// The clauses whose words or basis name the RPC, by id.
    pub clauses: Vec<String>,
    /// The cases (`suite/case`) whose steps called it, sorted.
    pub cases: Vec<String>,
}

/// Every RPC of the CRI schema, in the order it declares them, with its service.
pub fn proto_rpcs() -> Vec<(String, String)> {
    let mut service = String::new();
    let mut rpcs = Vec::new();
    for line in API_PROTO.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("service ") {
            service = rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
        } else if let Some(rest) = line.strip_prefix("rpc ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            rpcs.push((service.clone(), name));
        }
    }
    rpcs
}

/// True when `text` names `rpc` as a word of its own (not as part of a longer name).
fn names(text: &str, rpc: &str) -> bool {
    text.match_indices(rpc).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + rpc.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// The coverage of every RPC by the cases of `reports` (several runs, say one per kubelet
/// profile, count together).
pub fn coverage(reports: &[&RunReport]) -> Vec<RpcCoverage> {
    let mut callers: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for report in reports {
        for case in &report.cases {
            for rpc in &case.rpcs {
                callers
                    .entry(rpc.as_str())
                    .or_default()
                    .insert(case.full_name());
            }
        }
    }
    let contract = crate::contract::contract();
    proto_rpcs()
        .into_iter()
        .map(|(service, rpc)| {
            let clauses = contract
                .iter()
                .filter(|c| names(&c.says, &rpc) || names(&c.basis.at, &rpc))
                .map(|c| c.id.clone())
                .collect();
            let cases = callers
                .get(rpc.as_str())
                .map(|set| set.iter().cloned().collect())
                .unwrap_or_default();
            RpcCoverage {
                service,
                rpc,
                clauses,
                cases,
            }
        })
        .collect()
}

/// The cases a row names: those whose case clause is one of the row's clauses first, then the
/// rest, each group in name order, at most [`NAMED_CASES`].
fn named_cases(row: &RpcCoverage, clause_of: &BTreeMap<String, String>) -> Vec<String> {
    let about = |case: &String| {
        clause_of
            .get(case)
            .is_some_and(|clause| row.clauses.contains(clause))
    };
    let (first, rest): (Vec<&String>, Vec<&String>) = row.cases.iter().partition(|c| about(c));
    first
        .into_iter()
        .chain(rest)
        .take(NAMED_CASES)
        .cloned()
        .collect()
}

/// The table, as markdown: one row per RPC, in the schema's order.
pub fn table(rows: &[RpcCoverage], clause_of: &BTreeMap<String, String>) -> String {
    let mut out = String::from("| RPC | clauses naming it | cases calling it |\n|---|---|---|\n");
    for row in rows {
        let clauses = if row.clauses.is_empty() {
            "—".to_owned()
        } else {
            row.clauses
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let named = named_cases(row, clause_of);
        let mut cases = named
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ");
        if row.cases.len() > named.len() {
            cases.push_str(&format!(" and {} more", row.cases.len() - named.len()));
        }
        if row.cases.is_empty() {
            cases = "**none**".to_owned();
        }
        out.push_str(&format!(
            "| `{}/{}` | {clauses} | {} ({cases}) |\n",
            row.service,
            row.rpc,
            row.cases.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_declares_forty_one_rpcs_over_two_services() {
        let rpcs = proto_rpcs();
        assert_eq!(rpcs.len(), 41);
        let services: BTreeSet<&str> = rpcs.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(services, BTreeSet::from(["ImageService", "RuntimeService"]));
        assert!(rpcs.contains(&("ImageService".to_owned(), "ImageFsInfo".to_owned())));
    }

    #[test]
    fn an_rpc_is_named_only_as_a_word_of_its_own() {
        assert!(names("Status reports the conditions", "Status"));
        assert!(names("(see Status)", "Status"));
        assert!(!names("PodSandboxStatus answers", "Status"));
        assert!(!names("ListPodSandboxStats", "ListPodSandbox"));
    }
}
