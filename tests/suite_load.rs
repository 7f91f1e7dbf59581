//! Bad suite files and paths, fed to the binary as a user would (`run --mock --suites X
//! --list`): each class of the loading checklist gets its exact `file:line:column`, its message
//! in the suite's words and exit code 1, while the embedded suites still list.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

use cri_harness::suite::step;
use rstest::rstest;

const HEAD: &str = "suite: bad\nabout: x\ncases:\n";

/// `(exit code, stdout)` of `run --mock --suites path --list`.
fn list(path: &Path) -> (Option<i32>, String) {
    let output = support::harness()
        .args(["run", "--mock", "--list", "--suites"])
        .arg(path)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// The `error:` lines of a listing.
fn errors(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect()
}

/// Writes `bytes` as `bad.yaml` in a fresh directory, lists it and checks that the only error
/// is `error: <file>:<at>: <message>` and the exit code 1.
fn assert_one_error(bytes: &[u8], at: &str, message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, bytes).unwrap();
    let (code, stdout) = list(dir.path());
    assert_eq!(
        errors(&stdout),
        vec![format!("error: {}:{at}: {message}", file.display())],
        "{stdout}"
    );
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("version-gating/"),
        "the embedded suites still list:\n{stdout}"
    );
}

fn case(steps: &str) -> String {
    format!("{HEAD}  - name: one\n    steps:\n{steps}")
}

