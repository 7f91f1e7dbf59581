//! What a dynamically linked binary needs to start, found as the host's loader would find it:
//! the ELF interpreter its `PT_INTERP` names and every `DT_NEEDED` library, transitively,
//! looked up in `DT_RPATH` (unless `DT_RUNPATH` is set), `DT_RUNPATH`, the directories of
//! `/etc/ld.so.conf` (what `ldconfig` builds the loader's cache from), then glibc's defaults.
//! Read from the ELF headers with the `object` crate, never from `ldd`'s printout.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use object::read::elf::{FileHeader, ProgramHeader as _};
use object::{elf, FileKind};

use super::platform;
use super::ImageError;

/// The directories glibc's loader searches after its cache, as its `--list-diagnostics` names
/// them on Debian (`path.system_dirs`), plus the `lib64` pair other distributions use.
const DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib",
    "/usr/lib",
    "/lib64",
    "/usr/lib64",
];

/// What one ELF object asks the loader for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependencies {
    /// `PT_INTERP`: the loader's path (absent in a static binary or a library).
    pub interpreter: Option<String>,
    /// `DT_NEEDED`, in the order the object lists them.
    pub needed: Vec<String>,
    /// `DT_RPATH` entries (searched only when there is no `DT_RUNPATH`).
    pub rpath: Vec<String>,
    /// `DT_RUNPATH` entries.
    pub runpath: Vec<String>,
}

/// Reads the interpreter and dynamic entries of the ELF object `bytes`, read from `path`.
pub fn dependencies(path: &Path, bytes: &[u8]) -> Result<Dependencies, ImageError> {
    let elf_error = |source| ImageError::Elf {
        path: path.to_owned(),
        source,
    };
    match FileKind::parse(bytes).map_err(elf_error)? {
        FileKind::Elf64 => read::<elf::FileHeader64<object::Endianness>>(bytes).map_err(elf_error),
        FileKind::Elf32 => read::<elf::FileHeader32<object::Endianness>>(bytes).map_err(elf_error),
        _ => Err(ImageError::NotElf {
            path: path.to_owned(),
        }),
    }
}

fn read<Elf: FileHeader<Endian = object::Endianness>>(
    bytes: &[u8],
) -> object::read::Result<Dependencies> {
    let header = Elf::parse(bytes)?;
    let endian = header.endian()?;
    let mut found = Dependencies::default();
    for segment in header.program_headers(endian, bytes)? {
        if let Some(interpreter) = segment.interpreter(endian, bytes)? {
            found.interpreter = Some(String::from_utf8_lossy(interpreter).into_owned());
        }
    }
    let sections = header.sections(endian, bytes)?;
    let table = sections.dynamic_table(endian, bytes)?;
    for entry in table.iter() {
        let list = match entry.tag {
            elf::DT_NEEDED => &mut found.needed,
            elf::DT_RPATH => &mut found.rpath,
            elf::DT_RUNPATH => &mut found.runpath,
            _ => continue,
        };
        let text = String::from_utf8_lossy(table.string(entry)?);
        if entry.tag == elf::DT_NEEDED {
            list.push(text.into_owned());
        } else {
            list.extend(text.split(':').filter(|d| !d.is_empty()).map(str::to_owned));
        }
    }
    Ok(found)
}

/// Where libraries are looked for after an object's own `DT_RPATH`/`DT_RUNPATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPath {
    dirs: Vec<PathBuf>,
}

impl SearchPath {
    /// The host's: the directories of `/etc/ld.so.conf` (its `include` globs followed), then
    /// glibc's defaults. An unreadable configuration leaves only the defaults.
    pub fn host() -> Self {
        let mut dirs = Vec::new();
        read_conf(Path::new("/etc/ld.so.conf"), &mut dirs, 0);
        Self::with_defaults(dirs)
    }

