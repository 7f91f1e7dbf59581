//! `stream_list`: one of the CRIListStreaming RPCs, held to api.proto's rules for them: every
//! message carries at least one item, no item comes twice, the stream ends cleanly, and the
//! items are those the unary twin lists for the same filter. The twin is asked just before and
//! just after the stream, so that objects of other cases coming and going in between cannot
//! fail the check: an item both answers list must be streamed, and an item neither lists must
//! not be. A runtime without the feature answers Unimplemented: cases declare
//! `needs: [list_streaming]`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::image_status::{check_image, named};
use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{expect_eq, mismatch, show, sorted, StepError, World};

/// Which streaming list a step calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    /// StreamPodSandboxes, twin of ListPodSandbox.
    #[default]
    Sandboxes,
    /// StreamContainers, twin of ListContainers.
    Containers,
    /// StreamContainerStats, twin of ListContainerStats.
    ContainerStats,
    /// StreamPodSandboxStats, twin of ListPodSandboxStats.
    SandboxStats,
    /// StreamPodSandboxMetrics, twin of ListPodSandboxMetrics (no filter).
    SandboxMetrics,
    /// StreamImages, twin of ListImages.
    Images,
}

impl ListKind {
    /// True when its items are containers (their `id` filter names a container).
    fn of_containers(self) -> bool {
        matches!(self, ListKind::Containers | ListKind::ContainerStats)
    }
}

/// `stream_list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `stream_list` step: `list`, `id`, `sandbox`, `labels`, `image`, `expect`"
)]
pub struct StreamList {
    /// Which list: `sandboxes`, `containers`, `container_stats`, `sandbox_stats`,
    /// `sandbox_metrics` or `images`.
    pub list: ListKind,
    /// Only the object with this alias's id (a sandbox, or a container for the container
    /// lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only the containers (or their stats) of this sandbox alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Only objects with all these labels (besides the case's own, always sent).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// For `images`: only this image (a symbol or a reference); none lists every image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: StreamListExpect,
}

/// What `stream_list` checks besides the rules every stream is held to.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `stream_list` expectation: `items`, `images`"
)]
pub struct StreamListExpect {
    /// Exactly these of the case's sandboxes or containers are streamed, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<String>>,
    /// For `images`: these images (symbols or references) are streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<String>>,
}

/// The items of a list, each by the id that names it.
type Ids = Vec<String>;

impl StreamList {
    /// The label selector sent: the case's own labels and the step's.
    fn selector(&self, world: &World) -> BTreeMap<String, String> {
        let mut selector = world.ids.own_selector();
        selector.extend(self.labels.clone());
        selector
    }

    /// The id the step's `id` alias names, or empty.
    fn id(&self, world: &World) -> Result<String, StepError> {
        Ok(match &self.id {
            Some(alias) if self.list.of_containers() => world.aliases.container(alias)?.id.clone(),
            Some(alias) => world.aliases.sandbox(alias)?.id.clone(),
            None => String::new(),
        })
    }

    /// The sandbox id the step's `sandbox` alias names, or empty.
    fn sandbox_id(&self, world: &World) -> Result<String, StepError> {
        Ok(match &self.sandbox {
            Some(alias) => world.aliases.sandbox(alias)?.id.clone(),
            None => String::new(),
        })
    }

    /// The ids the unary twin lists for the step's filter.
    async fn unary(&self, world: &World) -> Result<Ids, StepError> {
        let runtime = &world.runtime;
        let (id, sandbox, labels) = (
            self.id(world)?,
            self.sandbox_id(world)?,
            self.selector(world),
        );
        Ok(match self.list {
            ListKind::Sandboxes => runtime
                .list_pod_sandbox(Some(sandbox_filter(id, labels)))
                .await?
                .into_iter()
                .map(|s| s.id)
                .collect(),
            ListKind::Containers => runtime
                .list_containers(Some(container_filter(id, sandbox, labels)))
                .await?
                .into_iter()
                .map(|c| c.id)
                .collect(),
            ListKind::ContainerStats => runtime
                .list_container_stats(Some(container_stats_filter(id, sandbox, labels)))
                .await?
                .iter()
                .map(container_stats_id)
                .collect(),
            ListKind::SandboxStats => runtime
                .list_pod_sandbox_stats(Some(sandbox_stats_filter(id, labels)))
                .await?
                .iter()
                .map(sandbox_stats_id)
                .collect(),
            ListKind::SandboxMetrics => runtime
                .list_pod_sandbox_metrics()
                .await?
                .into_iter()
                .map(|m| m.pod_sandbox_id)
                .collect(),
            ListKind::Images => runtime
                .list_images(self.image_filter(world).as_deref())
                .await?
                .into_iter()
                .map(|i| i.id)
                .collect(),
        })
    }

