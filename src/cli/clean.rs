//! `cri-harness clean`: removes the containers, then the sandboxes, that earlier runs left on a
//! runtime (an interrupted run, a killed process), found by the harness's run-id label. A run
//! that still holds its lease is left alone unless `--force` says otherwise. The images a run
//! pulled and did not get to remove, listed in a record beside its lease, go too, and so does
//! its host directory once every mount under it is unmounted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::common::{EndpointArgs, LeaseDirArg};
use crate::runner::cleanup::{self, LeaseState, Selector};
use crate::runner::{default_work_dir, host};
use crate::world::pulled;

/// Arguments of `cri-harness clean`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    endpoint: EndpointArgs,
    /// Only the objects of this run [default: those of every run]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// Also remove the objects of runs that are still alive
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    lease: LeaseDirArg,
    /// The runs' work directory, where each left its cases' host directories and mounts
    /// [default: TMPDIR/cri-harness]
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

/// Runs `cri-harness clean`.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let client = args.endpoint.connect().await?;
    let lease_dir = args.lease.dir();
    let everything = Selector {
        run_id: args.run_id.clone(),
        case: None,
    };
    let mut alive = Vec::new();
    let mut selectors = Vec::new();
    for run_id in cleanup::run_ids(&client, &everything).await? {
        match cleanup::lease_state(&lease_dir, &run_id) {
            LeaseState::Held(holder) if !args.force => alive.push((run_id, holder)),
            _ => selectors.push(Selector {
                run_id: Some(run_id),
                case: None,
            }),
        }
    }
    // A run whose runtime objects are all gone can still have left its host directory.
    if let Some(run_id) = &args.run_id {
        let listed = selectors.iter().any(|s| s.run_id.as_ref() == Some(run_id));
        let live = alive.iter().any(|(id, _)| id == run_id);
        let held = matches!(
            cleanup::lease_state(&lease_dir, run_id),
            LeaseState::Held(_)
        );
        if !listed && !live && (args.force || !held) {
            selectors.push(Selector {
                run_id: Some(run_id.clone()),
                case: None,
            });
        }
    }
    let work_dir = args.work_dir.clone().unwrap_or_else(default_work_dir);
    let mut removed = 0;
    let mut left: Vec<String> = Vec::new();
    for selector in &selectors {
        // An interrupted run's object may still be in transition (a container caught in
        // StartContainer): the sweep waits for it, within its bound.
        let swept = cleanup::sweep(&client, selector, cleanup::Settle::default()).await;
        for object in &swept.removed {
            println!("removed {object}");
        }
        for error in &swept.errors {
            eprintln!("error: {error}");
        }
        if let Some(err) = swept.list_error {
            return Err(err.into());
        }
        removed += swept.removed.len();
        if let Some(run_id) = &selector.run_id {
            if let Err(err) = host::remove_run_cgroups(run_id) {
                eprintln!("error: {err}");
            }
            let run_dir = work_dir.join(run_id);
            match host::remove_run_dir(&run_dir) {
                Ok(true) => println!("removed the host directory {}", run_dir.display()),
                Ok(false) => {}
                Err(message) => left.push(message),
            }
        }
        left.extend(swept.left.iter().map(ToString::to_string));
    }
    // Images a run pulled and could not remove (its runtime died, or it was killed): the run
    // left their list beside its lease.
    for (run_id, record) in image_records(&lease_dir, args.run_id.as_deref()) {
        if matches!(
            cleanup::lease_state(&lease_dir, &run_id),
            LeaseState::Held(_)
        ) && !args.force
        {
            continue;
        }
        let mut kept = Vec::new();
        for image in pulled::read_record(&record) {
            match client.remove_image(&image).await {
                Ok(()) => {
                    println!("removed image {image} (pulled by run {run_id})");
                    removed += 1;
                }
                Err(err) => {
                    eprintln!("error: {err}");
                    kept.push(image);
                }
            }
        }
        if kept.is_empty() {
            let _ = std::fs::remove_file(&record);
        } else {
            left.extend(
                kept.into_iter()
                    .map(|image| format!("image {image} (pulled by run {run_id})")),
            );
        }
    }
    for (run_id, holder) in &alive {
        println!(
            "left alone: run {run_id} is still running ({holder}); --force removes its objects anyway"
        );
    }
    let scope = args
        .run_id
        .as_deref()
        .map_or_else(|| "any run".to_owned(), |id| format!("run {id}"));
    if left.is_empty() {
        let note = if alive.is_empty() {
            "none left"
        } else {
            "none left but those of live runs"
        };
        println!(
            "removed {removed} objects of {scope} from {}; {note}",
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

/// The image records in the lease directory, by run id: every one, or `only`'s.
fn image_records(lease_dir: &Path, only: Option<&str>) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(lease_dir) else {
        return Vec::new();
    };
    let mut records: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let run_id = name.strip_suffix(".images")?.to_owned();
            Some((run_id, entry.path()))
        })
        .filter(|(run_id, _)| only.is_none_or(|id| id == run_id))
        .collect();
    records.sort();
    records
}