    /// `dirs` first, then glibc's defaults.
    pub fn with_defaults(mut dirs: Vec<PathBuf>) -> Self {
        dirs.extend(DEFAULT_DIRS.iter().map(PathBuf::from));
        let mut seen = BTreeSet::new();
        dirs.retain(|dir| seen.insert(dir.clone()));
        Self { dirs }
    }
}

/// Appends the directories `conf` lists; `include PATTERN` lines (a `*` in the file name only,
/// as Debian's and Fedora's configurations use) are read in name order, as ldconfig does.
fn read_conf(conf: &Path, dirs: &mut Vec<PathBuf>, depth: usize) {
    // Includes that include themselves would never end.
    if depth > 8 {
        return;
    }
    let Ok(text) = std::fs::read_to_string(conf) else {
        return;
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(pattern) = line.strip_prefix("include").map(str::trim) {
            if pattern.is_empty() {
                continue;
            }
            for file in glob_files(&conf.parent().unwrap_or(Path::new("/")).join(pattern)) {
                read_conf(&file, dirs, depth + 1);
            }
        } else if line.starts_with('/') {
            dirs.push(PathBuf::from(line));
        }
    }
}

/// The files matching `pattern`, whose last component may hold one `*`, sorted.
fn glob_files(pattern: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    let Some((prefix, suffix)) = name.split_once('*') else {
        return vec![pattern.to_owned()];
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            file.len() >= prefix.len() + suffix.len()
                && file.starts_with(prefix)
                && file.ends_with(suffix)
        })
        .map(|entry| entry.path())
        .collect();
    files.sort();
    files
}

/// One file an image needs for its binary to start: where it goes in the image and where its
/// bytes come from on the host (symbolic links followed, so the image holds plain files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeFile {
    /// Absolute path in the image: the interpreter's `PT_INTERP` path, or the directory the
    /// library was found in joined with its `DT_NEEDED` name.
    pub image_path: PathBuf,
    /// The file read.
    pub bytes: Vec<u8>,
}

/// The interpreter and every library `binary` needs, transitively, in image-path order; empty
/// for a static binary.
pub fn runtime_files(
    binary: &Path,
    bytes: &[u8],
    search: &SearchPath,
) -> Result<Vec<RuntimeFile>, ImageError> {
    let (platform, _) = platform::inspect_any(binary, bytes)?;
    let top = dependencies(binary, bytes)?;
    let mut files: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    if let Some(interpreter) = &top.interpreter {
        let path = PathBuf::from(interpreter);
        files.insert(path.clone(), read_file(&path)?);
    }
    let mut resolved: BTreeSet<String> = BTreeSet::new();
    // (library name, the object that needs it, that object's search directories)
    let mut queue: Vec<(String, PathBuf, Vec<PathBuf>)> = Vec::new();
    let enqueue = |deps: &Dependencies, object: &Path, queue: &mut Vec<_>| {
        let origin = object.parent().unwrap_or(Path::new("/"));
        let own = if deps.runpath.is_empty() {
            &deps.rpath
        } else {
            &deps.runpath
        };
        let dirs: Vec<PathBuf> = own
            .iter()
            .map(|dir| PathBuf::from(dir.replace("$ORIGIN", &origin.to_string_lossy())))
            .collect();
        for name in deps.needed.iter().rev() {
            queue.push((name.clone(), object.to_owned(), dirs.clone()));
        }
    };
    enqueue(&top, binary, &mut queue);
    while let Some((name, needed_by, own_dirs)) = queue.pop() {
        if !resolved.insert(name.clone()) {
            continue;
        }
        let (path, library) = find_library(&name, &needed_by, &own_dirs, search, platform)?;
        let deps = dependencies(&path, &library)?;
        files.insert(path.clone(), library);
        enqueue(&deps, &path, &mut queue);
    }
    Ok(files
        .into_iter()
        .map(|(image_path, bytes)| RuntimeFile { image_path, bytes })
        .collect())
}

