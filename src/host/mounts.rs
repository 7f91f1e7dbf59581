//! The host's mount table as the harness's own mount namespace sees it (proc(5) mountinfo):
//! what a case's cleanup sweeps and what the mount steps check.

use std::path::{Path, PathBuf};

/// Where the kernel lists the mounts the harness's own mount namespace sees.
pub const MOUNTINFO: &str = "/proc/self/mountinfo";

/// One line of `/proc/self/mountinfo`, the fields the harness reads (proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfo {
    /// The mount's id.
    pub id: u32,
    /// Its parent mount's id.
    pub parent: u32,
    /// The directory of its filesystem that is mounted there: `/` for a whole filesystem, a
    /// subdirectory for a bind mount of one (a container's view of its own cgroup).
    pub root: PathBuf,
    /// Where it is mounted, its octal escapes (`\040` for a space) undone.
    pub mount_point: PathBuf,
    /// The optional fields: `shared:N`, `master:N`, `propagate_from:N`, `unbindable`; none
    /// for a private mount.
    pub optional: Vec<String>,
    /// The filesystem type (`tmpfs`, `ext4`, `cgroup2`).
    pub fs_type: String,
}

impl MountInfo {
    /// Its propagation as mount(8) names it: `shared`, `slave`, `shared,slave`, `unbindable`
    /// or `private`.
    pub fn propagation(&self) -> String {
        let has = |prefix: &str| self.optional.iter().any(|o| o.starts_with(prefix));
        let kinds: Vec<&str> = [
            ("shared:", "shared"),
            ("master:", "slave"),
            ("unbindable", "unbindable"),
        ]
        .into_iter()
        .filter(|(prefix, _)| has(prefix))
        .map(|(_, name)| name)
        .collect();
        if kinds.is_empty() {
            "private".to_owned()
        } else {
            kinds.join(",")
        }
    }
}

/// Undoes the kernel's octal escapes in a mountinfo path (space, tab, newline and backslash
/// are written `\040`, `\011`, `\012`, `\134`); anything else is kept as written.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt as _;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes
            .get(at + 1..at + 4)
            .filter(|digits| bytes[at] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// Parses mountinfo text; a line that does not have the kernel's shape is left out.
pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MountInfo> {
    // `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS`
    let (mount, fs) = line.split_once(" - ")?;
    let mut fields = mount.split(' ');
    let id = fields.next()?.parse().ok()?;
    let parent = fields.next()?.parse().ok()?;
    let _device = fields.next()?;
    let root = unescape(fields.next()?);
    let mount_point = unescape(fields.next()?);
    let _options = fields.next()?;
    let optional = fields
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    let fs_type = fs.split(' ').next().filter(|t| !t.is_empty())?.to_owned();
    Some(MountInfo {
        id,
        parent,
        root,
        mount_point,
        optional,
        fs_type,
    })
}

/// The mounts the harness's mount namespace sees now.
pub fn mount_table() -> std::io::Result<Vec<MountInfo>> {
    std::fs::read_to_string(MOUNTINFO).map(|text| parse_mountinfo(&text))
}

/// The path as the kernel writes it in mountinfo: absolute, symbolic links resolved (a work
/// directory under a linked `/tmp` is listed under the link's target).
pub fn as_listed(dir: &Path) -> PathBuf {
    dir.canonicalize()
        .unwrap_or_else(|_| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

/// The mounts at `dir` or below it, deepest first; of mounts stacked on one path, the one on
/// top (listed last) first.
pub fn mounts_under<'a>(table: &'a [MountInfo], dir: &Path) -> Vec<&'a MountInfo> {
    let mut under: Vec<(usize, &MountInfo)> = table
        .iter()
        .enumerate()
        .filter(|(_, m)| m.mount_point.starts_with(dir))
        .collect();
    under.sort_by(|(a_at, a), (b_at, b)| {
        let depth = |m: &MountInfo| m.mount_point.components().count();
        depth(b).cmp(&depth(a)).then(b_at.cmp(a_at))
    });
    under.into_iter().map(|(_, m)| m).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use rstest::rstest;

    use super::*;

    /// Mountinfo as a kernel writes it: a private root, a shared bind with a space in its
    /// path, a slave tmpfs stacked twice on one path, a sibling whose name extends a case's.
    pub const LISTING: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
60 27 254:0 /w/r/case-1/src /w/r/case-1/src rw,relatime shared:5 - ext4 /dev/vda rw
61 60 0:50 / /w/r/case-1/src/late\\040mount rw,relatime shared:6 - tmpfs tmpfs rw
62 60 0:51 / /w/r/case-1/src/inner rw master:5 - tmpfs none rw
63 62 0:52 / /w/r/case-1/src/inner rw shared:7 master:5 - tmpfs none rw
64 27 0:53 / /w/r/case-10 rw - tmpfs tmpfs rw
not a mountinfo line
";

    #[test]
    fn mountinfo_lines_give_their_ids_paths_propagation_and_type() {
        let table = parse_mountinfo(LISTING);
        assert_eq!(table.len(), 6, "{table:#?}");
        let late = &table[2];
        assert_eq!((late.id, late.parent), (61, 60));
        assert_eq!(late.mount_point, Path::new("/w/r/case-1/src/late mount"));
        assert_eq!(late.fs_type, "tmpfs");
        assert_eq!(late.root, Path::new("/"));
        assert_eq!(table[1].root, Path::new("/w/r/case-1/src"));
        let propagations: Vec<String> = table.iter().map(MountInfo::propagation).collect();
        assert_eq!(
            propagations,
            [
                "private",
                "shared",
                "shared",
                "slave",
                "shared,slave",
                "private"
            ]
        );
    }

    #[rstest]
    #[case::space("/a\\040b", "/a b")]
    #[case::tab_newline_backslash("/a\\011\\012\\134", "/a\t\n\\")]
    #[case::not_octal("/a\\x40", "/a\\x40")]
    #[case::cut_short("/a\\04", "/a\\04")]
    #[case::plain("/plain", "/plain")]
    fn octal_escapes_in_paths_are_undone(#[case] field: &str, #[case] path: &str) {
        assert_eq!(unescape(field), Path::new(path));
    }

    #[test]
    fn mounts_under_a_case_come_deepest_first_and_the_top_of_a_stack_before_what_it_covers() {
        let table = parse_mountinfo(LISTING);
        let ids: Vec<u32> = mounts_under(&table, Path::new("/w/r/case-1"))
            .iter()
            .map(|m| m.id)
            .collect();
        // case-10 is not under case-1, though its name starts alike.
        assert_eq!(ids, [63, 62, 61, 60]);
    }
}
