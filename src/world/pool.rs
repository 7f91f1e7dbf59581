//! The sandboxes a run shares (`run --share-sandboxes`). A case whose sandboxes only hold its
//! containers may take a READY sandbox that an earlier case made and left, rather than run and
//! tear down one of its own: on a runtime, a sandbox's run, stop and removal cost about twice
//! what a container's whole life does.
//!
//! Each sandbox is held by one case at a time, so no two cases ever see each other's
//! containers in it. The case's containers carry its own labels, so its lists, its sweep and
//! its leak check find only them; a sandbox goes back to the pool only once the case's sweep
//! removed them all, and with its log directory emptied. Sandboxes are kept apart by the
//! options they were run with (`key`): a case gets one that was run exactly as it asks. A
//! sandbox no case left to run will ask for is removed as soon as its last case is done with
//! it, the rest at the run's end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::identity::Pod;
use crate::cri::v1;

/// A sandbox of the pool, as the case holding it sees it.
#[derive(Debug, Clone)]
pub struct Pooled {
    /// The options it was run with, as the step that asked for it wrote them.
    pub key: String,
    /// Its number in the run, from 1.
    pub number: usize,
    /// The runtime's id.
    pub id: String,
    /// Its pod.
    pub(crate) pod: Pod,
    /// The config it was run with; the containers created in it send it.
    pub config: v1::PodSandboxConfig,
    /// Its log directory on the host.
    pub log_directory: PathBuf,
    /// Its cgroup parent, removed with it.
    pub cgroup_parent: String,
}

/// The run's shared sandboxes.
#[derive(Debug)]
pub struct SandboxPool {
    run_id: String,
    dir: PathBuf,
    idle: Mutex<BTreeMap<String, Vec<Pooled>>>,
    made: Mutex<Vec<Pooled>>,
    next: AtomicUsize,
    /// How many more times the run's cases will ask for a sandbox of each key.
    wanted: Mutex<BTreeMap<String, usize>>,
}

impl SandboxPool {
    /// An empty pool for run `run_id`, whose sandboxes keep their logs under `work_dir`.
    pub fn new(run_id: &str, work_dir: &Path) -> Self {
        Self {
            run_id: run_id.to_owned(),
            dir: work_dir.join(run_id).join("pool"),
            idle: Mutex::new(BTreeMap::new()),
            made: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
            wanted: Mutex::new(BTreeMap::new()),
        }
    }

    /// Notes that a case of the run will ask for a sandbox run with options `key`.
    pub fn expect(&self, key: String) {
        *self
            .wanted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default() += 1;
    }

    /// Notes that a case got its sandbox run with options `key`.
    pub fn got(&self, key: &str) {
        if let Some(left) = self
            .wanted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(key)
        {
            *left = left.saturating_sub(1);
        }
    }

    /// An idle sandbox run with options `key`, now the caller's.
    pub fn take(&self, key: &str) -> Option<Pooled> {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(key)
            .and_then(Vec::pop)
    }

    /// The number and pod of a sandbox about to be made. Its pod is the pool's, in a namespace
    /// no case has (`crih-RUN-pool`), so it can never be taken for a case's own.
    pub(crate) fn next_pod(&self) -> (usize, Pod) {
        let number = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let pod = Pod {
            uid: format!("{}-pool-{number}", self.run_id),
            name: format!("pool-{number}"),
            namespace: self.namespace(),
        };
        (number, pod)
    }

    /// The namespace of the pool's pods.
    pub fn namespace(&self) -> String {
        format!("{}pool", super::identity::namespace_prefix(&self.run_id))
    }

    /// The log directory of sandbox `number`.
    pub fn log_directory(&self, number: usize) -> PathBuf {
        self.dir.join(number.to_string())
    }

    /// Notes a sandbox made for the pool: the run removes it at its end, whatever becomes of
    /// the case that made it.
    pub fn made(&self, pooled: &Pooled) {
        self.made
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(pooled.clone());
    }

