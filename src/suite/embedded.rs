//! The suites compiled into the binary: `build.rs` lists every file under `suites/`, so a
//! suite is embedded by being a file there, with nothing to register by hand.

/// `(path relative to the crate root, contents)` of every suite file under `suites/`, sorted
/// by path.
pub const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/embedded_suites.rs"));

/// `(path relative to the crate root, contents)` of every Pod manifest under
/// `suites/manifests/`, which the embedded suites' `sync_pod` steps name by `file:`, sorted by
/// path. They go with the suites, so the binary runs them from any directory.
pub const EMBEDDED_MANIFESTS: &[(&str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/embedded_manifests.rs"));

/// The embedded file at `path` (relative to the crate root, `/`-separated), suite or manifest.
pub fn embedded_file(path: &str) -> Option<&'static str> {
    EMBEDDED
        .iter()
        .chain(EMBEDDED_MANIFESTS)
        .find(|(p, _)| *p == path)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::{embedded_file, EMBEDDED, EMBEDDED_MANIFESTS};

    #[rstest]
    #[case::suites("suites", EMBEDDED)]
    #[case::manifests("suites/manifests", EMBEDDED_MANIFESTS)]
    fn every_yaml_file_of_the_directory_is_embedded_with_its_contents_in_path_order(
        #[case] dir: &str,
        #[case] embedded: &[(&str, &str)],
    ) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
            .map(|name| {
                let path = format!("{dir}/{name}");
                let text = std::fs::read_to_string(root.join(&path)).unwrap();
                (path, text)
            })
            .collect();
        on_disk.sort();
        let embedded: Vec<(String, String)> = embedded
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
            .collect();
        assert!(!embedded.is_empty());
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn an_embedded_file_is_found_by_its_path_and_nothing_else_is() {
        assert!(embedded_file("suites/manifests/pod-kubectl.yaml")
            .is_some_and(|text| text.contains("kind: Pod")));
        assert!(embedded_file("suites/lifecycle-sync.yaml").is_some());
        assert_eq!(embedded_file("suites/manifests/none.yaml"), None);
        assert_eq!(embedded_file("manifests/pod-kubectl.yaml"), None);
    }
}
