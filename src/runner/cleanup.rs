//! Removing what a run made: every container, then every sandbox, that carries the harness's
//! labels. [`sweep`] is what the end of each case, an interrupted run and `cri-harness clean`
//! use: it waits for the run's object-making calls still in flight, then lists and removes
//! until two listings in a row agree that nothing is left, retrying with backoff, within a
//! bound, what a runtime refuses to remove while it is in transition (containerd: "container is
//! in starting state"). A run on a real runtime holds a [`Lease`] while it lives, so `clean`
//! can tell its objects from an abandoned run's.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cri::{labels, v1, CallError, CriClient};

/// Which objects to remove, by the harness's labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Only this run's objects; `None` for any run's (any object with a run-id label).
    pub run_id: Option<String>,
    /// Only this case's objects.
    pub case: Option<usize>,
}

impl Selector {
    /// The label selector the runtime can filter on (equality only).
    fn labels(&self) -> BTreeMap<String, String> {
        let mut map = BTreeMap::new();
        if let Some(run_id) = &self.run_id {
            map.insert(labels::RUN_ID.to_owned(), run_id.clone());
        }
        if let Some(case) = self.case {
            map.insert(labels::CASE.to_owned(), case.to_string());
        }
        map
    }

    /// The same test on our side: a runtime may ignore label selectors, and "any run" has no
    /// equality form.
    fn matches(&self, object: &BTreeMap<String, String>) -> bool {
        object.contains_key(labels::RUN_ID)
            && self
                .labels()
                .iter()
                .all(|(key, value)| object.get(key) == Some(value))
    }
}

/// One removed (or not removable) object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// `sandbox` or `container`.
    pub kind: &'static str,
    /// Runtime id.
    pub id: String,
    /// `namespace/name` of the pod (sandboxes) or the container name.
    pub name: String,
}

impl std::fmt::Display for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({})", self.kind, self.id, self.name)
    }
}

/// What a cleanup did.
#[derive(Debug, Clone, Default)]
pub struct Removal {
    /// Objects removed, containers first.
    pub removed: Vec<Object>,
    /// Calls that failed, as text.
    pub errors: Vec<String>,
}

/// How long a [`sweep`] keeps at it and how it paces itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settle {
    /// The whole sweep's bound: the wait for calls in flight, then every round of listing and
    /// removing. What is still listed when it runs out is reported as left.
    pub bound: Duration,
    /// The pause before the listing that must confirm an empty one.
    pub quiet: Duration,
    /// The first pause after a round whose removals the runtime refused; each next one is
    /// twice as long, up to `max_pause`.
    pub first_pause: Duration,
    /// The longest pause between rounds.
    pub max_pause: Duration,
}

/// The bound of a sweep: containerd settles a container caught in StartContainer within a few
/// seconds, and a CI job's grace period after SIGTERM is rarely under a minute.
pub const SETTLE_BOUND: Duration = Duration::from_secs(30);

impl Default for Settle {
    fn default() -> Self {
        Self {
            bound: SETTLE_BOUND,
            quiet: Duration::from_millis(100),
            first_pause: Duration::from_millis(100),
            max_pause: Duration::from_secs(2),
        }
    }
}

/// The bound of a sweep after a case whose steps all returned: no call of its own is in
/// flight, so a removal the runtime keeps refusing is more likely a lasting failure (a handler
/// that cannot tear down what it half made) than a transition, and the case should not spend
/// [`SETTLE_BOUND`] on it. A few rounds with backoff still ride out a short transition.
pub const RETURNED_BOUND: Duration = Duration::from_secs(5);

impl Settle {
    /// The pacing after a case whose steps all returned, with nothing cut short: its own
    /// calls are answered, so the confirming listing follows at once, and the sweep keeps at
    /// a refused removal for [`RETURNED_BOUND`] only.
    pub fn after_returned_steps() -> Self {
        Self {
            bound: RETURNED_BOUND,
            quiet: Duration::ZERO,
            ..Self::default()
        }
    }
}