    /// The streamed ids, message by message.
    async fn stream(&self, world: &World) -> Result<Vec<Ids>, StepError> {
        let runtime = &world.runtime;
        let (id, sandbox, labels) = (
            self.id(world)?,
            self.sandbox_id(world)?,
            self.selector(world),
        );
        fn ids<T>(messages: Vec<Vec<T>>, id: impl Fn(&T) -> String) -> Vec<Ids> {
            messages
                .into_iter()
                .map(|m| m.iter().map(&id).collect())
                .collect()
        }
        Ok(match self.list {
            ListKind::Sandboxes => ids(
                runtime
                    .stream_pod_sandboxes(Some(sandbox_filter(id, labels)))
                    .await?,
                |s| s.id.clone(),
            ),
            ListKind::Containers => ids(
                runtime
                    .stream_containers(Some(container_filter(id, sandbox, labels)))
                    .await?,
                |c| c.id.clone(),
            ),
            ListKind::ContainerStats => ids(
                runtime
                    .stream_container_stats(Some(container_stats_filter(id, sandbox, labels)))
                    .await?,
                container_stats_id,
            ),
            ListKind::SandboxStats => ids(
                runtime
                    .stream_pod_sandbox_stats(Some(sandbox_stats_filter(id, labels)))
                    .await?,
                sandbox_stats_id,
            ),
            ListKind::SandboxMetrics => ids(runtime.stream_pod_sandbox_metrics().await?, |m| {
                m.pod_sandbox_id.clone()
            }),
            ListKind::Images => ids(
                runtime
                    .stream_images(self.image_filter(world).as_deref())
                    .await?,
                |i| i.id.clone(),
            ),
        })
    }

    fn image_filter(&self, world: &World) -> Option<String> {
        let names = world.image_names();
        self.image.as_deref().map(|image| names.resolve(image))
    }
}

fn sandbox_filter(id: String, label_selector: BTreeMap<String, String>) -> v1::PodSandboxFilter {
    v1::PodSandboxFilter {
        id,
        state: None,
        label_selector,
    }
}

fn container_filter(
    id: String,
    pod_sandbox_id: String,
    label_selector: BTreeMap<String, String>,
) -> v1::ContainerFilter {
    v1::ContainerFilter {
        id,
        state: None,
        pod_sandbox_id,
        label_selector,
    }
}

fn container_stats_filter(
    id: String,
    pod_sandbox_id: String,
    label_selector: BTreeMap<String, String>,
) -> v1::ContainerStatsFilter {
    v1::ContainerStatsFilter {
        id,
        pod_sandbox_id,
        label_selector,
    }
}

fn sandbox_stats_filter(
    id: String,
    label_selector: BTreeMap<String, String>,
) -> v1::PodSandboxStatsFilter {
    v1::PodSandboxStatsFilter { id, label_selector }
}

fn container_stats_id(stats: &v1::ContainerStats) -> String {
    stats
        .attributes
        .as_ref()
        .map_or_else(String::new, |a| a.id.clone())
}

fn sandbox_stats_id(stats: &v1::PodSandboxStats) -> String {
    stats
        .attributes
        .as_ref()
        .map_or_else(String::new, |a| a.id.clone())
}

/// Checks the rules every stream is held to on its own: no empty message, no item twice;
/// answers the streamed ids.
fn check_messages(world: &World, messages: &[Ids]) -> Result<BTreeSet<String>, StepError> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (n, message) in messages.iter().enumerate() {
        if message.is_empty() {
            return Err(mismatch(
                format!("messages[{n}]"),
                "at least one item",
                "none",
            ));
        }
        for id in message {
            if let Some(first) = seen.insert(id.as_str(), n) {
                return Err(mismatch(
                    format!("items.{}", world.alias_of(id)),
                    "in exactly one message",
                    format!("in messages {first} and {n}"),
                ));
            }
        }
    }
    Ok(seen.keys().map(|id| (*id).to_owned()).collect())
}