#[rstest]
#[case::truncated_inside_a_flow_mapping(
    case("      - run_sandbox: {as: a, pod"),
    "6:22",
    "case `one`: step 1 `run_sandbox`: unclosed bracket '{'"
)]
#[case::truncated_after_a_key(
    format!("{HEAD}  - name: one\n    steps:\n      - stop_sandbox"),
    "6:9",
    "case `one`: step 1 `stop_sandbox`: a step is a single-key mapping such as `stop_sandbox: old`; `stop_sandbox` has no value"
)]
#[case::wrong_typed_number(
    case("      - run_sandbox: {as: a, pod: p, attempt: x}\n      - version: {}\n"),
    "6:47",
    "case `one`: step 1 `run_sandbox`: `attempt`: expected a whole number from 0 to 4294967295, found `x`"
)]
#[case::wrong_typed_expectation(
    case("      - get_netns: {sandbox: a, expect: 3}\n"),
    "6:41",
    "case `one`: step 1 `get_netns`: `expect`: expected a mapping, found `3`"
)]
#[case::wrong_typed_top_level_key(
    "suite: bad\nabout: [1]\ncases: []\n".to_owned(),
    "2:8",
    "`about`: expected a string"
)]
#[case::unknown_step(
    case("      - run_sandbx: {as: a, pod: p}\n"),
    "6:9",
    "case `one`: step 1: unknown step `run_sandbx`, expected one of {steps}"
)]
#[case::unknown_field(
    case("      - run_sandbox: {as: a, pod: p, atempt: 1}\n"),
    "6:38",
    "case `one`: step 1 `run_sandbox`: unknown field `atempt`, expected one of `as`, `pod`, `attempt`, `host_network`, `labels`, `annotations`, `pod_labels`, `hostname`, `dns`, `ports`, `sysctls`, `log_directory`, `host_pid`, `host_ipc`, `share_pid`, `security`, `cgroup_parent`, `userns`, `expect`"
)]
#[case::unknown_value(
    case("      - check_network: {sandbox: a, expect: ajar}\n"),
    "6:45",
    "case `one`: step 1 `check_network`: `expect`: unknown value `ajar`, expected one of `open`, `closed`"
)]
#[case::flow_style_steps_each_have_their_own_position(
    format!("{HEAD}  - {{name: one, steps: [{{run_sandbox: {{as: a, pod: p}}}}, {{stop_sandbox: zz}}, {{version: {{}}}}]}}\n"),
    "4:57",
    "case `one`: step 2 `stop_sandbox`: unknown sandbox alias `zz`; defined so far: `a`"
)]
#[case::flow_style_parse_error_in_the_second_step(
    format!("{HEAD}  - name: one\n    steps: [{{version: {{}}}}, {{get_netns: {{sandbox: a, expect: {{empty: maybe}}}}}}]\n"),
    "5:69",
    "case `one`: step 2 `get_netns`: `expect.empty`: expected `true` or `false`, found `maybe`"
)]
#[case::an_about_holding_name_two_stays_in_its_case(
    format!("{HEAD}  - name: one\n    about: |\n      name: two\n    steps:\n      - version: {{bogus: 1}}\n  - name: two\n    steps: [{{version: {{}}}}]\n"),
    "8:19",
    "case `one`: step 1 `version`: unknown field `bogus`, expected one of `expect`"
)]
#[case::a_name_after_steps_names_its_own_case(
    format!("{HEAD}  - steps:\n      - version: {{}}\n      - get_netns: {{sandbox: a, expect: {{empty: maybe}}}}\n    name: late\n  - name: two\n    steps: [{{version: {{}}}}]\n"),
    "6:49",
    "case `late`: step 2 `get_netns`: `expect.empty`: expected `true` or `false`, found `maybe`"
)]
#[case::a_duplicate_field_at_the_duplicate(
    case("      - run_sandbox:\n          as: a\n          pod: b\n          as: c\n"),
    "9:11",
    "case `one`: step 1 `run_sandbox`: duplicate key `as`: it is already set above"
)]
#[case::a_duplicate_label_key_at_the_duplicate(
    case("      - run_sandbox: {as: a, pod: b, labels: {x: '1', x: '2'}}\n"),
    "6:55",
    "case `one`: step 1 `run_sandbox`: `labels`: duplicate key `x`: it is already set above"
)]
#[case::a_name_with_escapes_is_found_and_shown_escaped(
    format!("{HEAD}  - name: \"bad\\tname\"\n    steps: [{{version: {{}}}}]\n"),
    "4:11",
    "case `bad\\tname`: a case name must be lower-case letters, digits, `-` and `_`"
)]
#[case::control_characters_are_escaped(
    case("      - \"run_\\u202Esandbox\\u0000\": {}\n"),
    "6:9",
    "case `one`: step 1: unknown step `run_\\u{202e}sandbox\\u{0}`, expected one of {steps}"
)]
#[case::deeply_nested(
    format!("{HEAD}  - name: one\n    steps:\n      - version: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    "6:18",
    "case `one`: step 1 `version`: expected a mapping"
)]
#[case::billion_laughs(
    billion_laughs(),
    "6:16",
    "case `c`: `tags[1]`: expected a string (through an alias of the anchor at 3:11)"
)]
#[case::a_megabyte_aliased_three_hundred_times(
    big_alias(),
    "42:18",
    "case `c`: step 1 `run_sandbox`: `labels.l32`: more than 33554432 bytes of text once aliases are expanded, the most a suite may hold (through an alias of the anchor at 2:13)"
)]
#[case::an_error_at_the_end_of_the_file_points_inside_it(
    format!("{HEAD}  - name: one\n    steps:\n      - run_sandbox:\n          as: a\n"),
    "7:11",
    "case `one`: step 1 `run_sandbox`: missing field `pod`"
)]
#[case::a_second_document(
    format!("{HEAD}  - name: one\n    steps: [{{version: {{}}}}]\n---\nfoo: 1\n"),
    "7:1",
    "a second YAML document starts here; a suite file holds one"
)]
#[case::a_tab_in_the_indentation(
    format!("{HEAD}\t- name: one\n"),
    "4:2",
    "after `cases`: tabs disallowed within this context (block indentation)"
)]
#[case::empty("".to_owned(), "1:1", "the file is empty; a suite needs `suite`, `about` and `cases`")]
#[case::not_a_mapping(
    "- a\n- b\n".to_owned(),
    "1:1",
    "a suite file is a mapping of `suite`, `about` and `cases`; expected a mapping"
)]
fn a_bad_file_fails_at_the_offending_node_in_the_suites_words(
    #[case] text: String,
    #[case] at: &str,
    #[case] message: &str,
) {
    // `{steps}` stands for every registered step, in registry order, as the loader lists them.
    let steps: Vec<String> = step::registry()
        .iter()
        .map(|info| format!("`{}`", info.name))
        .collect();
    assert_one_error(
        text.as_bytes(),
        at,
        &message.replace("{steps}", &steps.join(", ")),
    );
}

