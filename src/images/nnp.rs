//! The NoNewPrivs checker: a tiny static x86-64 Linux executable, written here byte by byte, that
//! calls geteuid(2) and prints `Effective uid: N` in one write, as the `nnp` program of the
//! Kubernetes `nonewprivs` e2e image does. Installed setuid root, it shows whether exec may raise
//! privileges: a user's process gets euid 0 from it, unless no_new_privs is set. Busybox cannot
//! stand in (it drops a setuid bit it was not built to keep), and no compiler is needed to build
//! the image.

/// Where the image installs the checker, and runs it by default.
pub const NNP_PATH: &str = "usr/local/bin/nnp";

/// The checker's file mode in the image: setuid, owned by root (every layer entry is).
pub const NNP_MODE: u32 = 0o4755;

/// The ELF machine number of x86-64, the only machine the checker is written for.
pub const NNP_MACHINE: u16 = 0x3e;

/// Where the kernel maps the file: the traditional base of x86-64 executables.
const BASE: u64 = 0x40_0000;
/// The ELF header's size, and where the one program header starts.
const EHDR: usize = 64;
/// One program header's size.
const PHDR: usize = 56;
/// The text before the number.
const PREFIX: &[u8] = b"Effective uid: ";
// The code moves the buffer pointer back by the prefix's length as a sign-extended byte.
const _: () = assert!(PREFIX.len() < 0x80);

/// The checker's machine code. `prefix` is the address of [`PREFIX`] in memory. Registers: eax
/// holds the syscall number and its result, rdi/rsi/rdx the arguments. The line is built
/// backwards in the 128 bytes below rsp, which a leaf program without signal handlers may use
/// (it needs at most 26: the prefix, ten digits and the newline), and goes out in one write(2):
/// a runtime whose log pipe makes a log record of each read (CRI-O's conmon) would otherwise log
/// the line as partial pieces.
fn code(prefix: u32) -> Vec<u8> {
    let [p0, p1, p2, p3] = prefix.to_le_bytes();
    let prefix_len = PREFIX.len() as u8;
    #[rustfmt::skip]
    let code = vec![
        0xb8, 0x6b, 0x00, 0x00, 0x00, // mov eax, 107          ; geteuid(2): eax = euid
        0x0f, 0x05,                   // syscall
        0x48, 0x89, 0xe6,             // mov rsi, rsp          ; rsi: one past the line's end
        0x48, 0xff, 0xce,             // dec rsi
        0xc6, 0x06, 0x0a,             // mov byte [rsi], '\n'  ; the line ends the output
        0xb9, 0x0a, 0x00, 0x00, 0x00, // mov ecx, 10           ; the base
        // digit: (16 bytes, the jnz below goes back here)
        0x31, 0xd2,                   // xor edx, edx          ; edx:eax = the number left
        0xf7, 0xf1,                   // div ecx               ; eax = quotient, edx = next digit
        0x80, 0xc2, 0x30,             // add dl, '0'
        0x48, 0xff, 0xce,             // dec rsi
        0x88, 0x16,                   // mov [rsi], dl         ; digits go in right to left
        0x85, 0xc0,                   // test eax, eax
        0x75, 0xf0,                   // jnz digit             ; -16: while a quotient is left
        0x48, 0x83, 0xee, prefix_len, // sub rsi, 15           ; the prefix goes before them
        0x48, 0x89, 0xf7,             // mov rdi, rsi          ; copy to: the line's start
        0x48, 0x89, 0xf2,             // mov rdx, rsi          ; which rdx keeps
        0xbe, p0, p1, p2, p3,         // mov esi, PREFIX       ; copy from: "Effective uid: "
        0xb9, prefix_len, 0x00, 0x00, 0x00, // mov ecx, 15     ; its length
        0xfc,                         // cld                   ; copy upwards
        0xf3, 0xa4,                   // rep movsb
        0x48, 0x89, 0xd6,             // mov rsi, rdx          ; buffer: the whole line
        0x48, 0x89, 0xe2,             // mov rdx, rsp
        0x48, 0x29, 0xf2,             // sub rdx, rsi          ; its length
        0xb8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1            ; write(2), the only one
        0xbf, 0x01, 0x00, 0x00, 0x00, // mov edi, 1            ; fd: stdout
        0x0f, 0x05,                   // syscall
        0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60           ; exit(2)
        0x31, 0xff,                   // xor edi, edi          ; status 0
        0x0f, 0x05,                   // syscall
    ];
    code
}

