//! The labels a kubelet writes, which a mock told which kubelet it serves holds RunPodSandbox
//! and CreateContainer to: the seed kubelet marks everything `io.kubernetes.managed=true` and
//! reads nothing without it; today's kubelet never writes it. The runner tells every mock it
//! starts, so each embedded case proves on the wire that its objects carry the chosen
//! kubelet's labels; the fields every kubelet always sets are the profile's requirements
//! (`profile::Requirement`), which the runner turns on too.

use std::collections::BTreeMap;

use super::error::RpcError;
use super::MockRuntime;
use crate::cri::labels;

/// The kubelet whose labels a mock expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletWire {
    /// The 2016 seed's: it marks every object `io.kubernetes.managed=true`.
    Seed,
    /// Today's: it never writes that label.
    Current,
}

impl MockRuntime {
    /// This mock, refusing a RunPodSandbox or CreateContainer whose labels `kubelet` would
    /// never write (InvalidArgument, naming the label).
    #[must_use]
    pub fn expecting_kubelet(self, kubelet: KubeletWire) -> Self {
        self.lock().kubelet_wire = Some(kubelet);
        self
    }
}

/// Why the labels of a `method` request are not ones `kubelet` writes.
pub(crate) fn check_labels(
    method: &'static str,
    kubelet: KubeletWire,
    labels: &BTreeMap<String, String>,
) -> Result<(), RpcError> {
    let marked = labels.get(labels::MANAGED).is_some_and(|v| v == "true");
    let what = match (kubelet, marked) {
        (KubeletWire::Seed, false) => format!(
            "config.labels lack {}=true, which the seed kubelet writes on everything",
            labels::MANAGED
        ),
        (KubeletWire::Current, _) if labels.contains_key(labels::MANAGED) => format!(
            "config.labels hold {}, which today's kubelet never writes",
            labels::MANAGED
        ),
        _ => return Ok(()),
    };
    Err(RpcError::UnlikeKubelet { method, what })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(managed: bool) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([(labels::POD_NAME.to_owned(), "web".to_owned())]);
        if managed {
            labels.insert(labels::MANAGED.to_owned(), "true".to_owned());
        }
        labels
    }

    #[test]
    fn the_managed_label_goes_with_the_seed_only() {
        assert!(check_labels("RunPodSandbox", KubeletWire::Seed, &marked(true)).is_ok());
        assert!(check_labels("RunPodSandbox", KubeletWire::Current, &marked(false)).is_ok());
        let why = check_labels("RunPodSandbox", KubeletWire::Current, &marked(true))
            .expect_err("today's kubelet never writes it")
            .to_string();
        assert!(why.contains("never writes"), "{why}");
        let why = check_labels("CreateContainer", KubeletWire::Seed, &marked(false))
            .expect_err("the seed always writes it")
            .to_string();
        assert!(why.contains("seed kubelet writes"), "{why}");
    }
}
