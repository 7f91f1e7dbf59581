//! Flags shared by the subcommands that talk to a runtime: the endpoints (crictl's flags,
//! variables and config file, read by clap), the deadlines, and the one way `run` and `prop`
//! choose between the built-in mock and an endpoint.

use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, FromArgMatches};

use crate::cri::{
    self, read_crictl_config, resolve_endpoints, ConnectOptions, CriClient, Endpoint,
    EndpointError, EndpointInputs, CRICTL_CONFIG_ENV, DEFAULT_CRICTL_CONFIG, IMAGE_ENDPOINT_ENV,
    RUNTIME_ENDPOINT_ENV,
};
use crate::runner::cleanup;

/// Where the runtime is and how long to wait for it, as crictl spells it. clap reads the
/// flags and their variables; this type adds where each endpoint came from (see
/// [`EndpointArgs`]), so an error can name the flag or the variable.
#[derive(Debug, Clone, clap::Args)]
pub struct EndpointFlags {
    /// CRI runtime endpoint: unix:///path, a socket path or tcp://HOST:PORT [default: from
    /// runtime-endpoint in crictl's config]
    #[arg(short = 'r', long, value_name = "ENDPOINT", env = RUNTIME_ENDPOINT_ENV)]
    pub runtime_endpoint: Option<String>,
    /// CRI image endpoint [default: image-endpoint in crictl's config, else the runtime
    /// endpoint]
    #[arg(short = 'i', long, value_name = "ENDPOINT", env = IMAGE_ENDPOINT_ENV)]
    pub image_endpoint: Option<String>,
    /// Deadline for each CRI call (e.g. 500ms, 10s, 2m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Deadline for connecting to an endpoint, the HTTP/2 handshake included
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// crictl config file to read endpoints from
    #[arg(long, value_name = "PATH", env = CRICTL_CONFIG_ENV, default_value = DEFAULT_CRICTL_CONFIG, hide = true)]
    pub config: PathBuf,
}

/// [`EndpointFlags`] and whether each endpoint was typed on the command line or came from
/// its environment variable, which clap knows but its derive does not keep.
#[derive(Debug, Clone)]
pub struct EndpointArgs {
    /// The flags as parsed.
    pub flags: EndpointFlags,
    runtime_from_env: bool,
    image_from_env: bool,
}

impl FromArgMatches for EndpointArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let from_env = |id| matches.value_source(id) == Some(ValueSource::EnvVariable);
        Ok(Self {
            flags: EndpointFlags::from_arg_matches(matches)?,
            runtime_from_env: from_env("runtime_endpoint"),
            image_from_env: from_env("image_endpoint"),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for EndpointArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        EndpointFlags::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        EndpointFlags::augment_args_for_update(cmd)
    }
}

impl EndpointArgs {
    /// The runtime and image endpoints, from the flags, their variables and crictl's config
    /// file, in crictl's order.
    pub fn resolve(&self) -> Result<(Endpoint, Endpoint), EndpointError> {
        let flags = &self.flags;
        let split = |value: &Option<String>, from_env: bool| {
            if from_env {
                (None, value.clone())
            } else {
                (value.clone(), None)
            }
        };
        let (runtime_flag, runtime_env) = split(&flags.runtime_endpoint, self.runtime_from_env);
        let (image_flag, image_env) = split(&flags.image_endpoint, self.image_from_env);
        // An empty CRI_CONFIG_FILE means crictl's default, as it does for crictl.
        let config_path = if flags.config.as_os_str().is_empty() {
            PathBuf::from(DEFAULT_CRICTL_CONFIG)
        } else {
            flags.config.clone()
        };
        let inputs = EndpointInputs {
            runtime_flag,
            image_flag,
            runtime_env,
            image_env,
            config_path,
            cwd: std::env::current_dir().ok(),
        };
        let resolved = resolve_endpoints(&inputs, read_crictl_config)?;
        tracing::debug!(
            runtime = %resolved.runtime,
            runtime_source = %resolved.runtime_source,
            image = %resolved.image,
            image_source = %resolved.image_source,
            "resolved CRI endpoints"
        );
        Ok((resolved.runtime, resolved.image))
    }

    /// The endpoint flag typed on the command line, if any (a variable does not count).
    fn typed_flag(&self) -> Option<&'static str> {
        let typed = |value: &Option<String>, from_env: bool| value.is_some() && !from_env;
        if typed(&self.flags.runtime_endpoint, self.runtime_from_env) {
            Some("-r/--runtime-endpoint")
        } else if typed(&self.flags.image_endpoint, self.image_from_env) {
            Some("-i/--image-endpoint")
        } else {
            None
        }
    }

    /// The deadlines given on the command line.
    pub fn options(&self) -> ConnectOptions {
        ConnectOptions {
            connect_timeout: self.flags.connect_timeout,
            call_timeout: self.flags.timeout,
        }
    }

    /// Resolves the endpoints and connects, checking they serve CRI `runtime.v1`.
    pub async fn connect(&self) -> anyhow::Result<CriClient> {
        let (runtime, image) = self.resolve()?;
        // The connect error already names the socket or address; no context needed.
        Ok(cri::connect(&runtime, &image, &self.options()).await?)
    }
}

