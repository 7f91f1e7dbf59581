//! The images a run pulled that the runtime did not have: kept in memory for the run to remove
//! at its end, and written through to a record file beside the run's lease, so that a run that
//! could not remove them (its runtime died, or it was killed) leaves `clean` a list to finish.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The images a run pulled, shared by its cases.
#[derive(Debug, Default)]
pub struct PulledImages {
    images: Mutex<BTreeSet<String>>,
    record: Option<PathBuf>,
    /// Held across a case's look-up and pull of an image it needs: the run pulls one image at a
    /// time, as the kubelet does by default (`serializeImagePulls`).
    turn: tokio::sync::Mutex<()>,
}

impl PulledImages {
    /// An empty set; with `record`, every image noted is also appended to that file.
    pub fn new(record: Option<PathBuf>) -> Self {
        Self {
            images: Mutex::new(BTreeSet::new()),
            record,
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Waits for the run's turn to pull, held until the guard drops.
    pub async fn one_at_a_time(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// Notes an image the run pulled.
    pub fn note(&self, image: &str) {
        let fresh = self
            .images
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(image.to_owned());
        if let (true, Some(record)) = (fresh, &self.record) {
            // Best effort: the in-memory set still drives the removal at the run's end.
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(record)
                .and_then(|mut file| writeln!(file, "{image}"));
        }
    }

    /// Takes every image noted so far.
    pub fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.images.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Forgets the record file, once every image in it is removed.
    pub fn forget_record(&self) {
        if let Some(record) = &self.record {
            let _ = std::fs::remove_file(record);
        }
    }
}

/// The record file of run `run_id`'s pulled images in a lease directory.
pub fn record_path(lease_dir: &Path, run_id: &str) -> PathBuf {
    lease_dir.join(format!("{run_id}.images"))
}

/// The images a record file lists (none when it is absent or unreadable).
pub fn read_record(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noted_images_are_recorded_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(dir.path(), "r1");
        let pulled = PulledImages::new(Some(path.clone()));
        pulled.note("b:1");
        pulled.note("a:1");
        pulled.note("b:1");
        assert_eq!(read_record(&path), ["a:1", "b:1"]);
        assert_eq!(pulled.take().len(), 2);
        pulled.forget_record();
        assert!(read_record(&path).is_empty());
    }
}
