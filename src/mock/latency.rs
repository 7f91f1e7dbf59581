//! How long the mock's image calls take: nothing unless asked. A case that needs a call to
//! last (a pull past a 1 ms deadline, removals that overlap) says so with `mock_latency:`, and
//! `cri-harness mock` serves foreign clients with a registry's latency by default; everything
//! else, property runs included, gets its answers at once.

use std::time::Duration;

use super::MockRuntime;

/// The time the mock's image calls take, in milliseconds (a case's `mock_latency:` is read
/// into one by the runner).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// Pulling an image the mock does not hold.
    pub pull_ms: u64,
    /// Removing an image the mock holds; a removal arriving meanwhile overlaps it.
    pub remove_ms: u64,
}

impl Latency {
    /// What `cri-harness mock` models for foreign clients: far above a 1 ms deadline (critest's
    /// pull-timeout spec), far below any client's own.
    pub const REGISTRY: Latency = Latency {
        pull_ms: 50,
        remove_ms: 100,
    };

    /// The time a pull of an absent image takes, if any.
    pub(crate) fn pull(self) -> Option<Duration> {
        (self.pull_ms > 0).then(|| Duration::from_millis(self.pull_ms))
    }

    /// The time a removal takes, if any.
    pub(crate) fn remove(self) -> Option<Duration> {
        (self.remove_ms > 0).then(|| Duration::from_millis(self.remove_ms))
    }
}

impl MockRuntime {
    /// This mock, its image calls taking `latency`.
    pub fn with_latency(self, latency: Latency) -> Self {
        self.lock().latency = latency;
        self
    }
}