/// The target of `run` and `prop`: `--mock`, or an endpoint resolved like every other
/// subcommand's. One code path, so the two cannot drift apart again.
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// Use the built-in mock runtime instead of an endpoint (an endpoint from
    /// CONTAINER_RUNTIME_ENDPOINT or crictl's config is then not used)
    #[arg(long)]
    pub mock: bool,
    /// The endpoints, when not the mock.
    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

/// What `--mock` and the endpoint flags chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// The built-in mock.
    Mock,
    /// A runtime endpoint.
    Endpoint {
        /// RuntimeService endpoint.
        runtime: Endpoint,
        /// ImageService endpoint.
        image: Endpoint,
    },
}

impl TargetArgs {
    /// `--mock`, else the resolved endpoints. `--mock` with a typed `-r` or `-i` is an error;
    /// with only a variable set it wins, since the variable is ambient and the flag is not.
    pub fn choose(&self) -> anyhow::Result<Chosen> {
        if self.mock {
            if let Some(flag) = self.endpoint.typed_flag() {
                anyhow::bail!(
                    "--mock and {flag} exclude each other: pick the built-in mock or an endpoint"
                );
            }
            return Ok(Chosen::Mock);
        }
        match self.endpoint.resolve() {
            Ok((runtime, image)) => Ok(Chosen::Endpoint { runtime, image }),
            Err(err @ EndpointError::Missing { .. }) => {
                anyhow::bail!("{err}; or pass --mock for the built-in mock runtime")
            }
            Err(err) => Err(err.into()),
        }
    }
}

/// Where the images a run pulls come from: `run`, `fuzz` and `bench` take them all from one
/// mirror with critest's `-registry-prefix`, for a runtime that cannot remap registry names.
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryPrefixArg {
    /// Pull every image a case names as PREFIX/PATH, PATH being the reference's without its
    /// registry host (`registry.k8s.io/pause:3.9` is PREFIX/pause:3.9), as critest's
    /// -registry-prefix; `images push --registry` fills such a mirror
    #[arg(long, value_name = "HOST[:PORT][/PATH]", value_parser = registry_prefix)]
    pub registry_prefix: Option<crate::images::ImageNames>,
}

impl RegistryPrefixArg {
    /// The image names the flag gives (the public references without it).
    pub fn names(&self) -> crate::images::ImageNames {
        self.registry_prefix.clone().unwrap_or_default()
    }
}

/// `--registry-prefix`, checked as a reference's start.
fn registry_prefix(text: &str) -> Result<crate::images::ImageNames, crate::images::PrefixError> {
    crate::images::ImageNames::with_prefix(text)
}

/// Where runs keep their leases; `run`, `prop` and `clean` must agree on it.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaseDirArg {
    /// Directory of the run leases [default: /run/cri-harness/leases as root, else one under
    /// the temporary directory per user]
    #[arg(long, value_name = "DIR", env = "CRI_HARNESS_LEASE_DIR", hide = true)]
    lease_dir: Option<PathBuf>,
}

impl LeaseDirArg {
    /// The directory given, or the default one.
    pub fn dir(&self) -> PathBuf {
        self.lease_dir
            .clone()
            .unwrap_or_else(cleanup::default_lease_dir)
    }

    /// On an endpoint, the run's lease and the `clean` command that removes what an
    /// interrupted run leaves; nothing on the mock, which goes with the run.
    pub fn lease_for(
        &self,
        chosen: &Chosen,
        run_id: &str,
    ) -> anyhow::Result<(Option<cleanup::Lease>, Option<String>)> {
        Ok(match chosen {
            Chosen::Mock => (None, None),
            Chosen::Endpoint { runtime, image } => (
                Some(cleanup::Lease::acquire(&self.dir(), run_id)?),
                Some(super::cleanup_command(runtime, image, run_id)),
            ),
        })
    }
}

/// The run id asked for (`--run-id`), checked, or a new one.
pub fn run_id(asked: Option<String>) -> anyhow::Result<String> {
    match asked {
        Some(id) if crate::runner::valid_run_id(&id) => Ok(id),
        Some(id) => {
            anyhow::bail!("run id {id:?} must be 1-20 lower-case letters, digits and inner dashes")
        }
        None => Ok(crate::runner::new_run_id()),
    }
}

/// Parses a positive duration in humantime's syntax: `250ms`, `5s`, `2m`, `1h`, `1m30s`,
/// `1h 30m`. Zero is refused: as a deadline it would fail every call at once.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(text.trim()).map_err(|err| {
        format!("invalid duration {text:?} ({err}): expected e.g. 250ms, 5s, 2m or 1m30s")
    })?;
    if duration.is_zero() {
        return Err(format!(
            "zero duration {text:?}: a deadline of zero fails at once; give a positive one, e.g. 500ms or 10s"
        ));
    }
    Ok(duration)
}

