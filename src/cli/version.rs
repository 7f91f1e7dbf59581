//! `cri-harness version`: connects like the kubelet and prints the runtime's Version answer in
//! crictl's layout (or as JSON with protobuf's field names), so it doubles as a quick check
//! that an endpoint is a working CRI runtime.

use std::process::ExitCode;

use super::common::EndpointArgs;
use crate::cri::v1;

/// The version crictl sends in its Version request.
const CLIENT_API_VERSION: &str = "v1";

/// Output formats of `cri-harness version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// crictl's `Key:  value` lines.
    Text,
    /// The VersionResponse as JSON, protobuf field names in lowerCamelCase.
    Json,
}

/// Arguments of `cri-harness version`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    endpoints: EndpointArgs,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// Runs `cri-harness version`.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let client = args.endpoints.connect().await?;
    let version = client.version(CLIENT_API_VERSION).await?;
    println!("{}", render(&version, args.output)?);
    Ok(ExitCode::SUCCESS)
}

fn render(version: &v1::VersionResponse, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => format!(
            "Version:  {}\nRuntimeName:  {}\nRuntimeVersion:  {}\nRuntimeApiVersion:  {}",
            version.version,
            version.runtime_name,
            version.runtime_version,
            version.runtime_api_version
        ),
        Format::Json => serde_json::to_string_pretty(&serde_json::json!({
            "version": version.version,
            "runtimeName": version.runtime_name,
            "runtimeVersion": version.runtime_version,
            "runtimeApiVersion": version.runtime_api_version,
        }))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> v1::VersionResponse {
        v1::VersionResponse {
            version: "0.1.0".into(),
            runtime_name: "containerd".into(),
            runtime_version: "1.6.20~ds1".into(),
            runtime_api_version: "v1".into(),
        }
    }

    #[test]
    fn text_output_matches_crictl_layout() {
        assert_eq!(
            render(&answer(), Format::Text).unwrap(),
            "Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  1.6.20~ds1\nRuntimeApiVersion:  v1"
        );
    }

    #[test]
    fn json_output_uses_protobuf_json_names() {
        let json: serde_json::Value =
            serde_json::from_str(&render(&answer(), Format::Json).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "version": "0.1.0",
                "runtimeName": "containerd",
                "runtimeVersion": "1.6.20~ds1",
                "runtimeApiVersion": "v1",
            })
        );
    }
}