/// What a [`sweep`] did and found.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    /// Objects removed, containers first.
    pub removed: Vec<Object>,
    /// Refusals of the last round that still had any (earlier ones were retried), as text.
    pub errors: Vec<String>,
    /// What the last listing showed: empty when the sweep succeeded.
    pub left: Vec<Object>,
    /// The listing failed (the runtime did not answer it): the sweep stopped there.
    pub list_error: Option<CallError>,
    /// Listings made.
    pub listings: usize,
    /// Object-making calls that were in flight when the sweep began, and whether they all
    /// returned within the bound.
    pub in_flight: Option<crate::cri::InFlight>,
    /// Time spent waiting for calls in flight.
    pub in_flight_wait: Duration,
    /// Time spent in the whole sweep.
    pub elapsed: Duration,
}

impl Sweep {
    /// Two listings in a row found nothing.
    pub fn clean(&self) -> bool {
        self.left.is_empty() && self.list_error.is_none()
    }
}

/// Removes everything matching `selector` and proves it gone: waits (within the bound) for
/// the object-making calls in flight through `client`, so what they make is listed, then
/// lists and removes until two listings in a row agree and are empty. A round the runtime
/// refuses (an object in transition) is retried after a pause that doubles each time; a
/// listing that fails ends the sweep at once (an unreachable runtime will not settle).
pub async fn sweep(client: &CriClient, selector: &Selector, settle: Settle) -> Sweep {
    let started = Instant::now();
    let mut sweep = Sweep::default();
    let in_flight = client.settle_in_flight(settle.bound).await;
    sweep.in_flight_wait = started.elapsed();
    sweep.in_flight = Some(in_flight);
    let mut previous: Option<BTreeSet<(&'static str, String)>> = None;
    let mut pause = settle.first_pause;
    loop {
        let (sandboxes, containers) = match list(client, selector).await {
            Ok(listed) => listed,
            Err(err) => {
                sweep.list_error = Some(err);
                break;
            }
        };
        sweep.listings += 1;
        let found: Vec<Object> = containers
            .iter()
            .map(container_object)
            .chain(sandboxes.iter().map(sandbox_object))
            .collect();
        let ids: BTreeSet<(&'static str, String)> =
            found.iter().map(|o| (o.kind, o.id.clone())).collect();
        let agreed = previous.as_ref() == Some(&ids);
        sweep.left = found;
        if ids.is_empty() {
            if agreed {
                sweep.errors.clear();
                break;
            }
            previous = Some(ids);
            if started.elapsed() + settle.quiet > settle.bound {
                break;
            }
            crate::timing::pause(settle.quiet).await;
            continue;
        }
        if started.elapsed() >= settle.bound {
            break;
        }
        previous = Some(ids);
        let removal = remove_found(client, selector, sandboxes, containers).await;
        sweep.removed.extend(removal.removed);
        sweep.errors = removal.errors;
        if !sweep.errors.is_empty() || agreed {
            // Refused, or removed and still listed: something is in transition. Give it
            // time, within the bound.
            tracing::info!(
                objects = previous.as_ref().map_or(0, BTreeSet::len),
                errors = ?sweep.errors,
                pause = ?pause,
                "sweep: objects in transition, trying again"
            );
            let left = settle.bound.saturating_sub(started.elapsed());
            crate::timing::pause(pause.min(left)).await;
            pause = (pause * 2).min(settle.max_pause);
        }
    }
    sweep.removed.sort_by_key(|o| o.kind != "container");
    sweep.elapsed = started.elapsed();
    tracing::info!(
        elapsed = ?sweep.elapsed,
        in_flight = in_flight.waited_for,
        in_flight_wait = ?sweep.in_flight_wait,
        listings = sweep.listings,
        removed = sweep.removed.len(),
        left = sweep.left.len(),
        "sweep done"
    );
    sweep
}

/// Removes everything matching `selector`, concurrently: containers outside the listed
/// sandboxes are stopped (if running) and removed, each sandbox is stopped and removed (CRI's
/// RemovePodSandbox takes its containers with it), and any container a runtime kept after its
/// sandbox went is removed last. NotFound counts as done. One round: [`sweep`] repeats it
/// until nothing is left.
pub async fn remove(client: &CriClient, selector: &Selector) -> Removal {
    match list(client, selector).await {
        Ok((sandboxes, containers)) => remove_found(client, selector, sandboxes, containers).await,
        Err(err) => Removal {
            removed: Vec::new(),
            errors: vec![err.to_string()],
        },
    }
}

/// [`remove`] of what a listing found.
async fn remove_found(
    client: &CriClient,
    selector: &Selector,
    sandboxes: Vec<v1::PodSandbox>,
    containers: Vec<v1::Container>,
) -> Removal {
    let mut removal = Removal::default();
    let sandbox_ids: BTreeSet<&str> = sandboxes.iter().map(|s| s.id.as_str()).collect();
    let (inside, outside): (Vec<&v1::Container>, Vec<&v1::Container>) = containers
        .iter()
        .partition(|c| sandbox_ids.contains(c.pod_sandbox_id.as_str()));
    let outcomes = futures::future::join_all(
        outside
            .iter()
            .map(|container| remove_container(client, container)),
    )
    .await;
    merge(&mut removal, outcomes);
    let outcomes = futures::future::join_all(sandboxes.iter().map(|sandbox| {
        let running: Vec<&v1::Container> = inside
            .iter()
            .copied()
            .filter(|c| c.pod_sandbox_id == sandbox.id && is_running(c))
            .collect();
        remove_sandbox(client, sandbox, running)
    }))
    .await;
    merge(&mut removal, outcomes);
    if !inside.is_empty() {
        // Listed again only when the sandboxes had containers: a runtime that kept one
        // after its sandbox went still gets it removed here.
        let kept: BTreeSet<String> = match list(client, selector).await {
            Ok((_, now)) => now.into_iter().map(|c| c.id).collect(),
            Err(err) => {
                removal.errors.push(err.to_string());
                return removal;
            }
        };
        let (gone, kept): (Vec<&v1::Container>, Vec<&v1::Container>) =
            inside.into_iter().partition(|c| !kept.contains(&c.id));
        removal
            .removed
            .extend(gone.into_iter().map(container_object));
        let outcomes =
            futures::future::join_all(kept.iter().map(|c| remove_container(client, c))).await;
        merge(&mut removal, outcomes);
    }
    // Containers first, as a reader expects them (a sandbox's went with it).
    removal.removed.sort_by_key(|o| o.kind != "container");
    removal
}

async fn remove_container(client: &CriClient, container: &v1::Container) -> Removal {
    let mut removal = Removal::default();
    if is_running(container) {
        if let Err(err) = client.stop_container(&container.id, 0).await {
            note(&mut removal, err);
        }
    }
    match client.remove_container(&container.id).await {
        Ok(()) => removal.removed.push(container_object(container)),
        Err(err) => note(&mut removal, err),
    }
    removal
}

/// Stops a sandbox's running containers all at once, then stops and removes the sandbox.
/// A runtime's StopPodSandbox may stop its containers one after another (containerd 1.6
/// does): stopping them together first takes a two-container pod down in about the time of
/// one.
async fn remove_sandbox(
    client: &CriClient,
    sandbox: &v1::PodSandbox,
    running: Vec<&v1::Container>,
) -> Removal {
    let mut removal = Removal::default();
    let stops = futures::future::join_all(
        running
            .iter()
            .map(|container| client.stop_container(&container.id, 0)),
    )
    .await;
    for err in stops.into_iter().filter_map(Result::err) {
        note(&mut removal, err);
    }
    if let Err(err) = client.stop_pod_sandbox(&sandbox.id).await {
        note(&mut removal, err);
    }
    match client.remove_pod_sandbox(&sandbox.id).await {
        Ok(()) => removal.removed.push(sandbox_object(sandbox)),
        Err(err) => note(&mut removal, err),
    }
    removal
}

fn is_running(container: &v1::Container) -> bool {
    container.state == v1::ContainerState::ContainerRunning as i32
}

fn merge(removal: &mut Removal, outcomes: Vec<Removal>) {
    for outcome in outcomes {
        removal.removed.extend(outcome.removed);
        removal.errors.extend(outcome.errors);
    }
}

fn note(removal: &mut Removal, err: CallError) {
    if !err.is_not_found() {
        removal.errors.push(err.to_string());
    }
}

/// What is still there: the objects matching `selector`, containers first.
pub async fn remaining(client: &CriClient, selector: &Selector) -> Result<Vec<Object>, CallError> {
    let (sandboxes, containers) = list(client, selector).await?;
    Ok(containers
        .iter()
        .map(container_object)
        .chain(sandboxes.iter().map(sandbox_object))
        .collect())
}

async fn list(
    client: &CriClient,
    selector: &Selector,
) -> Result<(Vec<v1::PodSandbox>, Vec<v1::Container>), CallError> {
    let label_selector = selector.labels();
    let sandboxes = client
        .list_pod_sandbox(Some(v1::PodSandboxFilter {
            label_selector: label_selector.clone(),
            ..Default::default()
        }))
        .await?;
    let containers = client
        .list_containers(Some(v1::ContainerFilter {
            label_selector,
            ..Default::default()
        }))
        .await?;
    Ok((
        sandboxes
            .into_iter()
            .filter(|s| selector.matches(&s.labels))
            .collect(),
        containers
            .into_iter()
            .filter(|c| selector.matches(&c.labels))
            .collect(),
    ))
}

/// The run ids of the objects matching `selector`: the runs `clean` would touch.
pub async fn run_ids(
    client: &CriClient,
    selector: &Selector,
) -> Result<BTreeSet<String>, CallError> {
    let (sandboxes, containers) = list(client, selector).await?;
    Ok(sandboxes
        .iter()
        .map(|s| &s.labels)
        .chain(containers.iter().map(|c| &c.labels))
        .filter_map(|labels| labels.get(labels::RUN_ID).cloned())
        .collect())
}

/// Why a lease could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The lease directory or file could not be made or opened.
    #[error("cannot use the run lease {} (CRI_HARNESS_LEASE_DIR names another directory)", path.display())]
    Io {
        /// The directory or lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A live process already holds the lease of this run id.
    #[error("run id {run_id} is in use by a live run ({holder}); pick another --run-id")]
    InUse {
        /// The run id.
        run_id: String,
        /// Who holds it, as its lock file says.
        holder: String,
    },
}

/// Proof that a run is alive: an exclusive `flock` on `<dir>/<run id>.lock`, held from before
/// the run makes its first object until it ends (the kernel drops it if the process dies, so
/// a killed run's lease is free at once). Dropping it removes the file.
#[derive(Debug)]
pub struct Lease {
    // Held open for the lock; never read.
    _file: File,
    path: PathBuf,
}

/// What `clean` learns about a run from its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// A live process holds it; the text names that process.
    Held(String),
    /// No live process holds it: the run ended or died.
    Free,
}

/// The lease directory when `--lease-dir` names none: one per user, so a run and the
/// `clean` after it agree as long as one user runs both.
pub fn default_lease_dir() -> PathBuf {
    let uid = rustix::process::geteuid();
    if uid.is_root() {
        PathBuf::from("/run/cri-harness/leases")
    } else {
        std::env::temp_dir().join(format!("cri-harness-{}/leases", uid.as_raw()))
    }
}

fn lease_path(dir: &Path, run_id: &str) -> PathBuf {
    dir.join(format!("{run_id}.lock"))
}

fn try_lock(file: &File) -> io::Result<bool> {
    use rustix::fs::{flock, FlockOperation};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(errno) => Err(errno.into()),
    }
}

