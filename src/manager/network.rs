//! The network plugin the seed manager calls to tear a pod's network down before stopping its
//! sandboxes. The harness runs no CNI itself: it ships a no-op plugin and one that records calls.

use std::fmt::Debug;
use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;
use serde::Serialize;

use super::ContainerId;

/// A pod network plugin (the seed kubelet's `network.NetworkPlugin`, reduced to what KillPod uses).
pub trait NetworkPlugin: Send + Sync + Debug {
    /// The plugin's name, used in teardown error messages.
    fn name(&self) -> &str;

    /// Tears down the network of the pod whose sandbox is `id`; the error is the plugin's text.
    fn tear_down_pod<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        id: &'a ContainerId,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// Name of the kubelet's default plugin, which does nothing.
pub const NOOP_NETWORK_PLUGIN_NAME: &str = "kubernetes.io/no-op";

/// The kubelet's default plugin: every teardown succeeds without doing anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopNetworkPlugin;

impl NetworkPlugin for NoopNetworkPlugin {
    fn name(&self) -> &str {
        NOOP_NETWORK_PLUGIN_NAME
    }

    fn tear_down_pod<'a>(
        &'a self,
        _namespace: &'a str,
        _name: &'a str,
        _id: &'a ContainerId,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

/// Name of [`RecordingNetworkPlugin`].
pub const RECORDING_NETWORK_PLUGIN_NAME: &str = "cri-harness.io/recording";

/// One teardown request a [`RecordingNetworkPlugin`] received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeardownCall {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// The sandbox id (without the runtime type).
    pub sandbox_id: String,
}

/// A plugin that records every teardown in call order and, if built with
/// [`failing`](Self::failing), fails each one after recording it.
#[derive(Debug, Default)]
pub struct RecordingNetworkPlugin {
    calls: Mutex<Vec<TeardownCall>>,
    failure: Option<String>,
}

impl RecordingNetworkPlugin {
    /// A plugin whose teardowns succeed.
    pub fn new() -> Self {
        Self::default()
    }

    /// A plugin whose teardowns fail with `message`.
    pub fn failing(message: impl Into<String>) -> Self {
        Self {
            calls: Mutex::default(),
            failure: Some(message.into()),
        }
    }

    /// Every teardown so far, oldest first.
    pub fn calls(&self) -> Vec<TeardownCall> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<TeardownCall>> {
        // A panic while holding the lock leaves a consistent vector; keep using it.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl NetworkPlugin for RecordingNetworkPlugin {
    fn name(&self) -> &str {
        RECORDING_NETWORK_PLUGIN_NAME
    }

    fn tear_down_pod<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        id: &'a ContainerId,
    ) -> BoxFuture<'a, Result<(), String>> {
        self.lock().push(TeardownCall {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            sandbox_id: id.id.clone(),
        });
        let outcome = match &self.failure {
            Some(message) => Err(message.clone()),
            None => Ok(()),
        };
        Box::pin(async move { outcome })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(id: &str) -> ContainerId {
        ContainerId {
            r#type: "mock".to_owned(),
            id: id.to_owned(),
        }
    }

    #[tokio::test]
    async fn recording_plugin_keeps_calls_in_order() {
        let plugin = RecordingNetworkPlugin::new();
        plugin
            .tear_down_pod("ns", "a", &sandbox("s1"))
            .await
            .unwrap();
        plugin
            .tear_down_pod("ns", "b", &sandbox("s2"))
            .await
            .unwrap();
        let names: Vec<_> = plugin
            .calls()
            .into_iter()
            .map(|c| (c.name, c.sandbox_id))
            .collect();
        assert_eq!(
            names,
            [
                ("a".to_owned(), "s1".to_owned()),
                ("b".to_owned(), "s2".to_owned())
            ]
        );
    }

    #[tokio::test]
    async fn failing_plugin_records_then_fails() {
        let plugin = RecordingNetworkPlugin::failing("cni exploded");
        let err = plugin
            .tear_down_pod("ns", "a", &sandbox("s1"))
            .await
            .unwrap_err();
        assert_eq!(err, "cni exploded");
        assert_eq!(plugin.calls().len(), 1);
    }

    #[tokio::test]
    async fn noop_plugin_has_the_kubelet_default_name_and_succeeds() {
        let plugin = NoopNetworkPlugin;
        assert_eq!(plugin.name(), "kubernetes.io/no-op");
        assert_eq!(
            plugin.tear_down_pod("ns", "a", &sandbox("s1")).await,
            Ok(())
        );
    }
}
