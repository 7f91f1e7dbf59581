//! Flags shared by the subcommands that talk to a runtime: the endpoints (crictl's flags,
//! variables and config file) and the deadlines, plus the duration syntax they use.

use std::path::PathBuf;
use std::time::Duration;

use crate::cri::{
    self, crictl_config_path, read_crictl_config, resolve_endpoints, ConnectOptions, CriClient,
    Endpoint, EndpointInputs, CRICTL_CONFIG_ENV, IMAGE_ENDPOINT_ENV, RUNTIME_ENDPOINT_ENV,
};

/// Where the runtime is and how long to wait for it, as crictl spells it.
#[derive(Debug, Clone, clap::Args)]
pub struct EndpointArgs {
    /// CRI runtime endpoint: unix:///path, a socket path or tcp://HOST:PORT [default: from
    /// CONTAINER_RUNTIME_ENDPOINT, else runtime-endpoint in crictl's config]
    #[arg(short = 'r', long, value_name = "ENDPOINT")]
    pub runtime_endpoint: Option<String>,
    /// CRI image endpoint [default: from IMAGE_SERVICE_ENDPOINT, else image-endpoint in
    /// crictl's config, else the runtime endpoint]
    #[arg(short = 'i', long, value_name = "ENDPOINT")]
    pub image_endpoint: Option<String>,
    /// Deadline for each CRI call (e.g. 500ms, 10s, 2m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Deadline for connecting to an endpoint
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// crictl config file to read endpoints from [default: CRI_CONFIG_FILE, else
    /// /etc/crictl.yaml]
    #[arg(long, value_name = "PATH", hide = true)]
    pub config: Option<PathBuf>,
}

impl EndpointArgs {
    /// The runtime and image endpoints, from the flags, the process environment and crictl's
    /// config file, in crictl's order.
    pub fn resolve(&self) -> anyhow::Result<(Endpoint, Endpoint)> {
        let env = |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        let inputs = EndpointInputs {
            runtime_flag: self.runtime_endpoint.clone(),
            image_flag: self.image_endpoint.clone(),
            runtime_env: env(RUNTIME_ENDPOINT_ENV),
            image_env: env(IMAGE_ENDPOINT_ENV),
            config_path: crictl_config_path(
                self.config.as_deref(),
                env(CRICTL_CONFIG_ENV).as_deref(),
            ),
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

    /// The deadlines given on the command line.
    pub fn options(&self) -> ConnectOptions {
        ConnectOptions {
            connect_timeout: self.connect_timeout,
            call_timeout: self.timeout,
        }
    }

    /// Resolves the endpoints and connects, checking they serve CRI `runtime.v1`.
    pub async fn connect(&self) -> anyhow::Result<CriClient> {
        let (runtime, image) = self.resolve()?;
        // The connect error already names the socket or address; no context needed.
        Ok(cri::connect(&runtime, &image, &self.options()).await?)
    }
}

/// Parses a duration such as `250ms`, `5s`, `2m`, `1h`, `1m30s`, `1.5s`, or a bare number of
/// seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = || {
        format!("invalid duration {text:?}: expected e.g. 250ms, 5s, 2m, 1h or a number of seconds")
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(invalid());
    }
    if let Ok(seconds) = trimmed.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).map_err(|_| invalid());
    }
    let mut total = Duration::ZERO;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let (number, after) = rest.split_at(number_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let seconds_per_unit = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let part = Duration::try_from_secs_f64(value * seconds_per_unit).map_err(|_| invalid())?;
        total = total.checked_add(part).ok_or_else(invalid)?;
        rest = after;
    }
    Ok(total)
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
    #[case::bare_seconds("7", Duration::from_secs(7))]
    #[case::fractional_seconds("1.5s", Duration::from_millis(1500))]
    #[case::bare_fraction("0.25", Duration::from_millis(250))]
    #[case::compound("1m30s", Duration::from_secs(90))]
    #[case::zero("0s", Duration::ZERO)]
    fn parses_durations(#[case] text: &str, #[case] expected: Duration) {
        assert_eq!(parse_duration(text), Ok(expected));
    }

    #[rstest]
    #[case::empty("")]
    #[case::unit_only("s")]
    #[case::unknown_unit("5d")]
    #[case::negative("-5s")]
    #[case::negative_bare("-1")]
    #[case::two_dots("1.2.3s")]
    #[case::words("soon")]
    #[case::trailing_number("1m30")]
    fn rejects_other_durations_naming_the_text(#[case] text: &str) {
        let message = parse_duration(text).unwrap_err();
        assert!(message.contains(&format!("{text:?}")), "{message}");
    }

    #[derive(Debug, Parser)]
    struct Harness {
        #[command(flatten)]
        endpoints: EndpointArgs,
    }

    #[test]
    fn flags_default_to_crictl_deadlines() {
        let args = Harness::try_parse_from(["t"]).unwrap().endpoints;
        assert_eq!(args.options(), ConnectOptions::default());
        assert_eq!(args.runtime_endpoint, None);
    }

    #[test]
    fn flags_take_crictl_spellings() {
        let args = Harness::try_parse_from([
            "t",
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
        .unwrap()
        .endpoints;
        assert_eq!(args.runtime_endpoint.as_deref(), Some("/run/r.sock"));
        assert_eq!(args.image_endpoint.as_deref(), Some("/run/i.sock"));
        assert_eq!(
            args.options(),
            ConnectOptions {
                connect_timeout: Duration::from_millis(250),
                call_timeout: Duration::from_secs(2),
            }
        );
        assert_eq!(args.config, Some(PathBuf::from("/tmp/crictl.yaml")));
    }

    #[test]
    fn resolve_prefers_the_flags() {
        let args = Harness::try_parse_from(["t", "-r", "unix:///run/r.sock", "-i", "/run/i.sock"])
            .unwrap()
            .endpoints;
        let (runtime, image) = args.resolve().unwrap();
        assert_eq!(runtime.to_string(), "unix:///run/r.sock");
        assert_eq!(image.to_string(), "unix:///run/i.sock");
    }
}
