//! `cri-harness images`: lists the images the suites need, writes them as OCI layouts or pushes
//! them to a registry with skopeo (all from a local static busybox, without downloads), and
//! pulls them into a runtime through CRI, so CI and vendors can mirror them with no internet.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Subcommand;

use super::common::EndpointArgs;
use crate::images::{self, BuiltImage, Busybox, DEFAULT_BUSYBOX};

/// Arguments of `cri-harness images`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: ImagesCommand,
}

#[derive(Debug, Subcommand)]
enum ImagesCommand {
    /// Print the reference of every image the suites need, one per line.
    List {
        /// Print `symbol<TAB>reference<TAB>purpose` instead of the bare reference.
        #[arg(long)]
        long: bool,
    },
    /// Write one OCI image layout per image under DIR/<symbol> and print their digests.
    Build {
        /// Directory to write the layouts in (created if missing).
        #[arg(long, value_name = "DIR")]
        oci: PathBuf,
        #[command(flatten)]
        source: BusyboxArg,
    },
    /// Build the images in a temporary directory and push each one to
    /// HOST:PORT/<reference path>:<tag> with skopeo (TLS not verified).
    Push {
        /// The registry to push to, as HOST:PORT (no scheme).
        #[arg(long, value_name = "HOST:PORT")]
        registry: String,
        #[command(flatten)]
        source: BusyboxArg,
        /// The skopeo program to push with.
        #[arg(long, value_name = "PATH", default_value = "skopeo")]
        skopeo: PathBuf,
    },
    /// Pull every image into a runtime with CRI PullImage, as the kubelet would, and print
    /// the image id the runtime answers for each.
    Pull {
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
}

#[derive(Debug, clap::Args)]
struct BusyboxArg {
    /// The static busybox binary the images are built from (Debian: busybox-static).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_BUSYBOX)]
    busybox: PathBuf,
}

/// Runs `cri-harness images`.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        ImagesCommand::List { long } => {
            for image in images::catalogue() {
                if long {
                    println!("{}\t{}\t{}", image.name, image.reference, image.purpose);
                } else {
                    println!("{}", image.reference);
                }
            }
        }
        ImagesCommand::Build { oci, source } => {
            let busybox = Busybox::load(&source.busybox)?;
            for built in images::build_all(&busybox, &oci)? {
                println!(
                    "{} {} {}",
                    built.image.reference,
                    built.manifest.digest,
                    built.layout.display()
                );
            }
        }
        ImagesCommand::Push {
            registry,
            source,
            skopeo,
        } => push(&registry, &source.busybox, &skopeo).await?,
        ImagesCommand::Pull { endpoints } => {
            let client = endpoints.connect().await?;
            for image in images::catalogue() {
                let id = client
                    .pull_image(image.reference)
                    .await
                    .with_context(|| format!("cannot pull {}", image.reference))?;
                println!("{} {id}", image.reference);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Builds every image into a temporary directory and copies each one to `registry`, printing
/// `reference -> mirror@digest` as the registry stored it.
async fn push(registry: &str, busybox: &Path, skopeo: &Path) -> anyhow::Result<()> {
    if registry.contains("://") || registry.contains('/') || registry.is_empty() {
        bail!("--registry takes HOST:PORT without a scheme or path, not `{registry}`");
    }
    // Checked before building so a missing tool is the first thing the user hears about.
    match tokio::process::Command::new(skopeo)
        .arg("--version")
        .output()
        .await
    {
        Ok(output) if output.status.success() => {}
        Ok(output) => bail!(
            "`{} --version` failed ({}): {}",
            skopeo.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => bail!(
            "`images push` copies with skopeo, and `{}` is not installed \
             (Debian/Ubuntu: apt-get install skopeo; or pass --skopeo PATH)",
            skopeo.display()
        ),
        Err(err) => return Err(err).with_context(|| format!("cannot run `{}`", skopeo.display())),
    }
    let busybox = Busybox::load(busybox)?;
    let workdir = tempfile::tempdir().context("cannot create a temporary directory to build in")?;
    for built in images::build_all(&busybox, workdir.path())? {
        let digest = copy(skopeo, &built, registry, workdir.path()).await?;
        println!(
            "{} -> {}@{}",
            built.image.reference,
            built.image.mirror_reference(registry),
            digest
        );
    }
    Ok(())
}

/// Copies one layout to the registry with its digests preserved (skopeo would otherwise
/// compress the uncompressed layer on the way and change the manifest digest).
async fn copy(
    skopeo: &Path,
    built: &BuiltImage,
    registry: &str,
    workdir: &Path,
) -> anyhow::Result<String> {
    let source = format!("oci:{}:{}", built.layout.display(), built.image.tag());
    let destination = format!("docker://{}", built.image.mirror_reference(registry));
    let digest_file = workdir.join(format!("{}.digest", built.image.name));
    let output = tokio::process::Command::new(skopeo)
        .args([
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            "--preserve-digests",
        ])
        .arg("--digestfile")
        .arg(&digest_file)
        .arg(&source)
        .arg(&destination)
        .output()
        .await
        .with_context(|| format!("cannot run `{}`", skopeo.display()))?;
    if !output.status.success() {
        bail!(
            "skopeo copy of {source} to {destination} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let digest = std::fs::read_to_string(&digest_file)
        .with_context(|| format!("skopeo wrote no digest file for {destination}"))?;
    Ok(digest.trim().to_owned())
}
