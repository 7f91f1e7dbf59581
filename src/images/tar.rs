//! A deterministic ustar writer for image layers: every entry owned by root, mtime 0, entries
//! sorted by path, so the same inputs give the same bytes (and the same digests) on any machine.
//! Only what a busybox root filesystem needs: directories, regular files and symlinks.

use std::collections::BTreeMap;

use super::ImageError;

/// The ustar block size; headers and file data are padded to it.
const BLOCK: usize = 512;
/// Longest path a ustar header holds without its prefix field, which this writer never uses.
const NAME_MAX: usize = 100;

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

    /// The archive: one header per entry in path order, data padded to blocks, two zero blocks.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ImageError> {
        let mut out = Vec::new();
        for (path, (kind, mode)) in &self.entries {
            let (typeflag, size, link) = match kind {
                EntryKind::Directory => (b'5', 0, ""),
                EntryKind::File(data) => (b'0', data.len(), ""),
                EntryKind::Symlink(target) => (b'2', 0, target.as_str()),
            };
            out.extend_from_slice(&header(path, *mode, size, typeflag, link)?);
            if let EntryKind::File(data) = kind {
                out.extend_from_slice(data);
                out.resize(out.len().next_multiple_of(BLOCK), 0);
            }
        }
        out.resize(out.len() + 2 * BLOCK, 0);
        Ok(out)
    }
}

/// One ustar header block; numeric fields are zero-padded octal ending in NUL.
fn header(
    path: &str,
    mode: u32,
    size: usize,
    typeflag: u8,
    link: &str,
) -> Result<[u8; BLOCK], ImageError> {
    for name in [path, link] {
        if name.len() > NAME_MAX {
            return Err(ImageError::TarName {
                name: name.to_owned(),
            });
        }
    }
    let mut block = [0u8; BLOCK];
    block[..path.len()].copy_from_slice(path.as_bytes());
    octal(&mut block[100..108], mode as u64);
    octal(&mut block[108..116], 0); // uid
    octal(&mut block[116..124], 0); // gid
    octal(&mut block[124..136], size as u64);
    octal(&mut block[136..148], 0); // mtime
    block[156] = typeflag;
    block[157..157 + link.len()].copy_from_slice(link.as_bytes());
    block[257..263].copy_from_slice(b"ustar\0");
    block[263..265].copy_from_slice(b"00");
    block[265..269].copy_from_slice(b"root"); // uname
    block[297..301].copy_from_slice(b"root"); // gname
    octal(&mut block[329..337], 0); // devmajor
    octal(&mut block[337..345], 0); // devminor
                                    // The checksum is summed with its own field read as spaces, then written as six octal
                                    // digits, NUL, space (the layout every tar reader accepts).
    block[148..156].copy_from_slice(b"        ");
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    octal(&mut block[148..155], u64::from(sum));
    block[155] = b' ';
    Ok(block)
}

/// Writes `value` as zero-padded octal filling `field` but its last byte, which stays NUL.
fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&text.as_bytes()[text.len() - digits..]);
    field[digits] = 0;
}

#[cfg(test)]
mod tests {
    /// Writes a skip line past the test harness's capture of `eprintln!`, so it is seen.
    fn skip(line: std::fmt::Arguments<'_>) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    use super::*;

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
