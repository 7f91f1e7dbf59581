//! `cri-harness clean`: removes the containers, then the sandboxes, that earlier runs left on a
//! runtime (an interrupted run, a killed process), found by the harness's run-id label.

use std::process::ExitCode;

use super::common::EndpointArgs;
use crate::runner::cleanup::{self, Selector};

/// Arguments of `cri-harness clean`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    endpoint: EndpointArgs,
    /// Only the objects of this run [default: those of every run]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

/// Runs `cri-harness clean`.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let client = args.endpoint.connect().await?;
    let selector = Selector {
        run_id: args.run_id,
        case: None,
    };
    let removal = cleanup::remove(&client, &selector).await;
    for object in &removal.removed {
        println!("removed {object}");
    }
    for error in &removal.errors {
        eprintln!("error: {error}");
    }
    let left = cleanup::remaining(&client, &selector).await?;
    let scope = selector
        .run_id
        .as_deref()
        .map_or_else(|| "any run".to_owned(), |id| format!("run {id}"));
    if left.is_empty() {
        println!(
            "removed {} objects of {scope} from {}; none left",
            removal.removed.len(),
            client.endpoint()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for object in &left {
            eprintln!("left: {object}");
        }
        eprintln!(
            "error: {} objects of {scope} are still on {}",
            left.len(),
            client.endpoint()
        );
        Ok(ExitCode::FAILURE)
    }
}