/// The whole executable: ELF header, one loadable read-and-execute segment mapping the file at
/// `BASE`, the code, then the prefix text. The same bytes on every call.
pub fn nnp_elf() -> Vec<u8> {
    let code_at = EHDR + PHDR;
    // The code's length does not depend on the address it is given.
    let prefix_at = code_at + code(0).len();
    let size = (prefix_at + PREFIX.len()) as u64;
    let entry = BASE + code_at as u64;
    let prefix = u32::try_from(BASE + prefix_at as u64).unwrap_or(u32::MAX);

    let mut elf = Vec::with_capacity(size as usize);
    // e_ident: magic, 64-bit, little-endian, ELF version 1, System V ABI, padding.
    elf.extend_from_slice(b"\x7fELF");
    elf.extend_from_slice(&[2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // e_type: ET_EXEC
    elf.extend_from_slice(&NNP_MACHINE.to_le_bytes()); // e_machine: x86-64
    elf.extend_from_slice(&1u32.to_le_bytes()); // e_version
    elf.extend_from_slice(&entry.to_le_bytes()); // e_entry
    elf.extend_from_slice(&(EHDR as u64).to_le_bytes()); // e_phoff: right after this header
    elf.extend_from_slice(&0u64.to_le_bytes()); // e_shoff: no section headers
    elf.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    elf.extend_from_slice(&(EHDR as u16).to_le_bytes()); // e_ehsize
    elf.extend_from_slice(&(PHDR as u16).to_le_bytes()); // e_phentsize
    elf.extend_from_slice(&1u16.to_le_bytes()); // e_phnum
    elf.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
    elf.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
    elf.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
                                                // The program header: PT_LOAD, readable and executable, the whole file at BASE.
    elf.extend_from_slice(&1u32.to_le_bytes()); // p_type: PT_LOAD
    elf.extend_from_slice(&5u32.to_le_bytes()); // p_flags: PF_R | PF_X
    elf.extend_from_slice(&0u64.to_le_bytes()); // p_offset
    elf.extend_from_slice(&BASE.to_le_bytes()); // p_vaddr
    elf.extend_from_slice(&BASE.to_le_bytes()); // p_paddr
    elf.extend_from_slice(&size.to_le_bytes()); // p_filesz
    elf.extend_from_slice(&size.to_le_bytes()); // p_memsz
    elf.extend_from_slice(&0x1000u64.to_le_bytes()); // p_align: the page size
    elf.extend_from_slice(&code(prefix));
    elf.extend_from_slice(PREFIX);
    elf
}

#[cfg(test)]
#[allow(unsafe_code)] // libc calls under SAFETY comments, in tests only
mod tests {
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::*;

    /// Writes a skip line past the test harness's capture of `eprintln!`, so it is seen.
    fn skip(line: std::fmt::Arguments<'_>) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    /// The checker written to a fresh directory with `mode`; the directory goes with the guard.
    /// The directory is world-traversable so another uid can exec the file.
    fn installed(mode: u32) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("nnp");
        std::fs::write(&path, nnp_elf()).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, path)
    }

    fn runs_here() -> bool {
        cfg!(all(target_os = "linux", target_arch = "x86_64"))
    }

    /// Runs `path` as `uid` (when given), with no_new_privs set first when asked, and returns
    /// its stdout; fails on a non-zero exit.
    fn run(path: &Path, uid: Option<u32>, no_new_privs: bool) -> String {
        let mut command = Command::new(path);
        if let Some(uid) = uid {
            command.uid(uid).gid(uid);
        }
        if no_new_privs {
            // SAFETY: prctl is async-signal-safe and touches only the child's own flags.
            unsafe {
                command.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// Whether a setuid file in `dir` can take effect: not on a nosuid mount.
    fn suid_allowed(dir: &Path) -> bool {
        nix_statvfs_nosuid(dir).is_some_and(|nosuid| !nosuid)
    }

    fn nix_statvfs_nosuid(dir: &Path) -> Option<bool> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: the path is NUL-terminated and the buffer is a statvfs.
        let rc = unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) };
        // SAFETY: statvfs filled the buffer when it returned 0.
        (rc == 0).then(|| unsafe { stat.assume_init() }.f_flag & libc::ST_NOSUID != 0)
    }

    #[test]
    fn the_checker_is_a_static_x86_64_executable_the_image_writer_accepts() {
        let platform = crate::images::platform::inspect(Path::new("nnp"), &nnp_elf()).unwrap();
        assert_eq!(platform.architecture, "amd64");
        assert_eq!(nnp_elf(), nnp_elf());
        assert_eq!(
            nnp_elf().len() as u64,
            u64::from_le_bytes(nnp_elf()[96..104].try_into().unwrap())
        );
    }

    #[test]
    fn the_checker_prints_the_effective_uid_of_whoever_runs_it() {
        if !runs_here() {
            skip(format_args!("skipped: the checker is x86-64 Linux code"));
            return;
        }
        let (_dir, path) = installed(0o755);
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(run(&path, None, false), format!("Effective uid: {euid}\n"));
    }

    #[test]
    fn setuid_root_raises_a_users_euid_unless_no_new_privs_is_set() {
        if !runs_here() || !is_root() {
            skip(format_args!(
                "skipped: needs root on x86-64 Linux to make a setuid-root file and switch uid"
            ));
            return;
        }
        let (dir, path) = installed(NNP_MODE);
        if !suid_allowed(dir.path()) {
            skip(format_args!(
                "skipped: the temporary directory is mounted nosuid"
            ));
            return;
        }
        assert_eq!(run(&path, Some(1000), false), "Effective uid: 0\n");
        assert_eq!(run(&path, Some(1000), true), "Effective uid: 1000\n");
        // Without the setuid bit the user stays itself either way.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(run(&path, Some(1000), false), "Effective uid: 1000\n");
    }

    /// A connected pair of unix `SOCK_SEQPACKET` sockets: (the test's end, the writer's end).
    fn seqpacket_pair() -> (OwnedFd, OwnedFd) {
        use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
        socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap()
    }

    /// Every write(2) the checker makes, in order: its stdout is one end of a unix
    /// `SOCK_SEQPACKET` pair, which keeps each write a record of its own (a pipe may merge
    /// them), so a line split across writes shows as several records, as a runtime's log pipe
    /// sees it.
    fn writes(path: &Path, uid: Option<u32>) -> Vec<Vec<u8>> {
        let (ours, theirs) = seqpacket_pair();
        let mut command = Command::new(path);
        command.stdout(theirs);
        if let Some(uid) = uid {
            command.uid(uid).gid(uid);
        }
        let mut child = command.spawn().unwrap();
        // The command keeps this process's copy of the child's end: while it is open, the
        // reader would never see end of file.
        drop(command);
        let records = records(&ours);
        let status = child.wait().unwrap();
        assert!(status.success(), "{status:?}");
        records
    }

    /// The records on `socket` until its peer is closed. The buffer is far larger than any
    /// record the tests send, so none is truncated.
    fn records(socket: &OwnedFd) -> Vec<Vec<u8>> {
        let mut records = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            match rustix::io::read(socket, &mut buffer).unwrap() {
                0 => return records,
                n => records.push(buffer[..n].to_vec()),
            }
        }
    }

    #[test]
    fn a_seqpacket_pair_keeps_two_writes_as_two_records() {
        // The control for the test below: the transport does not merge writes, so one record
        // there means one write.
        let (ours, theirs) = seqpacket_pair();
        rustix::io::write(&theirs, PREFIX).unwrap();
        rustix::io::write(&theirs, b"0\n").unwrap();
        drop(theirs);
        assert_eq!(records(&ours), [PREFIX.to_vec(), b"0\n".to_vec()]);
    }

    #[test]
    #[cfg_attr(
        not(all(target_os = "linux", target_arch = "x86_64")),
        ignore = "the checker is x86-64 Linux code"
    )]
    fn the_checker_writes_its_whole_line_in_one_write() {
        // A runtime's log pipe turns each read into a log record (CRI-O's conmon does): a line
        // written in pieces would be logged as partial lines.
        let (_dir, path) = installed(0o755);
        let euid = rustix::process::geteuid().as_raw();
        let lines: Vec<String> = writes(&path, None)
            .into_iter()
            .map(|write| String::from_utf8(write).unwrap())
            .collect();
        assert_eq!(lines, [format!("Effective uid: {euid}\n")]);
    }

    #[test]
    fn multi_digit_uids_are_printed_in_full() {
        if !runs_here() || !is_root() {
            skip(format_args!(
                "skipped: needs root on x86-64 Linux to switch uid"
            ));
            return;
        }
        let (_dir, path) = installed(0o755);
        // The last is the widest uid there is (ten digits; u32::MAX means none): the line
        // still fits the checker's buffer and goes out in one write.
        for uid in [7, 65534, 1_000_000, u32::MAX - 1] {
            let line = format!("Effective uid: {uid}\n");
            assert_eq!(run(&path, Some(uid), false), line);
            assert_eq!(writes(&path, Some(uid)), [line.into_bytes()]);
        }
    }
}