    /// Gives a sandbox back for the next case, once its holder's containers are gone: its log
    /// directory is emptied first. A directory that cannot be emptied keeps the sandbox out.
    /// When no case will ask for its key again, it is handed back to the caller to remove now,
    /// rather than idle until the run's end; the pool forgets it then.
    pub fn give_back(&self, pooled: Pooled) -> Result<Option<Pooled>, String> {
        let wanted = self
            .wanted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&pooled.key)
            .copied()
            .unwrap_or(0);
        if wanted == 0 {
            self.made
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|made| made.number != pooled.number);
            return Ok(Some(pooled));
        }
        empty_dir(&pooled.log_directory).map_err(|err| {
            format!(
                "cannot empty the shared sandbox's log directory {}: {err}",
                pooled.log_directory.display()
            )
        })?;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(pooled.key.clone())
            .or_default()
            .push(pooled);
        Ok(None)
    }

    /// Every sandbox made for the pool, for the run's end to remove; the pool is empty after.
    pub fn drain(&self) -> Vec<Pooled> {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let mut made =
            std::mem::take(&mut *self.made.lock().unwrap_or_else(PoisonError::into_inner));
        made.sort_by_key(|p| p.number);
        made
    }

    /// The directory every pooled sandbox's logs are under.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Removes what is in `dir`, keeping `dir`.
fn empty_dir(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled(pool: &SandboxPool, key: &str) -> Pooled {
        let (number, pod) = pool.next_pod();
        let log_directory = pool.log_directory(number);
        std::fs::create_dir_all(&log_directory).unwrap();
        Pooled {
            key: key.to_owned(),
            number,
            id: format!("id-{number}"),
            pod,
            config: v1::PodSandboxConfig::default(),
            log_directory,
            cgroup_parent: String::new(),
        }
    }

    #[test]
    fn a_sandbox_is_taken_only_with_the_options_it_was_run_with_and_only_once() {
        let work = tempfile::tempdir().unwrap();
        let pool = SandboxPool::new("r1", work.path());
        pool.expect("plain".to_owned());
        pool.expect("plain".to_owned());
        assert!(pool.take("plain").is_none());
        let first = pooled(&pool, "plain");
        pool.got("plain");
        pool.made(&first);
        assert!(
            pool.give_back(first).unwrap().is_none(),
            "one case still wants it"
        );
        assert!(pool.take("privileged").is_none());
        let taken = pool.take("plain").unwrap();
        assert_eq!(taken.id, "id-1");
        assert!(
            pool.take("plain").is_none(),
            "a held sandbox is no one else's"
        );
        assert_eq!(taken.pod.namespace, "crih-r1-pool");
        assert_eq!(taken.pod.uid, "r1-pool-1");
    }

    #[test]
    fn a_given_back_sandbox_has_an_empty_log_directory_and_the_end_removes_every_one() {
        let work = tempfile::tempdir().unwrap();
        let pool = SandboxPool::new("r1", work.path());
        pool.expect("plain".to_owned());
        let first = pooled(&pool, "plain");
        let second = pooled(&pool, "plain");
        pool.made(&second);
        pool.made(&first);
        std::fs::create_dir_all(first.log_directory.join("app")).unwrap();
        std::fs::write(first.log_directory.join("app/0.log"), "old case's line\n").unwrap();
        let dir = first.log_directory.clone();
        assert!(pool.give_back(first).unwrap().is_none());
        assert!(dir.is_dir());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let drained: Vec<usize> = pool.drain().iter().map(|p| p.number).collect();
        assert_eq!(
            drained,
            [1, 2],
            "one held and one idle, in the order they were made"
        );
        assert!(pool.take("plain").is_none());
        assert!(pool.drain().is_empty());
    }

    #[test]
    fn a_sandbox_no_case_will_ask_for_again_is_handed_back_to_remove_and_forgotten() {
        let work = tempfile::tempdir().unwrap();
        let pool = SandboxPool::new("r1", work.path());
        pool.expect("privileged".to_owned());
        let only = pooled(&pool, "privileged");
        pool.got("privileged");
        pool.made(&only);
        let retired = pool
            .give_back(only)
            .unwrap()
            .expect("no one wants it any more");
        assert_eq!(retired.number, 1);
        assert!(pool.take("privileged").is_none());
        assert!(
            pool.drain().is_empty(),
            "the caller removes it, not the run's end"
        );
    }
}