/// Ten levels of ten aliases each in `tags`: 10¹⁰ strings if expanded.
fn billion_laughs() -> String {
    let mut text = "suite: s\nabout: x\ntags: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\ncases:\n  - name: c\n    tags: &a1 [".to_owned();
    text.push_str(&["*a0"; 10].join(", "));
    text.push_str("]\n    steps: [{version: {}}]\n");
    text
}

/// One 1 MB string aliased 300 times in `labels`: 300 MB if expanded.
fn big_alias() -> String {
    let mut text = format!(
        "suite: s\nabout: &big {}\ncases:\n  - name: c\n    steps:\n      - run_sandbox:\n          as: a\n          pod: p\n          labels:\n",
        "x".repeat(1_000_000)
    );
    for i in 0..300 {
        text.push_str(&format!("            l{i}: *big\n"));
    }
    text
}

#[test]
fn a_binary_file_fails_at_its_first_nul_byte() {
    assert_one_error(
        b"suite: s\nabout: x\ncases:\n  - name: one\n    steps:\n      - version: {\x00\x01\x02",
        "6:19",
        "case `one`: step 1 `version`: a NUL byte: this is a binary file, not YAML text",
    );
}

#[test]
fn a_file_that_is_not_utf8_fails_at_the_first_bad_byte() {
    assert_one_error(
        b"suite: s\nabout: caf\xe9\n",
        "2:11",
        "`about`: byte 0xE9 is not UTF-8 text; a suite file is UTF-8 YAML",
    );
}

#[test]
fn an_error_in_the_last_of_ten_thousand_cases_is_found_at_its_line() {
    let mut text = HEAD.to_owned();
    for i in 0..10_000 {
        text.push_str(&format!(
            "  - name: case-{i}\n    steps:\n      - run_sandbox: {{as: a, pod: p}}\n      - stop_sandbox: a\n      - version: {{}}\n"
        ));
    }
    text.push_str(
        "  - name: last\n    steps:\n      - stop_sandbox: nowhere\n      - version: {}\n",
    );
    assert_one_error(
        text.as_bytes(),
        "50006:9",
        "case `last`: step 1 `stop_sandbox`: unknown sandbox alias `nowhere`; defined so far: none",
    );
}

/// `error: cannot read suite path <path>: <why>` is the only error, exit code 1.
fn assert_path_error(dir: &Path, path: &Path, why: &str) {
    let (code, stdout) = list(dir);
    assert_eq!(
        errors(&stdout),
        vec![format!(
            "error: cannot read suite path {}: {why}",
            path.display()
        )],
        "{stdout}"
    );
    assert_eq!(code, Some(1), "{stdout}");
}

/// Makes `name` in a fresh directory with `make` and checks the directory's listing.
fn assert_entry_error(name: &str, make: impl FnOnce(&Path), why: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    make(&path);
    assert_path_error(dir.path(), &path, why);
}

#[test]
fn a_yaml_name_that_is_a_directory_is_an_error_not_skipped() {
    assert_entry_error(
        "more.yaml",
        |path| std::fs::create_dir(path).unwrap(),
        "it is a directory, not a suite file",
    );
}

#[test]
fn a_dangling_link_is_an_error_naming_its_target() {
    assert_entry_error(
        "gone.yaml",
        |path| std::os::unix::fs::symlink("/nonexistent/suite.yaml", path).unwrap(),
        "it is a symbolic link to /nonexistent/suite.yaml, which does not exist",
    );
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    // Nobody writes to it: opening it for reading would wait forever.
    assert_entry_error(
        "pipe.yaml",
        |path| assert!(Command::new("mkfifo").arg(path).status().unwrap().success()),
        "it is a FIFO, not a regular file",
    );
}

#[test]
fn a_file_without_read_permission_says_permission_denied() {
    // Root reads a file whatever its mode, so as root the listing runs from a thread without
    // the two capabilities that bypass file modes; the child inherits their absence.
    std::thread::spawn(|| {
        if rustix::process::geteuid().is_root() {
            use rustix::thread::{remove_capability_from_bounding_set, CapabilitySet};
            for capability in [CapabilitySet::DAC_OVERRIDE, CapabilitySet::DAC_READ_SEARCH] {
                remove_capability_from_bounding_set(capability).expect("drop a capability");
            }
        }
        assert_entry_error(
            "secret.yaml",
            |path| {
                std::fs::write(path, "suite: s\n").unwrap();
                let mode = std::os::unix::fs::PermissionsExt::from_mode(0o000);
                std::fs::set_permissions(path, mode).unwrap();
            },
            "Permission denied (os error 13)",
        );
    })
    .join()
    .expect("the listing without read permission");
}

