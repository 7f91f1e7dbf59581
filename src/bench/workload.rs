//! critest's five benchmarks, each as the calls one iteration makes and times. The objects an
//! iteration makes carry the run's labels (so `cri-harness clean --run-id` finds what an
//! interrupted bench left) and are removed by the iteration itself, even when a call fails.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::cri::{labels, namespace_options, v1, CallError, Container, CriClient, PodSandbox};
use crate::world::DEFAULT_COMMAND;

/// The kubelet's smallest grace period (`minimumGracePeriodInSeconds`): the default command
/// exits on SIGTERM at once, so the grace only bounds a runtime that does not deliver it.
pub const STOP_GRACE_SECONDS: i64 = 2;

/// One of critest v1.26.1's benchmarks (`pkg/benchmark/*.go`), under a name for flags and JSON.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::IntoStaticStr,
)]
#[strum(serialize_all = "snake_case")]
pub enum Benchmark {
    /// A sandbox run, its status read, stopped and removed.
    PodLifecycle,
    /// A container created, started, its status read, stopped and removed, in a sandbox each
    /// worker makes once beforehand (untimed).
    ContainerLifecycle,
    /// A sandbox and a container in it from scratch: run, create, start, then the sandbox
    /// stopped and removed with the container in it.
    PodAndContainer,
    /// An image pulled, its status read and removed, one iteration at a time whatever the
    /// workers: they would share the one image, and a removal racing a pull fails the pull
    /// (containerd 1.6 answers NotFound creating the image's reference).
    ImageLifecycle,
    /// Every image listed.
    ImageListing,
}

impl Benchmark {
    /// Every benchmark, in the order a run takes them (the order).
    pub const ALL: [Self; 5] = [
        Self::PodLifecycle,
        Self::ContainerLifecycle,
        Self::PodAndContainer,
        Self::ImageLifecycle,
        Self::ImageListing,
    ];

    /// The critest spec this benchmark mirrors, by its own words.
    pub fn critest_spec(self) -> &'static str {
        match self {
            Self::PodLifecycle => "benchmark about lifecycle of PodSandbox",
            Self::ContainerLifecycle => "benchmark about basic operations on Container",
            Self::PodAndContainer => "benchmark about start a container from scratch",
            Self::ImageLifecycle => "benchmark about basic operations on Image",
            Self::ImageListing => "benchmark about listing Image",
        }
    }

    /// The timed operations of one iteration, in call order.
    pub fn operations(self) -> &'static [&'static str] {
        match self {
            Self::PodLifecycle => &[
                "run_pod_sandbox",
                "pod_sandbox_status",
                "stop_pod_sandbox",
                "remove_pod_sandbox",
            ],
            Self::ContainerLifecycle => &[
                "create_container",
                "start_container",
                "container_status",
                "stop_container",
                "remove_container",
            ],
            // `total` is what critest times; `to_running` stops once the container runs.
            Self::PodAndContainer => &["to_running", "total"],
            Self::ImageLifecycle => &["pull_image", "image_status", "remove_image"],
            Self::ImageListing => &["list_images"],
        }
    }

    /// How many of `parallel` workers it runs on (see [`Self::ImageLifecycle`]).
    pub fn workers(self, parallel: usize) -> usize {
        match self {
            Self::ImageLifecycle => 1,
            _ => parallel.max(1),
        }
    }

    /// Whether its containers need the benchmark image pulled beforehand.
    pub fn needs_image(self) -> bool {
        matches!(self, Self::ContainerLifecycle | Self::PodAndContainer)
    }
}

/// What every iteration of a run shares.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// The client the calls go through.
    pub client: CriClient,
    /// The run's id, on every object's labels.
    pub run_id: String,
    /// RuntimeClass handler for RunPodSandbox ("" for the runtime's default).
    pub runtime_handler: String,
    /// The image the containers run.
    pub image: String,
    /// The image the image benchmark pulls and removes: one no case or container uses.
    pub pulled_image: String,
}

/// One sample list per operation, in [`Benchmark::operations`] order.
pub(crate) type Samples = Vec<Vec<Duration>>;

/// A sandbox a worker keeps across iterations.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSandbox {
    id: String,
    config: v1::PodSandboxConfig,
}