/// A mock [`Defect`](crate::mock::Defect) by its name (`StopUnknownContainerNotFound`), for
/// the hidden options that test the harness itself on a mutated mock.
pub fn defect_name(name: &str) -> Result<crate::mock::Defect, String> {
    crate::mock::Defect::ALL
        .iter()
        .copied()
        .find(|d| format!("{d:?}") == name)
        .ok_or_else(|| {
            let names: Vec<String> = crate::mock::Defect::ALL
                .iter()
                .map(|d| format!("{d:?}"))
                .collect();
            format!("unknown defect; valid: {}", names.join(", "))
        })
}

/// A mock [`Freedom`](crate::mock::Freedom) by its id in the contract (`stop-signal-first`),
/// for the hidden option that takes freedoms one at a time.
pub fn freedom_name(name: &str) -> Result<crate::mock::Freedom, String> {
    name.parse().map_err(|_| {
        let names: Vec<String> = <crate::mock::Freedom as strum::VariantArray>::VARIANTS
            .iter()
            .map(ToString::to_string)
            .collect();
        format!("unknown freedom; valid: {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use rstest::rstest;

    #[rstest]
    #[case::milliseconds("250ms", Duration::from_millis(250))]
    #[case::seconds("5s", Duration::from_secs(5))]
    #[case::minutes("2m", Duration::from_secs(120))]
    #[case::hours("1h", Duration::from_secs(3600))]
    #[case::compound("1m30s", Duration::from_secs(90))]
    #[case::spaced("1m 30s", Duration::from_secs(90))]
    #[case::padded(" 5s ", Duration::from_secs(5))]
    fn parses_durations(#[case] text: &str, #[case] expected: Duration) {
        assert_eq!(parse_duration(text), Ok(expected));
    }

    #[rstest]
    #[case::empty("")]
    #[case::unit_only("s")]
    #[case::unknown_unit("5x")]
    #[case::negative("-5s")]
    #[case::words("soon")]
    #[case::trailing_number("1m30")]
    fn rejects_other_durations_naming_the_text(#[case] text: &str) {
        let message = parse_duration(text).unwrap_err();
        assert!(message.contains(&format!("{text:?}")), "{message}");
    }

    #[rstest]
    #[case::seconds("0s")]
    #[case::milliseconds("0ms")]
    #[case::compound("0m 0s")]
    fn refuses_zero_durations_saying_why(#[case] text: &str) {
        let message = parse_duration(text).unwrap_err();
        assert!(message.starts_with("zero duration"), "{message}");
        assert!(message.contains(&format!("{text:?}")), "{message}");
    }

    #[derive(Debug, Parser)]
    struct Harness {
        #[command(flatten)]
        target: TargetArgs,
    }

    /// Parses `args`; the test process's own environment plays no part as long as it sets
    /// none of the endpoint variables, which `cargo test` does not.
    fn parse(args: &[&str]) -> TargetArgs {
        Harness::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .unwrap()
            .target
    }

    #[test]
    fn flags_default_to_crictl_deadlines() {
        let args = parse(&[]).endpoint;
        assert_eq!(args.options(), ConnectOptions::default());
    }

    #[test]
    fn flags_take_crictl_spellings() {
        let args = parse(&[
            "-r",
            "/run/r.sock",
            "-i",
            "/run/i.sock",
            "--timeout",
            "2s",
            "--connect-timeout",
            "250ms",
            "--config",
            "/tmp/crictl.yaml",
        ])
        .endpoint;
        assert_eq!(args.flags.runtime_endpoint.as_deref(), Some("/run/r.sock"));
        assert_eq!(args.flags.image_endpoint.as_deref(), Some("/run/i.sock"));
        assert_eq!(
            args.options(),
            ConnectOptions {
                connect_timeout: Duration::from_millis(250),
                call_timeout: Duration::from_secs(2),
            }
        );
        assert_eq!(args.flags.config, PathBuf::from("/tmp/crictl.yaml"));
        assert_eq!(args.typed_flag(), Some("-r/--runtime-endpoint"));
    }

    #[test]
    fn resolve_prefers_the_flags() {
        let args = parse(&["-r", "unix:///run/r.sock", "-i", "/run/i.sock"]).endpoint;
        let (runtime, image) = args.resolve().unwrap();
        assert_eq!(runtime.to_string(), "unix:///run/r.sock");
        assert_eq!(image.to_string(), "unix:///run/i.sock");
    }

    #[test]
    fn mock_alone_chooses_the_mock() {
        assert_eq!(parse(&["--mock"]).choose().unwrap(), Chosen::Mock);
    }

    #[rstest]
    #[case::runtime(&["--mock", "-r", "/run/r.sock"], "-r/--runtime-endpoint")]
    #[case::image(&["--mock", "-i", "/run/i.sock"], "-i/--image-endpoint")]
    fn mock_and_a_typed_endpoint_exclude_each_other(#[case] args: &[&str], #[case] flag: &str) {
        let message = parse(args).choose().unwrap_err().to_string();
        assert!(message.contains("--mock and"), "{message}");
        assert!(message.contains(flag), "{message}");
    }
    // Without any endpoint the error names every way to give one: tests/cli_endpoints.rs
    // checks it on the binary, whose environment a test controls (this process's is CI's).
}
