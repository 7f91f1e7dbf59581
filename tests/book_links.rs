//! The README and the book under `docs/` hold together offline: every relative link names a file
//! that exists, every `#anchor` names a heading of its page (by the slug GitHub and mdbook both
//! give it), and every page of `docs/` is in `docs/SUMMARY.md`, so the book shows it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The repository root, where `README.md` and `docs/` are.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every `docs/*.md`, as paths relative to the root, with their text.
fn pages() -> BTreeMap<PathBuf, String> {
    let mut pages = BTreeMap::new();
    let mut add = |relative: PathBuf| {
        let text = std::fs::read_to_string(root().join(&relative))
            .unwrap_or_else(|err| panic!("cannot read {}: {err}", relative.display()));
        pages.insert(relative, text);
    };
    add(PathBuf::from("README.md"));
    let docs = std::fs::read_dir(root().join("docs")).expect("docs/ is readable");
    for entry in docs {
        let name = entry.expect("a docs/ entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") {
            add(Path::new("docs").join(&*name));
        }
    }
    pages
}

/// The heading anchor GitHub and mdbook derive from a heading's text: lower case, letters,
/// digits, `-` and `_` kept, white space made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|ch| {
            if ch.is_alphanumeric() || ch == '-' || ch == '_' {
                Some(ch.to_lowercase().next().unwrap_or(ch))
            } else if ch.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The text of a line with its code spans removed (`` `a](b` `` is no link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let ticks = rest[at..].chars().take_while(|&c| c == '`').count();
        let fence = "`".repeat(ticks);
        let after = &rest[at + ticks..];
        // The span ends at the next run of exactly as many backticks; without one, the
        // backticks are literal.
        let mut search = 0;
        let mut end = None;
        while let Some(found) = after[search..].find(&fence) {
            let start = search + found;
            let run = after[start..].chars().take_while(|&c| c == '`').count();
            if run == ticks {
                end = Some(start + ticks);
                break;
            }
            search = start + run;
        }
        match end {
            Some(end) => {
                out.push_str(" code ");
                rest = &after[end..];
            }
            None => {
                out.push_str(&fence);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The lines of a page outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The anchors of a page's headings, duplicates numbered as GitHub and mdbook number them.
fn anchors(text: &str) -> BTreeSet<String> {
    let link = regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)").expect("a valid pattern");
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let heading = heading.trim().trim_end_matches('#').trim();
        let heading = link.replace_all(heading, "$1");
        let base = slug(&heading.replace('`', ""));
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// Every link target of a page outside code, with its line: inline `[text](target)` and
/// reference definitions `[name]: target`.
fn links(text: &str) -> Vec<(usize, String)> {
    let inline =
        regex::Regex::new(r#"\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)"#).expect("a valid pattern");
    let definition =
        regex::Regex::new(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?").expect("a valid pattern");
    let mut found = Vec::new();
    for (number, line) in prose_lines(text) {
        let line = without_code_spans(line);
        for capture in inline.captures_iter(&line) {
            found.push((number, capture[1].to_owned()));
        }
        if let Some(capture) = definition.captures(&line) {
            found.push((number, capture[1].to_owned()));
        }
    }
    found
}

/// `base/relative`, with `.` and `..` resolved lexically (so a link may not climb out).
fn join(base: &Path, relative: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in base.join(relative).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// The broken links among `pages` (relative path → text), each as one line naming the page,
/// the line and what is wrong; `exists` says whether a path outside `pages` exists.
fn broken_links(pages: &BTreeMap<PathBuf, String>, exists: impl Fn(&Path) -> bool) -> Vec<String> {
    let anchors: BTreeMap<&PathBuf, BTreeSet<String>> = pages
        .iter()
        .map(|(path, text)| (path, anchors(text)))
        .collect();
    let mut broken = Vec::new();
    for (page, text) in pages {
        let dir = page.parent().unwrap_or(Path::new(""));
        for (line, target) in links(text) {
            let at = format!("{}:{line}: `{target}`", page.display());
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                match join(dir, path) {
                    Some(file) => file,
                    None => {
                        broken.push(format!("{at} leaves the repository"));
                        continue;
                    }
                }
            };
            if !pages.contains_key(&file) && !exists(&file) {
                broken.push(format!("{at}: no file {}", file.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            match anchors.get(&file) {
                Some(known) if known.contains(anchor) => {}
                Some(_) => broken.push(format!(
                    "{at}: {} has no heading `#{anchor}`",
                    file.display()
                )),
                None => broken.push(format!(
                    "{at}: an anchor into {}, which is not a page",
                    file.display()
                )),
            }
        }
    }
    broken
}

#[test]
fn every_link_and_anchor_in_the_readme_and_the_book_resolves() {
    let pages = pages();
    assert!(
        pages.len() > 5,
        "expected the README and the book's pages, found {pages:?}"
    );
    let broken = broken_links(&pages, |path| root().join(path).exists());
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let pages = pages();
    let summary = pages
        .get(Path::new("docs/SUMMARY.md"))
        .expect("docs/SUMMARY.md exists");
    let listed: BTreeSet<PathBuf> = links(summary)
        .into_iter()
        .filter_map(|(_, target)| join(Path::new("docs"), &target))
        .collect();
    let missing: Vec<String> = pages
        .keys()
        .filter(|page| page.starts_with("docs") && !page.ends_with("SUMMARY.md"))
        .filter(|page| !listed.contains(*page))
        .map(|page| page.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "pages not in docs/SUMMARY.md: {missing:?}"
    );
}

#[test]
fn the_book_builds_from_docs_into_target() {
    let config = std::fs::read_to_string(root().join("docs/book.toml")).expect("docs/book.toml");
    // The two settings, read as `key = "value"` lines (the file is tiny and has no nesting).
    let setting = |key: &str| {
        config.lines().find_map(|line| {
            let (name, value) = line.split_once('=')?;
            (name.trim() == key).then(|| value.trim().trim_matches('"').to_owned())
        })
    };
    assert_eq!(
        setting("src").as_deref(),
        Some("."),
        "pages stay where tests read them"
    );
    let build_dir = setting("build-dir").expect("a build-dir");
    assert!(
        build_dir.starts_with("../"),
        "the build goes outside docs/, not {build_dir}"
    );
}

#[test]
fn slugs_are_githubs_and_mdbooks() {
    assert_eq!(
        slug("The contract is the oracle"),
        "the-contract-is-the-oracle"
    );
    assert_eq!(
        slug("Collecting the reports: pod logs"),
        "collecting-the-reports-pod-logs"
    );
    assert_eq!(slug("The manifests (deploy/)"), "the-manifests-deploy");
    assert_eq!(
        slug("cri-harness bench: critest's benchmarks"),
        "cri-harness-bench-critests-benchmarks"
    );
    assert_eq!(
        slug("Scale on paper: 1,000 nodes"),
        "scale-on-paper-1000-nodes"
    );
}

#[test]
fn headings_give_anchors_with_duplicates_numbered_and_code_ignored() {
    let text =
        "# Page\n\n## The `bench` command\n\n```sh\n# not a heading\n```\n\n## Page\n\n## Page\n";
    let found = anchors(text);
    let expected: BTreeSet<String> = ["page", "the-bench-command", "page-1", "page-2"]
        .map(String::from)
        .into();
    assert_eq!(found, expected);
}

#[test]
fn a_missing_file_a_missing_anchor_and_an_escape_are_reported() {
    let pages = BTreeMap::from([
        (
            PathBuf::from("README.md"),
            "See [a](docs/a.md#there), [b](docs/a.md#nowhere), [c](docs/gone.md), \
             [d](#top), [e](https://example.invalid/x#y) and `[f](docs/none.md)`.\n\n# Top\n"
                .to_owned(),
        ),
        (
            PathBuf::from("docs/a.md"),
            "# There\n\n[up](../../outside.md) [self](#there) [src](../src/lib.rs)\n".to_owned(),
        ),
    ]);
    let broken = broken_links(&pages, |path| path == Path::new("src/lib.rs"));
    assert_eq!(
        broken,
        [
            "README.md:1: `docs/a.md#nowhere`: docs/a.md has no heading `#nowhere`",
            "README.md:1: `docs/gone.md`: no file docs/gone.md",
            "docs/a.md:3: `../../outside.md` leaves the repository",
        ],
        "{broken:#?}"
    );
}
