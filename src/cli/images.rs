//! `cri-harness images`: lists the images the suites need and the suites that name them, writes
//! them as OCI layouts or pushes them to a registry with skopeo (all from a local static
//! busybox, without downloads), and pulls the kept ones into a runtime through CRI, so CI and
//! vendors can mirror them with no internet.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Subcommand;

use super::common::{EndpointArgs, RegistryPrefixArg};
use crate::images::{self, BuiltImage, Busybox, ImageNames, TestImage, DEFAULT_BUSYBOX};
use crate::suite::{self, Step};

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
        /// Print `symbol<TAB>references<TAB>suites<TAB>purpose` instead of the bare reference:
        /// every tag of the image, and the embedded suites whose steps name it.
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
    /// Write the harness's own image (the binary, its ELF interpreter and libraries, the
    /// reference snapshots) as one OCI layout in DIR and print `REFERENCE DIGEST DIR`.
    Harness {
        /// Directory to write the layout in (created if missing).
        #[arg(long, value_name = "DIR")]
        oci: PathBuf,
        /// The cri-harness binary to put in the image [default: the running executable]
        #[arg(long, value_name = "PATH")]
        binary: Option<PathBuf>,
        /// The reference the layout's index names
        #[arg(long, value_name = "REF", default_value = images::HARNESS_REFERENCE)]
        tag: String,
        /// The snapshot tree shipped at /snapshots (`none`: no snapshots)
        #[arg(long, value_name = "DIR", default_value = "snapshots")]
        snapshots: PathBuf,
        /// The known findings shipped at /findings, for `run --known /findings` (`none`:
        /// none)
        #[arg(long, value_name = "DIR", default_value = "findings")]
        findings: PathBuf,
        /// The source revision for the `org.opencontainers.image.revision` label (left out
        /// when not given, so the digest depends on the inputs alone)
        #[arg(long, value_name = "REV")]
        revision: Option<String>,
    },
    /// Build the images in a temporary directory and push each one to
    /// HOST:PORT/<reference path>:<tag> with skopeo (TLS not verified): the references
    /// `run --registry-prefix HOST:PORT` pulls, an image the suites name under two registries
    /// at both of its paths.
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
    /// Pull every image runtimes keep between cases (the sandbox and container images) into a
    /// runtime with CRI PullImage, as the kubelet would, and print the image id the runtime
    /// answers for each. The image-manager images are left to the cases that pull them.
    Pull {
        #[command(flatten)]
        endpoints: EndpointArgs,
        /// Pull them from the mirror a run with the same --registry-prefix pulls from
        #[command(flatten)]
        images: RegistryPrefixArg,
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
            let users = suites_by_image();
            for image in images::catalogue() {
                if long {
                    let suites = users.get(image.name).map_or_else(
                        || "-".to_owned(),
                        |names| names.iter().cloned().collect::<Vec<_>>().join(","),
                    );
                    println!(
                        "{}\t{}\t{suites}\t{}",
                        image.name,
                        image.references().join(","),
                        image.purpose
                    );
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
        ImagesCommand::Harness {
            oci,
            binary,
            tag,
            snapshots,
            findings,
            revision,
        } => {
            let binary = match binary {
                Some(binary) => binary,
                None => std::env::current_exe().context("cannot find the running executable")?,
            };
            let spec = images::HarnessSpec {
                binary,
                snapshots: (snapshots != Path::new("none")).then_some(snapshots),
                findings: (findings != Path::new("none")).then_some(findings),
                reference: tag,
                revision,
            };
            let built = images::build_harness(&spec, &oci)?;
            println!(
                "{} {} {}",
                spec.reference,
                built.manifest.digest,
                built.layout.display()
            );
        }
        ImagesCommand::Push {
            registry,
            source,
            skopeo,
        } => push(&registry, &source.busybox, &skopeo).await?,
        ImagesCommand::Pull {
            endpoints,
            images: prefix,
        } => {
            let client = endpoints.connect().await?;
            let names = prefix.names();
            for image in images::catalogue().iter().filter(|image| image.kept) {
                let reference = names.map(image.reference);
                let id = client
                    .pull_image(&reference)
                    .await
                    .with_context(|| format!("cannot pull {reference}"))?;
                println!("{reference} {id}");
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
    let names = ImageNames::with_prefix(registry)
        .with_context(|| format!("--registry {registry} cannot start a reference"))?;
    let busybox = Busybox::load(busybox)?;
    let workdir = tempfile::tempdir().context("cannot create a temporary directory to build in")?;
    for built in images::build_all(&busybox, workdir.path())? {
        for (public, mirror) in mirror_references(&names, &built.image) {
            let digest = copy(skopeo, &built, &public, &mirror, workdir.path()).await?;
            println!("{public} -> {mirror}@{digest}");
        }
    }
    Ok(())
}

/// Each reference the suites may name `image` by, with the one a run with `names` pulls it by:
/// where `images push` copies it, so a mirror holds every name `run --registry-prefix` pulls.
fn mirror_references(names: &ImageNames, image: &TestImage) -> Vec<(String, String)> {
    image
        .all_references()
        .into_iter()
        .map(|public| {
            let mirror = names.map(&public);
            (public, mirror)
        })
        .collect()
}

/// The embedded suites that name each catalogue image, by symbol: an image is named by a step
/// that holds its symbol or one of its references anywhere in its fields, and by the steps
/// that use it without naming it (a container's default image, a sandbox's infra image).
fn suites_by_image() -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut users: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    for suite in suite::load_embedded().suites {
        for case in &suite.cases {
            for step in &case.steps {
                for image in images_of(step) {
                    users.entry(image).or_default().insert(suite.name.clone());
                }
            }
        }
    }
    users
}

/// The catalogue images one step uses.
fn images_of(step: &Step) -> BTreeSet<&'static str> {
    let mut found = BTreeSet::new();
    // The defaults a step's YAML leaves out, so its fields do not show them.
    match step {
        Step::RunSandbox(_) => {
            found.insert("pause");
        }
        Step::CreateContainer(create) => {
            found.insert(images::find(&images::resolve(&create.image)).map_or("", |i| i.name));
        }
        _ => {}
    }
    let mut strings = Vec::new();
    if let Ok(value) = serde_json::to_value(step) {
        collect_strings(&value, &mut strings);
    }
    for text in strings {
        if let Some(image) = lookup(&text) {
            found.insert(image.name);
        }
    }
    found.remove("");
    found
}

/// The catalogue image a string of a step names: a symbol, `symbol:tag`, or a reference by
/// tag or by repository and digest.
fn lookup(text: &str) -> Option<&'static TestImage> {
    if let Some(image) = images::find(&images::resolve(text)) {
        return Some(image);
    }
    let (repository, _) = text.split_once('@')?;
    let repository = images::Reference::parse(repository).repository;
    images::catalogue()
        .iter()
        .find(|image| image.repository_full() == repository)
}

fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => out.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                // A map keyed by image (`expect: {repo_tags: {IMAGE: ...}}`) names it by key.
                out.push(key.clone());
                collect_strings(v, out);
            }
        }
        _ => {}
    }
}

