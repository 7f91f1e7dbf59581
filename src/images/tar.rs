//! Deterministic image layers on the `tar` crate: every entry owned by root, mtime 0, entries
//! sorted by path, so the same inputs give the same bytes (and the same digests) on any machine.
//! Only what a busybox root filesystem needs: directories, regular files and symlinks.

use std::collections::BTreeMap;

use tar::{Builder, EntryType, Header};

use super::ImageError;

/// What one archive entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory (its name ends in `/` in the archive).
    Directory,
    /// A regular file with its contents.
    File(Vec<u8>),
    /// A symbolic link to the given target.
    Symlink(String),
}

/// A set of archive entries keyed by path (no leading `/` or `./`), written in path order.
#[derive(Debug, Default, Clone)]
pub struct TarTree {
    entries: BTreeMap<String, (EntryKind, u32)>,
}

impl TarTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a directory with the given permission bits.
    pub fn directory(&mut self, path: &str, mode: u32) -> &mut Self {
        self.entries.insert(
            format!("{}/", path.trim_end_matches('/')),
            (EntryKind::Directory, mode),
        );
        self
    }

    /// Adds a regular file with the given permission bits.
    pub fn file(&mut self, path: &str, mode: u32, contents: Vec<u8>) -> &mut Self {
        self.entries
            .insert(path.to_owned(), (EntryKind::File(contents), mode));
        self
    }

    /// Adds a symbolic link (mode 0777, as links have no permissions of their own).
    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        self.entries.insert(
            path.to_owned(),
            (EntryKind::Symlink(target.to_owned()), 0o777),
        );
        self
    }

    /// Entry paths in archive order (directories end in `/`).
    #[cfg(test)]
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The archive: one ustar header per entry in path order, data padded to blocks, two
    /// zero blocks.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ImageError> {
        let mut archive = Builder::new(Vec::new());
        for (path, (kind, mode)) in &self.entries {
            let too_long = |name: &str| {
                let name = name.to_owned();
                move |_| ImageError::TarName { name }
            };
            let mut header = Header::new_ustar();
            header.set_path(path).map_err(too_long(path))?;
            header.set_mode(*mode);
            header.set_uid(0);
            header.set_gid(0);
            header.set_username("root").map_err(ImageError::Tar)?;
            header.set_groupname("root").map_err(ImageError::Tar)?;
            header.set_device_major(0).map_err(ImageError::Tar)?;
            header.set_device_minor(0).map_err(ImageError::Tar)?;
            let data: &[u8] = match kind {
                EntryKind::Directory => {
                    header.set_entry_type(EntryType::Directory);
                    &[]
                }
                EntryKind::File(data) => {
                    header.set_entry_type(EntryType::Regular);
                    data
                }
                EntryKind::Symlink(target) => {
                    header.set_entry_type(EntryType::Symlink);
                    header.set_link_name(target).map_err(too_long(target))?;
                    &[]
                }
            };
            header.set_size(data.len() as u64);
            set_checksum(&mut header);
            archive.append(&header, data).map_err(ImageError::Tar)?;
        }
        archive.into_inner().map_err(ImageError::Tar)
    }
}

/// The checksum in GNU tar's layout, six octal digits, NUL, space: the `tar` crate writes
/// seven digits and a NUL, equally valid, but the layers published so far have this one, and
/// their digests must not change.
fn set_checksum(header: &mut Header) {
    header.set_cksum();
    let sum = header.cksum().unwrap_or_default();
    let field = &mut header.as_old_mut().cksum;
    field[..6].copy_from_slice(format!("{sum:06o}").as_bytes());
    field[6] = 0;
    field[7] = b' ';
}

