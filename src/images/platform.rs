//! Reads the platform of an image from its busybox binary's ELF header, so the config names the
//! architecture the binary really runs on (a vendor may mirror images for another machine), and
//! refuses a dynamically linked busybox, which could not start in an image without a C library.

use std::path::Path;

use super::ImageError;

/// ELF program header type of the interpreter request a dynamically linked binary carries.
const PT_INTERP: u32 = 3;

/// The OCI platform an image's config and index entry name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// OCI `os`: always `linux` (ELF binaries for other systems are not told apart here).
    pub os: &'static str,
    /// OCI `architecture` in Go's naming (`amd64`, `arm64`, ...).
    pub architecture: &'static str,
}

/// Reads the platform of the static ELF executable `bytes`, read from `path`.
pub fn inspect(path: &Path, bytes: &[u8]) -> Result<Platform, ImageError> {
    let (platform, dynamic) = inspect_any(path, bytes)?;
    if dynamic {
        return Err(ImageError::DynamicBinary {
            path: path.to_owned(),
        });
    }
    Ok(platform)
}

/// Reads the platform of the ELF executable `bytes`, read from `path`, static or not, and
/// whether it asks for an interpreter (is dynamically linked).
pub fn inspect_any(path: &Path, bytes: &[u8]) -> Result<(Platform, bool), ImageError> {
    let elf = Elf::parse(bytes).ok_or_else(|| ImageError::NotElf {
        path: path.to_owned(),
    })?;
    let architecture = match (elf.machine, elf.wide, elf.little_endian) {
        (0x03, false, true) => "386",
        (0x3e, true, true) => "amd64",
        (0x28, false, true) => "arm",
        (0xb7, true, true) => "arm64",
        (0x15, true, true) => "ppc64le",
        (0x15, true, false) => "ppc64",
        (0x16, true, false) => "s390x",
        (0xf3, true, true) => "riscv64",
        (0x102, true, true) => "loong64",
        (machine, ..) => {
            return Err(ImageError::UnknownArchitecture {
                path: path.to_owned(),
                machine,
            })
        }
    };
    let dynamic = elf.program_types().any(|kind| kind == Some(PT_INTERP));
    Ok((
        Platform {
            os: "linux",
            architecture,
        },
        dynamic,
    ))
}

/// The few ELF header fields this module needs.
struct Elf<'a> {
    bytes: &'a [u8],
    wide: bool,
    little_endian: bool,
    machine: u16,
    phoff: usize,
    phentsize: usize,
    phnum: usize,
}

impl<'a> Elf<'a> {
    /// Parses the identification and header; `None` if this is not an ELF file or is truncated.
    fn parse(bytes: &'a [u8]) -> Option<Self> {
        if bytes.get(..4)? != b"\x7fELF" {
            return None;
        }
        let wide = match bytes.get(4)? {
            1 => false,
            2 => true,
            _ => return None,
        };
        let little_endian = match bytes.get(5)? {
            1 => true,
            2 => false,
            _ => return None,
        };
        let mut elf = Elf {
            bytes,
            wide,
            little_endian,
            machine: 0,
            phoff: 0,
            phentsize: 0,
            phnum: 0,
        };
        elf.machine = elf.u16_at(18)?;
        // Field offsets differ between the 32- and 64-bit header layouts.
        if wide {
            elf.phoff = usize::try_from(elf.u64_at(32)?).ok()?;
            elf.phentsize = usize::from(elf.u16_at(54)?);
            elf.phnum = usize::from(elf.u16_at(56)?);
        } else {
            elf.phoff = usize::try_from(elf.u32_at(28)?).ok()?;
            elf.phentsize = usize::from(elf.u16_at(42)?);
            elf.phnum = usize::from(elf.u16_at(44)?);
        }
        Some(elf)
    }