impl Lease {
    /// Takes the lease of `run_id` in `dir` (created if missing), writing the holder's pid
    /// and host into it for the messages of a `clean` that finds it held.
    pub fn acquire(dir: &Path, run_id: &str) -> Result<Self, LeaseError> {
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| LeaseError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let path = lease_path(dir, run_id);
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_error(&path))?;
        if !try_lock(&file).map_err(io_error(&path))? {
            return Err(LeaseError::InUse {
                run_id: run_id.to_owned(),
                holder: holder(&mut file),
            });
        }
        let uname = rustix::system::uname();
        let me = format!(
            "pid {} on {}",
            std::process::id(),
            uname.nodename().to_string_lossy()
        );
        file.set_len(0)
            .and_then(|()| file.write_all(me.as_bytes()))
            .map_err(io_error(&path))?;
        Ok(Self { _file: file, path })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Removed while still locked, so a `clean` never sees a free lease of a live run.
        let _ = std::fs::remove_file(&self.path);
    }
}

fn holder(file: &mut File) -> String {
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) if !text.trim().is_empty() => text.trim().to_owned(),
        _ => "a process that has not written its name yet".to_owned(),
    }
}

/// Whether the run `run_id` holds its lease in `dir`. Anything that stops the check (an
/// unreadable file) counts as held: `clean` errs on the side of leaving objects alone.
pub fn lease_state(dir: &Path, run_id: &str) -> LeaseState {
    let path = lease_path(dir, run_id);
    let mut file = match File::open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return LeaseState::Free,
        Err(err) => {
            return LeaseState::Held(format!("its lease {} is unreadable: {err}", path.display()))
        }
    };
    match try_lock(&file) {
        // Free: a run that died left its file; it is of no use to anyone now.
        Ok(true) => {
            let _ = std::fs::remove_file(&path);
            LeaseState::Free
        }
        Ok(false) => LeaseState::Held(holder(&mut file)),
        Err(err) => LeaseState::Held(format!(
            "its lease {} cannot be checked: {err}",
            path.display()
        )),
    }
}