/// Copies the layout's tag of `public` to `mirror` with its digests preserved (skopeo would
/// otherwise compress the uncompressed layer on the way and change the manifest digest).
async fn copy(
    skopeo: &Path,
    built: &BuiltImage,
    public: &str,
    mirror: &str,
    workdir: &Path,
) -> anyhow::Result<String> {
    let tag = images::Reference::parse(public)
        .tag
        .unwrap_or_else(|| built.image.tag().to_owned());
    let source = format!("oci:{}:{tag}", built.layout.display());
    let destination = format!("docker://{mirror}");
    let file_name = mirror.replace(['/', ':'], "_");
    let digest_file = workdir.join(format!("{file_name}.digest"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_fills_every_path_a_registry_prefix_pulls() {
        let names = ImageNames::with_prefix("127.0.0.1:5000").unwrap();
        let pushed: BTreeSet<String> = images::catalogue()
            .iter()
            .flat_map(|image| mirror_references(&names, image))
            .map(|(_, mirror)| mirror)
            .collect();
        for (public, sent) in names.catalogue_references() {
            assert!(
                pushed.contains(&sent),
                "{public} is pulled as {sent}, never pushed"
            );
        }
        for expected in [
            "127.0.0.1:5000/cri-harness/two-registries:1",
            "127.0.0.1:5000/registry.k8s.io/cri-harness/two-registries:1",
            "127.0.0.1:5000/e2e-test-images/busybox:1.36.1-1",
            "127.0.0.1:5000/k8s-staging-cri-tools/test-image-tags:3",
            "127.0.0.1:5000/library/cri-harness-short-name:latest",
        ] {
            assert!(pushed.contains(expected), "{expected}");
        }
    }

    #[test]
    fn each_push_copies_the_layouts_tag_of_the_name_it_fills() {
        let names = ImageNames::with_prefix("127.0.0.1:5000").unwrap();
        let image = images::find("test-image-tags").unwrap();
        let tags: Vec<Option<String>> = mirror_references(&names, image)
            .iter()
            .map(|(public, mirror)| {
                let tag = images::Reference::parse(public).tag;
                assert_eq!(images::Reference::parse(mirror).tag, tag);
                tag
            })
            .collect();
        assert_eq!(tags, [Some("1".into()), Some("2".into()), Some("3".into())]);
    }
}
