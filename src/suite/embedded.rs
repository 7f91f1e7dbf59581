//! The suites compiled into the binary: `build.rs` lists every file under `suites/`, so a
//! suite is embedded by being a file there, with nothing to register by hand.

/// `(path relative to the crate root, contents)` of every suite file under `suites/`, sorted
/// by path.
pub const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/embedded_suites.rs"));

#[cfg(test)]
mod tests {
    use super::EMBEDDED;

    #[test]
    fn every_file_under_suites_is_embedded_with_its_contents_in_path_order() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir(root.join("suites"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
            .map(|name| {
                let path = format!("suites/{name}");
                let text = std::fs::read_to_string(root.join(&path)).unwrap();
                (path, text)
            })
            .collect();
        on_disk.sort();
        let embedded: Vec<(String, String)> = EMBEDDED
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
            .collect();
        assert!(!embedded.is_empty());
        assert_eq!(on_disk, embedded);
    }
}
