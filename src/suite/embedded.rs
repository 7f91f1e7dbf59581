//! The suites compiled into the binary. Rust cannot embed a directory listing, so each file is
//! registered here by hand; a test fails when a file under `suites/` is missing from the list.

/// `(path relative to the crate root, contents)` of every suite file under `suites/`.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "suites/version-gating.yaml",
        include_str!("../../suites/version-gating.yaml"),
    ),
    (
        "suites/latest-sandbox-ip.yaml",
        include_str!("../../suites/latest-sandbox-ip.yaml"),
    ),
    (
        "suites/orphans-by-labels.yaml",
        include_str!("../../suites/orphans-by-labels.yaml"),
    ),
    (
        "suites/network-teardown.yaml",
        include_str!("../../suites/network-teardown.yaml"),
    ),
    (
        "suites/pod-helpers.yaml",
        include_str!("../../suites/pod-helpers.yaml"),
    ),
    (
        "suites/kubelet-fixtures.yaml",
        include_str!("../../suites/kubelet-fixtures.yaml"),
    ),
];

#[cfg(test)]
mod tests {
    use super::EMBEDDED;

    #[test]
    fn every_file_under_suites_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
            .map(|name| format!("suites/{name}"))
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = EMBEDDED.iter().map(|(p, _)| (*p).to_owned()).collect();
        embedded.sort();
        assert_eq!(
            on_disk, embedded,
            "register every suite file in src/suite/embedded.rs"
        );
    }
}
