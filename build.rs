//! Compiles the CRI schema and the mock's control schema with a vendored protoc, so a fresh
//! machine needs nothing but cargo, and lists the suite files and reference snapshots to embed,
//! so a suite is embedded by being a file under `suites/` and a reference by being one under
//! `snapshots/`.

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    // Said outright: once any rerun-if-changed is printed, cargo watches only what is named.
    println!("cargo:rerun-if-changed=proto");
    println!("cargo:rerun-if-changed=build.rs");
    // Tests that need a runtime or a tool run under `CI=true` (and fail there when it is
    // missing); elsewhere they are ignored with their reason (tests/support, `require_*`).
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo::rustc-check-cfg=cfg(crih_ci)");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        println!("cargo::rustc-cfg=crih_ci");
    }
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    // Ordered maps keep labels and annotations in a stable order, so snapshots are stable.
    config.btree_map(["."]);
    tonic_prost_build::configure().compile_with_config(
        config,
        &[
            "proto/runtime/v1/api.proto",
            "proto/criharness/mock/v1/control.proto",
        ],
        &["proto"],
    )?;
    embed_suites()?;
    step_registry()?;
    embed_snapshots()
}

/// Writes `$OUT_DIR/step_registry.rs`: the `registry!` invocation for the `pub mod` lines
/// between the markers of `src/suite/step/mod.rs`, each module with its type, the module's name
/// in CamelCase. The modules stay declared in the source, where rustfmt sees them.
fn step_registry() -> Result<(), Box<dyn Error>> {
    const FILE: &str = "src/suite/step/mod.rs";
    println!("cargo:rerun-if-changed={FILE}");
    let source = std::fs::read_to_string(FILE)?;
    let (_, rest) = source
        .split_once("// step registry: begin")
        .ok_or("src/suite/step/mod.rs has no `// step registry: begin` marker")?;
    let (block, _) = rest
        .split_once("// step registry: end")
        .ok_or("src/suite/step/mod.rs has no `// step registry: end` marker")?;
    let mut out = String::from("registry! {\n");
    for line in block.lines().map(str::trim) {
        let Some(module) = line
            .strip_prefix("pub mod ")
            .and_then(|l| l.strip_suffix(';'))
        else {
            if !(line.is_empty() || line.starts_with("//")) {
                return Err(format!("{FILE}: `{line}` between the registry markers").into());
            }
            continue;
        };
        let ty: String = module
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                chars
                    .next()
                    .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            })
            .collect();
        writeln!(out, "    {module}::{ty},")?;
    }
    out.push_str("}\n");
    let path = PathBuf::from(std::env::var("OUT_DIR")?).join("step_registry.rs");
    std::fs::write(path, out)?;
    Ok(())
}

/// Writes `$OUT_DIR/embedded_snapshots.rs`: `(path, include_str!(file))` for every
/// `snapshots/*.snap`, the reference result of each embedded case, by name.
fn embed_snapshots() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed=snapshots");
    embed("snapshots", &[".snap"], "embedded_snapshots.rs")
}

/// Writes `$OUT_DIR/embedded_suites.rs`: a slice of `(path, include_str!(file))` for every
/// `suites/*.yaml` (and `.yml`), sorted by name so the binary is the same on every machine; and
/// `$OUT_DIR/embedded_manifests.rs` alike for `suites/manifests/`, the Pod manifests the suites'
/// `sync_pod` steps name by `file:`.
fn embed_suites() -> Result<(), Box<dyn Error>> {
    // A directory here is scanned as a whole: adding, removing or editing a file reruns this.
    println!("cargo:rerun-if-changed=suites");
    embed("suites", YAML, "embedded_suites.rs")?;
    embed("suites/manifests", YAML, "embedded_manifests.rs")
}

const YAML: &[&str] = &[".yaml", ".yml"];

/// Writes `$OUT_DIR/<out>`: `(path, include_str!(file))` for every file of `dir` (relative to
/// the crate root) whose name ends with one of `endings`, by name.
fn embed(dir: &str, endings: &[&str], out: &str) -> Result<(), Box<dyn Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join(dir);
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&root)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        // A link counts as the file it names (the kubectl fixture lives in tests/fixtures).
        if root.join(&name).is_file() && endings.iter().any(|end| name.ends_with(end)) {
            names.push(name);
        }
    }
    names.sort();
    let mut text = String::from("&[\n");
    for name in names {
        let file = root.join(&name).display().to_string();
        writeln!(
            text,
            "    ({:?}, include_str!({file:?})),",
            format!("{dir}/{name}")
        )?;
    }
    text.push_str("]\n");
    std::fs::write(PathBuf::from(std::env::var("OUT_DIR")?).join(out), text)?;
    Ok(())
}