#[test]
fn a_file_whose_read_fails_gives_the_cause() {
    // /proc/self/mem opens as a regular file and fails the first read (address 0 is not
    // mapped), for root too.
    assert_entry_error(
        "mem.yaml",
        |path| std::os::unix::fs::symlink("/proc/self/mem", path).unwrap(),
        "Input/output error (os error 5)",
    );
}

#[test]
fn a_file_larger_than_the_limit_is_refused_before_it_is_read() {
    let max = cri_harness::suite::MAX_FILE_BYTES;
    assert_entry_error(
        "huge.yaml",
        |path| {
            std::fs::File::create(path)
                .unwrap()
                .set_len(max + 1)
                .unwrap()
        },
        &format!(
            "it has {} bytes, more than the {max} a suite file may have",
            max + 1
        ),
    );
}

#[test]
fn a_missing_suites_path_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere");
    assert_path_error(&path, &path, "no such file or directory");
}

#[test]
fn one_file_given_to_suites_is_loaded_as_a_suite() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("mine.txt");
    std::fs::write(
        &path,
        "suite: mine\nabout: x\ncases:\n  - name: only\n    steps: [{version: {}}]\n",
    )
    .unwrap();
    let (code, stdout) = list(&path);
    assert!(errors(&stdout).is_empty(), "{stdout}");
    assert!(stdout.lines().any(|l| l == "mine/only"), "{stdout}");
    assert_eq!(code, Some(0), "{stdout}");
}

#[test]
fn a_bad_file_given_to_suites_fails_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.yaml");
    std::fs::write(&path, case("      - sleep_ms: -3\n")).unwrap();
    let (code, stdout) = list(&path);
    assert_eq!(
        errors(&stdout),
        vec![format!(
            "error: {}:6:19: case `one`: step 1 `sleep_ms`: expected a whole number, 0 or more, found `-3`",
            path.display()
        )],
        "{stdout}"
    );
    assert_eq!(code, Some(1), "{stdout}");
}

#[test]
fn a_focus_that_matches_nothing_exits_non_zero_and_says_so() {
    let output = support::harness()
        .args(["run", "--mock", "--list", "--focus", "nomatch"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no case selected: `--focus nomatch` match none of the"),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(1));
}

const SYNC_FROM_FILE: &str = "suite: from-file\nabout: x\ncases:\n  - name: one\n    steps:\n      - sync_pod: {as: web, file: pods/web.yaml}\n";

#[test]
fn a_manifest_file_is_read_beside_the_suite_file_not_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pods")).unwrap();
    std::fs::write(
        dir.path().join("pods/web.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: busybox}]\n",
    )
    .unwrap();
    let file = dir.path().join("from-file.yaml");
    std::fs::write(&file, SYNC_FROM_FILE).unwrap();
    let (code, stdout) = list(&file);
    assert_eq!(errors(&stdout), Vec::<&str>::new(), "{stdout}");
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("from-file/one"), "{stdout}");
}

#[rstest]
#[case::missing("", "cannot read the manifest `pods/web.yaml` at ")]
#[case::not_a_pod("spec: {containers: 3}\n", "`pods/web.yaml` is not a Pod manifest: ")]
fn a_manifest_file_that_cannot_be_read_fails_the_load_at_its_step(
    #[case] manifest: &str,
    #[case] message: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    if !manifest.is_empty() {
        std::fs::create_dir(dir.path().join("pods")).unwrap();
        std::fs::write(dir.path().join("pods/web.yaml"), manifest).unwrap();
    }
    let file = dir.path().join("from-file.yaml");
    std::fs::write(&file, SYNC_FROM_FILE).unwrap();
    let (code, stdout) = list(&file);
    let errors = errors(&stdout);
    let prefix = format!(
        "error: {}:6:9: case `one`: step 1: `sync_pod`: {message}",
        file.display()
    );
    assert!(
        errors.len() == 1 && errors[0].starts_with(&prefix),
        "want {prefix}..., got\n{stdout}"
    );
    assert_eq!(code, Some(1), "{stdout}");
}