fn sandbox_object(sandbox: &v1::PodSandbox) -> Object {
    Object {
        kind: "sandbox",
        id: sandbox.id.clone(),
        name: sandbox.metadata.as_ref().map_or_else(
            || "no metadata".to_owned(),
            |m| format!("{}/{}", m.namespace, m.name),
        ),
    }
}

fn container_object(container: &v1::Container) -> Object {
    Object {
        kind: "container",
        id: container.id.clone(),
        name: container
            .metadata
            .as_ref()
            .map_or_else(|| "no metadata".to_owned(), |m| m.name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn labels_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_held_lease_is_seen_as_held_and_is_free_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Lease::acquire(dir.path(), "r1").unwrap();
        let LeaseState::Held(holder) = lease_state(dir.path(), "r1") else {
            panic!("the lease of a live run reads as free");
        };
        assert!(
            holder.contains(&format!("pid {}", std::process::id())),
            "{holder}"
        );
        drop(lease);
        assert_eq!(lease_state(dir.path(), "r1"), LeaseState::Free);
        assert!(!dir.path().join("r1.lock").exists());
    }

    #[test]
    fn a_run_id_in_use_cannot_be_leased_twice() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Lease::acquire(dir.path(), "r1").unwrap();
        let err = Lease::acquire(dir.path(), "r1").unwrap_err();
        assert!(matches!(err, LeaseError::InUse { .. }), "{err}");
        assert!(Lease::acquire(dir.path(), "r2").is_ok());
    }

    #[test]
    fn an_unusable_lease_directory_is_an_error_that_says_how_to_pick_another() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, "").unwrap();
        let err = Lease::acquire(&file.join("leases"), "r1").unwrap_err();
        assert!(matches!(err, LeaseError::Io { .. }), "{err}");
        assert!(err.to_string().contains("CRI_HARNESS_LEASE_DIR"), "{err}");
    }

    #[test]
    fn a_lease_file_left_unlocked_by_a_dead_run_is_free() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r1.lock"), "pid 1 on gone").unwrap();
        assert_eq!(lease_state(dir.path(), "r1"), LeaseState::Free);
        assert_eq!(lease_state(dir.path(), "never-ran"), LeaseState::Free);
    }

    #[rstest]
    #[case::any_run_matches_any_run_label(None, None, &[(labels::RUN_ID, "a")], true)]
    #[case::any_run_needs_a_run_label(None, None, &[("other", "a")], false)]
    #[case::this_run(Some("a"), None, &[(labels::RUN_ID, "a"), (labels::CASE, "1")], true)]
    #[case::another_run(Some("a"), None, &[(labels::RUN_ID, "b")], false)]
    #[case::this_case(Some("a"), Some(2), &[(labels::RUN_ID, "a"), (labels::CASE, "2")], true)]
    #[case::another_case(Some("a"), Some(2), &[(labels::RUN_ID, "a"), (labels::CASE, "20")], false)]
    fn the_selector_matches_by_the_harness_labels(
        #[case] run_id: Option<&str>,
        #[case] case: Option<usize>,
        #[case] object: &[(&str, &str)],
        #[case] expected: bool,
    ) {
        let selector = Selector {
            run_id: run_id.map(str::to_owned),
            case,
        };
        assert_eq!(selector.matches(&labels_of(object)), expected);
    }
}