/// The first file named `name` in the object's own directories, then the search path, that
/// is an ELF object for the binary's platform (the loader skips one for another machine).
fn find_library(
    name: &str,
    needed_by: &Path,
    own_dirs: &[PathBuf],
    search: &SearchPath,
    wanted: platform::Platform,
) -> Result<(PathBuf, Vec<u8>), ImageError> {
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        own_dirs
            .iter()
            .chain(&search.dirs)
            .map(|dir| dir.join(name))
            .collect()
    };
    for candidate in &candidates {
        let Ok(bytes) = std::fs::read(candidate) else {
            continue;
        };
        if platform::inspect_any(candidate, &bytes).is_ok_and(|(p, _)| p == wanted) {
            return Ok((candidate.clone(), bytes));
        }
    }
    Err(ImageError::LibraryNotFound {
        library: name.to_owned(),
        needed_by: needed_by.to_owned(),
    })
}

fn read_file(path: &Path) -> Result<Vec<u8>, ImageError> {
    std::fs::read(path).map_err(|source| ImageError::ReadFile {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn a_static_binary_needs_nothing() {
        // Debian's busybox-static, which the test images are built from.
        let path = Path::new(super::super::DEFAULT_BUSYBOX);
        let Ok(bytes) = std::fs::read(path) else {
            let _ = writeln!(std::io::stderr(), "skipped: {} is absent", path.display());
            return;
        };
        if platform::inspect(path, &bytes).is_err() {
            let _ = writeln!(
                std::io::stderr(),
                "skipped: {} is not static",
                path.display()
            );
            return;
        }
        let files = runtime_files(path, &bytes, &SearchPath::with_defaults(vec![])).unwrap();
        assert_eq!(files, Vec::new());
    }

    #[test]
    fn the_test_binary_itself_names_its_interpreter_and_c_library() {
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&exe).unwrap();
        let deps = dependencies(&exe, &bytes).unwrap();
        let Some(interpreter) = deps.interpreter else {
            // A static (musl) build of the tests: nothing to check here.
            return;
        };
        assert!(interpreter.starts_with('/'), "{interpreter}");
        assert!(
            deps.needed.iter().any(|n| n.starts_with("libc.so")),
            "{:?}",
            deps.needed
        );
        let files = runtime_files(&exe, &bytes, &SearchPath::host()).unwrap();
        let paths: Vec<_> = files.iter().map(|f| f.image_path.clone()).collect();
        assert!(paths.contains(&PathBuf::from(&interpreter)), "{paths:?}");
        assert!(
            paths.iter().any(|p| p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libc.so"))),
            "{paths:?}"
        );
        // Resolved files hold the bytes the loader would map, not links.
        assert!(files.iter().all(|f| f.bytes.starts_with(b"\x7fELF")));
    }

    #[test]
    fn a_missing_library_names_itself_and_who_needs_it() {
        let err = find_library(
            "libnothing-here.so.9",
            Path::new("/bin/app"),
            &[],
            &SearchPath::with_defaults(vec![]),
            platform::Platform {
                os: "linux",
                architecture: "amd64",
            },
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("libnothing-here.so.9") && text.contains("/bin/app"),
            "{text}"
        );
    }

    #[test]
    fn ld_so_conf_includes_are_followed_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let conf_d = dir.path().join("ld.so.conf.d");
        std::fs::create_dir(&conf_d).unwrap();
        std::fs::write(conf_d.join("b.conf"), "/opt/b\n").unwrap();
        std::fs::write(conf_d.join("a.conf"), "# comment\n/opt/a\n").unwrap();
        std::fs::write(conf_d.join("ignored.txt"), "/opt/no\n").unwrap();
        let conf = dir.path().join("ld.so.conf");
        std::fs::write(&conf, "include ld.so.conf.d/*.conf\n/opt/last\n").unwrap();
        let mut dirs = Vec::new();
        read_conf(&conf, &mut dirs, 0);
        assert_eq!(
            dirs,
            ["/opt/a", "/opt/b", "/opt/last"]
                .map(PathBuf::from)
                .to_vec()
        );
    }
}