    /// The type of each program header (`None` for one that lies outside the file).
    fn program_types(&self) -> impl Iterator<Item = Option<u32>> + '_ {
        (0..self.phnum).map(move |index| {
            let offset = self.phoff.checked_add(index.checked_mul(self.phentsize)?)?;
            self.u32_at(offset)
        })
    }

    fn take<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        self.bytes
            .get(offset..offset.checked_add(N)?)?
            .try_into()
            .ok()
    }

    fn u16_at(&self, offset: usize) -> Option<u16> {
        let raw = self.take::<2>(offset)?;
        Some(if self.little_endian {
            u16::from_le_bytes(raw)
        } else {
            u16::from_be_bytes(raw)
        })
    }

    fn u32_at(&self, offset: usize) -> Option<u32> {
        let raw = self.take::<4>(offset)?;
        Some(if self.little_endian {
            u32::from_le_bytes(raw)
        } else {
            u32::from_be_bytes(raw)
        })
    }

    fn u64_at(&self, offset: usize) -> Option<u64> {
        let raw = self.take::<8>(offset)?;
        Some(if self.little_endian {
            u64::from_le_bytes(raw)
        } else {
            u64::from_be_bytes(raw)
        })
    }
}

/// Test input: a minimal 64-bit little-endian ELF header with the given machine and program
/// header types (56-byte entries right after the 64-byte header).
#[cfg(test)]
pub(crate) fn elf64(machine: u16, program_types: &[u32]) -> Vec<u8> {
    let mut bytes = vec![0u8; 64];
    bytes[..4].copy_from_slice(b"\x7fELF");
    bytes[4] = 2;
    bytes[5] = 1;
    bytes[18..20].copy_from_slice(&machine.to_le_bytes());
    bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
    bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
    bytes[56..58].copy_from_slice(&(program_types.len() as u16).to_le_bytes());
    for kind in program_types {
        let mut entry = vec![0u8; 56];
        entry[..4].copy_from_slice(&kind.to_le_bytes());
        bytes.extend_from_slice(&entry);
    }
    bytes
}

#[cfg(test)]
mod tests {
    /// Writes a skip line past the test harness's capture of `eprintln!`, so it is seen.
    fn skip(line: std::fmt::Arguments<'_>) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::x86_64(0x3e, "amd64")]
    #[case::aarch64(0xb7, "arm64")]
    #[case::ppc64le(0x15, "ppc64le")]
    #[case::riscv64(0xf3, "riscv64")]
    fn static_binaries_map_to_their_oci_architecture(#[case] machine: u16, #[case] arch: &str) {
        let platform = inspect(Path::new("bb"), &elf64(machine, &[1, 1])).unwrap();
        assert_eq!(platform.architecture, arch);
        assert_eq!(platform.os, "linux");
    }

    #[rstest]
    #[case::not_elf(b"#!/bin/sh\necho hi\n".to_vec())]
    #[case::empty(Vec::new())]
    #[case::truncated_header(elf64(0x3e, &[])[..20].to_vec())]
    fn non_elf_input_is_refused(#[case] bytes: Vec<u8>) {
        assert!(matches!(
            inspect(Path::new("bb"), &bytes),
            Err(ImageError::NotElf { .. })
        ));
    }

    #[test]
    fn dynamically_linked_binaries_are_refused() {
        let err = inspect(Path::new("bb"), &elf64(0x3e, &[6, PT_INTERP, 1])).unwrap_err();
        assert!(matches!(err, ImageError::DynamicBinary { .. }), "{err}");
    }

    #[test]
    fn unknown_machines_are_refused_with_their_number() {
        let err = inspect(Path::new("bb"), &elf64(0x1234, &[1])).unwrap_err();
        assert!(err.to_string().contains("0x1234"), "{err}");
    }

    #[test]
    fn this_machines_busybox_matches_the_build_target_when_installed() {
        let path = Path::new(super::super::DEFAULT_BUSYBOX);
        let Ok(bytes) = std::fs::read(path) else {
            skip(format_args!("skipped: {} is absent", path.display()));
            return;
        };
        let expected = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        };
        match inspect(path, &bytes) {
            Ok(platform) => assert_eq!(platform.architecture, expected),
            Err(ImageError::DynamicBinary { .. }) => {
                skip(format_args!(
                    "skipped: {} is not a static busybox",
                    path.display()
                ));
            }
            Err(err) => panic!("{err}"),
        }
    }
}