/// Holds the streamed ids to the unary twin's answers just before and just after the stream:
/// what both listed must be streamed, what neither listed must not be.
fn check_against_twin(
    world: &World,
    streamed: &BTreeSet<String>,
    before: &BTreeSet<String>,
    after: &BTreeSet<String>,
) -> Result<(), StepError> {
    let missing: Vec<String> = before
        .intersection(after)
        .filter(|id| !streamed.contains(*id))
        .map(|id| world.alias_of(id))
        .collect();
    if !missing.is_empty() {
        return Err(mismatch(
            "items",
            "every item the unary twin listed before and after the stream",
            format!("{} missing", show(&sorted(missing))),
        ));
    }
    let extra: Vec<String> = streamed
        .iter()
        .filter(|id| !before.contains(*id) && !after.contains(*id))
        .map(|id| world.alias_of(id))
        .collect();
    if !extra.is_empty() {
        return Err(mismatch(
            "items",
            "only items the unary twin lists for the same filter",
            format!("{} as well", show(&sorted(extra))),
        ));
    }
    Ok(())
}

impl StepDef for StreamList {
    const NAME: &'static str = "stream_list";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Calls a CRIListStreaming RPC with the case's filter and checks api.proto's rules: no empty message, no item twice, and the items its unary twin lists (asked just before and after); optionally which of the case's objects, or which images, answer.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<StreamListExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        let filters = !matches!(self.list, ListKind::SandboxMetrics | ListKind::Images);
        if let Some(alias) = &self.id {
            if !filters {
                return Err(CheckError::rule(
                    "id",
                    "only a sandbox, container or stats list takes an id",
                ));
            }
            if self.list.of_containers() {
                scope.container(alias)?;
            } else {
                scope.sandbox(alias)?;
            }
        }
        if let Some(alias) = &self.sandbox {
            if !self.list.of_containers() {
                return Err(CheckError::rule(
                    "sandbox",
                    "only a container list takes a sandbox",
                ));
            }
            scope.sandbox(alias)?;
        }
        if !self.labels.is_empty() && !filters {
            return Err(CheckError::rule(
                "labels",
                "only a sandbox, container or stats list takes labels",
            ));
        }
        if let Some(image) = &self.image {
            if self.list != ListKind::Images {
                return Err(CheckError::rule(
                    "image",
                    "only the images list takes an image",
                ));
            }
            check_image("image", image)?;
        }
        for alias in self.expect.items.iter().flatten() {
            match self.list {
                ListKind::Containers | ListKind::ContainerStats => scope.container(alias)?,
                ListKind::Images => {
                    return Err(CheckError::rule(
                        "expect.items",
                        "images are named in `expect.images`",
                    ))
                }
                _ => scope.sandbox(alias)?,
            }
        }
        if self.expect.images.is_some() && self.list != ListKind::Images {
            return Err(CheckError::rule(
                "expect.images",
                "only the images list streams images",
            ));
        }
        for image in self.expect.images.iter().flatten() {
            check_image("expect.images", image)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let world = &*world;
        let before: BTreeSet<String> = self.unary(world).await?.into_iter().collect();
        let messages = self.stream(world).await?;
        let after: BTreeSet<String> = self.unary(world).await?.into_iter().collect();
        let streamed = check_messages(world, &messages)?;
        check_against_twin(world, &streamed, &before, &after)?;
        self.expect_items(world, &streamed).await
    }
}

impl StreamList {
    async fn expect_items(
        &self,
        world: &World,
        streamed: &BTreeSet<String>,
    ) -> Result<(), StepError> {
        if let Some(wanted) = &self.expect.items {
            // Only the case's own objects: a list without a filter holds other cases' too.
            let actual = sorted(
                streamed
                    .iter()
                    .filter(|id| world.aliases.alias_of(id).is_some())
                    .map(|id| world.alias_of(id)),
            );
            expect_eq(
                "items",
                &show(&sorted(wanted.iter().cloned())),
                &show(&actual),
            )?;
        }
        if let Some(images) = &self.expect.images {
            let names = world.image_names().clone();
            for image in images {
                let status = world.runtime.image_status(&names.resolve(image)).await?;
                let Some(id) = status.map(|i| i.id) else {
                    return Err(mismatch(
                        format!("images.{image}"),
                        "an image the runtime holds",
                        format!("no image under {}", named(&names, image)),
                    ));
                };
                if !streamed.contains(&id) {
                    return Err(mismatch(format!("images.{image}"), "streamed", "absent"));
                }
            }
        }
        Ok(())
    }
}