#[cfg(test)]
mod tests {
    /// Writes a skip line past the test harness's capture of `eprintln!`, so it is seen.
    fn skip(line: std::fmt::Arguments<'_>) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    use super::*;

    /// The ustar block size; headers and file data are padded to it.
    const BLOCK: usize = 512;

    fn sample() -> TarTree {
        let mut tree = TarTree::new();
        tree.symlink("bin/sh", "busybox")
            .file("bin/busybox", 0o755, b"#!binary".to_vec())
            .directory("bin", 0o755)
            .directory("tmp", 0o1777);
        tree
    }

    fn field(block: &[u8], range: std::ops::Range<usize>) -> String {
        String::from_utf8_lossy(&block[range])
            .trim_end_matches('\0')
            .to_owned()
    }

    #[test]
    fn entries_are_written_in_path_order_with_directories_first() {
        let tree = sample();
        let paths: Vec<&str> = tree.paths().collect();
        assert_eq!(paths, ["bin/", "bin/busybox", "bin/sh", "tmp/"]);
    }

    #[test]
    fn insertion_order_does_not_change_the_bytes() {
        let mut reversed = TarTree::new();
        reversed
            .directory("tmp", 0o1777)
            .directory("bin", 0o755)
            .file("bin/busybox", 0o755, b"#!binary".to_vec())
            .symlink("bin/sh", "busybox");
        assert_eq!(sample().to_bytes().unwrap(), reversed.to_bytes().unwrap());
    }

    #[test]
    fn archive_is_block_aligned_and_ends_in_two_zero_blocks() {
        let bytes = sample().to_bytes().unwrap();
        // 4 headers + 1 data block + 2 end blocks.
        assert_eq!(bytes.len(), 7 * BLOCK);
        assert!(bytes[5 * BLOCK..].iter().all(|&b| b == 0));
    }

    #[test]
    fn headers_carry_root_ownership_zero_mtime_and_a_valid_checksum() {
        let bytes = sample().to_bytes().unwrap();
        let file = &bytes[BLOCK..2 * BLOCK];
        assert_eq!(field(file, 0..100), "bin/busybox");
        assert_eq!(field(file, 100..108), "0000755");
        assert_eq!(field(file, 108..116), "0000000");
        assert_eq!(field(file, 124..136), "00000000010");
        assert_eq!(field(file, 136..148), "00000000000");
        assert_eq!(file[156], b'0');
        assert_eq!(field(file, 257..263), "ustar");
        let recorded = u32::from_str_radix(&field(file, 148..154), 8).unwrap();
        let mut blanked = file.to_vec();
        blanked[148..156].copy_from_slice(b"        ");
        let actual: u32 = blanked.iter().map(|&b| u32::from(b)).sum();
        assert_eq!(recorded, actual);
    }

    #[test]
    fn symlinks_record_their_target() {
        let bytes = sample().to_bytes().unwrap();
        let link = &bytes[3 * BLOCK..4 * BLOCK];
        assert_eq!(field(link, 0..100), "bin/sh");
        assert_eq!(link[156], b'2');
        assert_eq!(field(link, 157..257), "busybox");
        assert_eq!(field(link, 124..136), "00000000000");
    }

    #[test]
    fn sticky_directories_keep_their_mode() {
        let bytes = sample().to_bytes().unwrap();
        let tmp = &bytes[4 * BLOCK..5 * BLOCK];
        assert_eq!(field(tmp, 0..100), "tmp/");
        assert_eq!(field(tmp, 100..108), "0001777");
        assert_eq!(tmp[156], b'5');
    }

    /// The bytes of the hand-written writer this one replaced, pinned: a change in the `tar`
    /// crate's layout must not change the published layers' digests.
    #[test]
    fn the_sample_archive_keeps_its_digest() {
        use sha2::{Digest, Sha256};
        let digest = hex::encode(Sha256::digest(sample().to_bytes().unwrap()));
        assert_eq!(
            digest,
            "a247c7b355d17558cf41754baea5cdbc2021de38452ac8418e073bd63c6e3a57"
        );
    }

    #[test]
    fn names_longer_than_a_ustar_header_are_refused() {
        let mut tree = TarTree::new();
        tree.file(&"x".repeat(101), 0o644, Vec::new());
        assert!(matches!(tree.to_bytes(), Err(ImageError::TarName { .. })));
    }

    #[test]
    fn gnu_tar_lists_the_archive_when_installed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("layer.tar");
        std::fs::write(&path, sample().to_bytes().unwrap()).unwrap();
        let output = match std::process::Command::new("tar")
            .arg("-tvf")
            .arg(&path)
            .output()
        {
            Ok(output) => output,
            Err(_) => {
                skip(format_args!(
                    "skipped: no `tar` command to cross-check the archive"
                ));
                return;
            }
        };
        assert!(output.status.success(), "{output:?}");
        let listing = String::from_utf8(output.stdout).unwrap();
        assert!(listing.contains("bin/sh -> busybox"), "{listing}");
        assert!(listing.contains("root/root"), "{listing}");
        assert!(listing.contains("1970-01-01"), "{listing}");
    }
}
