//! `cri-harness mock`: serves the built-in mock CRI runtime on a unix socket until Ctrl-C or
//! SIGTERM, then removes the socket. Any CRI client (crictl, critest, the harness) can use it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::mock::{Latency, MockProfile, MockRuntime, ProfileName, RegistryAllowList};

/// Arguments of `cri-harness mock`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Unix socket to serve on (created with mode 0600; a `unix://` prefix is accepted).
    #[arg(long, value_name = "PATH")]
    pub listen: PathBuf,
    /// Pull only from this registry host (repeatable), as a runtime that reaches nothing but
    /// its mirror: a pull of any other registry's name fails NotFound [default: every
    /// registry]
    #[arg(long = "allow-registry", value_name = "HOST[:PORT]")]
    pub allow_registries: Vec<String>,
    /// How the mock answers where the CRI contract leaves room: `containerd` as containerd
    /// does, `other-runtime` otherwise wherever the contract allows, refusing requests without
    /// what the kubelet always sends
    #[arg(long, value_name = "PROFILE", value_enum, default_value_t = ProfileName::Containerd)]
    pub mock_profile: ProfileName,
    /// Milliseconds a pull of an image the mock lacks takes, as a registry's would (critest's
    /// pull-timeout spec needs one past its deadline)
    #[arg(long, value_name = "MS", default_value_t = Latency::REGISTRY.pull_ms)]
    pub pull_latency_ms: u64,
    /// Milliseconds a RemoveImage takes; removals of one image meanwhile overlap it
    #[arg(long, value_name = "MS", default_value_t = Latency::REGISTRY.remove_ms)]
    pub remove_latency_ms: u64,
}

/// The socket path `--listen` names, without a `unix://` prefix.
fn socket_path(listen: PathBuf) -> PathBuf {
    match listen.to_str().and_then(|s| s.strip_prefix("unix://")) {
        Some(path) => PathBuf::from(path),
        None => listen,
    }
}

/// Runs `cri-harness mock` until `stop` (SIGINT or SIGTERM) is cancelled.
pub async fn run(args: Args, stop: CancellationToken) -> anyhow::Result<ExitCode> {
    let path = socket_path(args.listen);
    let server = MockRuntime::with_profile(MockProfile::named(args.mock_profile))
        .with_registries(RegistryAllowList::only(args.allow_registries))
        .with_latency(Latency {
            pull_ms: args.pull_latency_ms,
            remove_ms: args.remove_latency_ms,
        })
        .serve_unix(&path)
        .await
        .context("cannot start the mock CRI runtime")?;
    if args.mock_profile != ProfileName::default() {
        println!("mock profile: {}", args.mock_profile);
    }
    println!("mock CRI runtime listening on unix://{}", path.display());
    stop.cancelled().await;
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_accepts_a_path_or_a_unix_url() {
        assert_eq!(
            socket_path("/tmp/m.sock".into()),
            PathBuf::from("/tmp/m.sock")
        );
        assert_eq!(
            socket_path("unix:///tmp/m.sock".into()),
            PathBuf::from("/tmp/m.sock")
        );
    }
}