/// Runs `call`, adding its duration to operation `op`'s samples if it succeeds.
async fn timed<T>(
    samples: &mut Samples,
    op: usize,
    call: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    let started = Instant::now();
    let result = call.await;
    if result.is_ok() {
        if let Some(list) = samples.get_mut(op) {
            list.push(started.elapsed());
        }
    }
    result
}

impl Context {
    fn namespace(&self) -> String {
        format!("crih-{}-bench", self.run_id)
    }

    /// A sandbox config unique to this benchmark, worker and iteration, labelled as the run's.
    fn sandbox_config(&self, tag: &str, worker: usize, iteration: usize) -> v1::PodSandboxConfig {
        let name = format!("bench-{tag}-{worker}-{iteration}");
        let uid = format!("{}-{name}", self.run_id);
        let namespace = self.namespace();
        let labels = BTreeMap::from([
            (labels::RUN_ID.to_owned(), self.run_id.clone()),
            (labels::POD_UID.to_owned(), uid.clone()),
            (labels::POD_NAME.to_owned(), name.clone()),
            (labels::POD_NAMESPACE.to_owned(), namespace.clone()),
        ]);
        PodSandbox::new(&name, &namespace, &uid)
            .network(false)
            .labels(labels)
            .build()
    }

    /// A container of the default command in the sandbox of `sandbox`, labelled as its pod's.
    fn container_config(&self, sandbox: &v1::PodSandboxConfig, name: &str) -> v1::ContainerConfig {
        let mut labels = sandbox.labels.clone();
        labels.insert(labels::CONTAINER_NAME.to_owned(), name.to_owned());
        Container::new(name, &self.image, namespace_options(false))
            .command(DEFAULT_COMMAND.iter().map(|s| (*s).to_owned()).collect())
            .labels(labels)
            .build()
    }

    /// Stops and removes a sandbox, ignoring failures: the run's final sweep reports what stays.
    async fn discard_sandbox(&self, id: &str) {
        let _ = self.client.stop_pod_sandbox(id).await;
        let _ = self.client.remove_pod_sandbox(id).await;
    }

    /// Stops and removes a container, ignoring failures, as [`Self::discard_sandbox`].
    async fn discard_container(&self, id: &str) {
        let _ = self.client.stop_container(id, 0).await;
        let _ = self.client.remove_container(id).await;
    }

    /// What `worker` sets up before its first iteration of `benchmark` (untimed).
    pub async fn setup(
        &self,
        benchmark: Benchmark,
        worker: usize,
    ) -> Result<Option<WorkerSandbox>, CallError> {
        if benchmark != Benchmark::ContainerLifecycle {
            return Ok(None);
        }
        let config = self.sandbox_config("container-pod", worker, 0);
        let id = self
            .client
            .run_pod_sandbox(config.clone(), &self.runtime_handler)
            .await?;
        Ok(Some(WorkerSandbox { id, config }))
    }

    /// Undoes [`Self::setup`].
    pub async fn teardown(&self, sandbox: Option<WorkerSandbox>) {
        if let Some(sandbox) = sandbox {
            self.discard_sandbox(&sandbox.id).await;
        }
    }

    /// One iteration of `benchmark`, adding to `samples`; the first failed call ends it.
    pub async fn iteration(
        &self,
        benchmark: Benchmark,
        sandbox: Option<&WorkerSandbox>,
        worker: usize,
        iteration: usize,
        samples: &mut Samples,
    ) -> Result<(), CallError> {
        match (benchmark, sandbox) {
            (Benchmark::PodLifecycle, _) => self.pod_lifecycle(worker, iteration, samples).await,
            (Benchmark::ContainerLifecycle, Some(sandbox)) => {
                self.container_lifecycle(sandbox, worker, iteration, samples)
                    .await
            }
            // `setup` always makes the sandbox of a container lifecycle; without one there is
            // nothing to time.
            (Benchmark::ContainerLifecycle, None) => Ok(()),
            (Benchmark::PodAndContainer, _) => {
                self.pod_and_container(worker, iteration, samples).await
            }
            (Benchmark::ImageLifecycle, _) => self.image_lifecycle(samples).await,
            (Benchmark::ImageListing, _) => {
                timed(samples, 0, self.client.list_images(None)).await?;
                Ok(())
            }
        }
    }

    async fn pod_lifecycle(
        &self,
        worker: usize,
        iteration: usize,
        samples: &mut Samples,
    ) -> Result<(), CallError> {
        let config = self.sandbox_config("pod", worker, iteration);
        let client = &self.client;
        let id = timed(
            samples,
            0,
            client.run_pod_sandbox(config, &self.runtime_handler),
        )
        .await?;
        let rest = async {
            timed(samples, 1, client.pod_sandbox_status(&id)).await?;
            timed(samples, 2, client.stop_pod_sandbox(&id)).await?;
            timed(samples, 3, client.remove_pod_sandbox(&id)).await
        }
        .await;
        if rest.is_err() {
            self.discard_sandbox(&id).await;
        }
        rest
    }

    async fn container_lifecycle(
        &self,
        sandbox: &WorkerSandbox,
        worker: usize,
        iteration: usize,
        samples: &mut Samples,
    ) -> Result<(), CallError> {
        let client = &self.client;
        let name = format!("bench-container-{worker}-{iteration}");
        let config = self.container_config(&sandbox.config, &name);
        let id = timed(
            samples,
            0,
            client.create_container(&sandbox.id, config, sandbox.config.clone()),
        )
        .await?;
        let rest = async {
            timed(samples, 1, client.start_container(&id)).await?;
            timed(samples, 2, client.container_status(&id)).await?;
            timed(samples, 3, client.stop_container(&id, STOP_GRACE_SECONDS)).await?;
            timed(samples, 4, client.remove_container(&id)).await
        }
        .await;
        if rest.is_err() {
            self.discard_container(&id).await;
        }
        rest
    }

    async fn pod_and_container(
        &self,
        worker: usize,
        iteration: usize,
        samples: &mut Samples,
    ) -> Result<(), CallError> {
        let client = &self.client;
        let config = self.sandbox_config("scratch", worker, iteration);
        let started = Instant::now();
        let id = client
            .run_pod_sandbox(config.clone(), &self.runtime_handler)
            .await?;
        let rest = async {
            let container = self.container_config(&config, "bench-container");
            let container = client.create_container(&id, container, config).await?;
            client.start_container(&container).await?;
            let running = started.elapsed();
            // As critest does: the sandbox's stop takes its container with it.
            client.stop_pod_sandbox(&id).await?;
            client.remove_pod_sandbox(&id).await?;
            let total = started.elapsed();
            if let [to_running, all, ..] = samples.as_mut_slice() {
                to_running.push(running);
                all.push(total);
            }
            Ok(())
        }
        .await;
        if rest.is_err() {
            self.discard_sandbox(&id).await;
        }
        rest
    }

    async fn image_lifecycle(&self, samples: &mut Samples) -> Result<(), CallError> {
        let client = &self.client;
        timed(samples, 0, client.pull_image(&self.pulled_image)).await?;
        timed(samples, 1, client.image_status(&self.pulled_image)).await?;
        timed(samples, 2, client.remove_image(&self.pulled_image)).await
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr as _;

    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::pods_take_every_worker(Benchmark::PodLifecycle, 4, 4)]
    #[case::containers_take_every_worker(Benchmark::ContainerLifecycle, 2, 2)]
    #[case::zero_workers_is_one(Benchmark::ImageListing, 0, 1)]
    #[case::the_shared_image_takes_one(Benchmark::ImageLifecycle, 4, 1)]
    fn workers_follow_parallel_except_for_the_shared_image(
        #[case] benchmark: Benchmark,
        #[case] parallel: usize,
        #[case] expected: usize,
    ) {
        assert_eq!(benchmark.workers(parallel), expected);
    }

    #[test]
    fn every_benchmark_is_named_in_snake_case_and_parses_back() {
        for benchmark in Benchmark::ALL {
            let name = benchmark.to_string();
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            assert_eq!(Benchmark::from_str(&name), Ok(benchmark));
        }
    }

    #[test]
    fn every_benchmark_times_at_least_one_operation_and_names_its_critest_spec() {
        for benchmark in Benchmark::ALL {
            assert!(!benchmark.operations().is_empty(), "{benchmark}");
            assert!(
                benchmark.critest_spec().starts_with("benchmark about"),
                "{benchmark}"
            );
        }
    }
}
