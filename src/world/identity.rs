//! Who a case's pods are: each pod alias gets a UID, a name and a namespace. By default all
//! three are made unique per run and case; a case may fix them (as the kubelet's own test
//! fixtures do), and then the run's id still goes into the UID on the wire, where the runtime
//! needs uniqueness, and redaction shows the fixed value.

use std::collections::{BTreeMap, BTreeSet};

use crate::cri::labels;
use serde::{Deserialize, Serialize};

use crate::manager::KubeletProfile;
use crate::observe::Redactor;

/// The pod UID a case gives a pod alias (`""` stays empty: the pod of unlabelled containers).
pub fn pod_uid(run_id: &str, case_no: usize, pod: &str) -> String {
    if pod.is_empty() {
        String::new()
    } else {
        format!("{run_id}-{case_no}-{pod}")
    }
}

/// What every case namespace of run `run_id` starts with.
pub fn namespace_prefix(run_id: &str) -> String {
    format!("crih-{run_id}-")
}

/// The namespace of a case.
pub fn namespace(run_id: &str, case_no: usize) -> String {
    format!("{}{case_no}", namespace_prefix(run_id))
}

/// A pod identity a case fixes, as the kubelet's test fixtures do (`uid: "12345678"`, `name:
/// foo`, `namespace: new`). The run's id still goes into the UID on the wire, where the runtime
/// needs it unique; snapshots show the fixed value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a pod identity: `uid`, `name`, `namespace`"
)]
pub struct PodIdentity {
    /// `metadata.uid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// `metadata.name` (default: the pod alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `metadata.namespace` (default: the case's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// One pod as the runtime sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pod {
    /// The UID on the wire.
    pub uid: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
}

/// The run, the case and its pods.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// The run's id, on every object's labels.
    pub run_id: String,
    /// The case's number in the run.
    pub case_no: usize,
    /// The case's own namespace (pods that fix theirs use that instead).
    pub namespace: String,
    pods: BTreeMap<String, Pod>,
    /// The kubelet whose labels the case's objects carry: only the seed's write
    /// `io.kubernetes.managed`.
    kubelet: KubeletProfile,
}

impl Identity {
    /// The identities of every pod the case mentions, fixed ones as the case asks, labelled
    /// as `kubelet` labels its objects.
    pub fn new(
        run_id: &str,
        case_no: usize,
        mentioned: &BTreeSet<String>,
        fixed: &BTreeMap<String, PodIdentity>,
        kubelet: KubeletProfile,
    ) -> Self {
        let namespace = namespace(run_id, case_no);
        let pods = mentioned
            .iter()
            .map(|alias| {
                let fixed = fixed.get(alias);
                let uid = match fixed.and_then(|f| f.uid.as_deref()) {
                    Some(uid) => format!("{uid}-{run_id}-{case_no}"),
                    None => pod_uid(run_id, case_no, alias),
                };
                let pod = Pod {
                    uid,
                    name: fixed
                        .and_then(|f| f.name.clone())
                        .unwrap_or_else(|| alias.clone()),
                    namespace: fixed
                        .and_then(|f| f.namespace.clone())
                        .unwrap_or_else(|| namespace.clone()),
                };
                (alias.clone(), pod)
            })
            .collect();
        Self {
            run_id: run_id.to_owned(),
            case_no,
            namespace,
            pods,
            kubelet,
        }
    }

    /// Teaches the redactor every pod's UID: the fixed value where the case gave one, else
    /// `<uid:ALIAS>`.
    pub fn teach(&self, redactor: &mut Redactor, fixed: &BTreeMap<String, PodIdentity>) {
        for (alias, pod) in &self.pods {
            match fixed.get(alias).and_then(|f| f.uid.as_deref()) {
                Some(uid) => redactor.literal_as(&pod.uid, uid),
                None => redactor.pod(&pod.uid, alias),
            }
        }
    }

    /// The pod of an alias; an alias the case never mentioned gets the default identity.
    pub fn pod(&self, alias: &str) -> Pod {
        self.pods.get(alias).cloned().unwrap_or_else(|| Pod {
            uid: pod_uid(&self.run_id, self.case_no, alias),
            name: alias.to_owned(),
            namespace: self.namespace.clone(),
        })
    }

    /// The UID of a pod alias.
    pub fn uid(&self, alias: &str) -> String {
        self.pod(alias).uid
    }

    /// Every pod's wire UID.
    pub fn uids(&self) -> BTreeSet<String> {
        self.pods.values().map(|p| p.uid.clone()).collect()
    }

    /// The pod alias of a wire UID, if it is one of the case's.
    pub fn alias_of(&self, uid: &str) -> Option<&str> {
        self.pods
            .iter()
            .find(|(_, p)| p.uid == uid)
            .map(|(alias, _)| alias.as_str())
    }

    /// Labels every object of the case carries: the run's and the case's, which no kubelet
    /// reads, and the seed kubelet's `io.kubernetes.managed` under its rules only (its
    /// readers list nothing without it; today's kubelet never writes it, so neither may a
    /// case that follows today's rules).
    pub fn base_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.own_selector();
        if !self.kubelet.is_current() {
            labels.insert(labels::MANAGED.to_owned(), "true".to_owned());
        }
        labels
    }

    /// The kubelet's `io.kubernetes.pod.*` labels of a pod alias.
    pub fn pod_labels(&self, alias: &str) -> BTreeMap<String, String> {
        let pod = self.pod(alias);
        BTreeMap::from([
            (labels::POD_UID.to_owned(), pod.uid),
            (labels::POD_NAME.to_owned(), pod.name),
            (labels::POD_NAMESPACE.to_owned(), pod.namespace),
        ])
    }

    /// A sandbox's labels: the case's, its pod's unless `pod_labels` is false, then `extra`.
    pub fn sandbox_labels(
        &self,
        pod: &str,
        pod_labels: bool,
        extra: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        let mut labels = self.base_labels();
        if pod_labels {
            labels.extend(self.pod_labels(pod));
        }
        labels.extend(extra.clone());
        labels
    }

    /// A container's labels: the case's, the pod labels of `pod` (none for `None`), its
    /// container name, then `extra`.
    pub fn container_labels(
        &self,
        pod: Option<&str>,
        name: &str,
        extra: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        let mut labels = self.base_labels();
        if let Some(pod) = pod {
            labels.extend(self.pod_labels(pod));
        }
        labels.insert(labels::CONTAINER_NAME.to_owned(), name.to_owned());
        labels.extend(extra.clone());
        labels
    }

    /// The selector for the case's own objects.
    pub fn own_selector(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (labels::RUN_ID.to_owned(), self.run_id.clone()),
            (labels::CASE.to_owned(), self.case_no.to_string()),
        ])
    }

    /// Makes pod alias `alias` the pod of a shared sandbox the case now holds: the containers
    /// it creates there carry that pod's labels, as the kubelet's name their sandbox's pod.
    pub(crate) fn adopt(&mut self, alias: &str, pod: Pod) {
        self.pods.insert(alias.to_owned(), pod);
    }

    /// A shared sandbox's labels: the run's (not the case's: no case's sweep removes it), the
    /// pool's mark, the seed kubelet's `io.kubernetes.managed` under its rules, and its pod's.
    pub(crate) fn pool_labels(&self, pod: &Pod, number: usize) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (labels::RUN_ID.to_owned(), self.run_id.clone()),
            (labels::POOL.to_owned(), number.to_string()),
            (labels::POD_UID.to_owned(), pod.uid.clone()),
            (labels::POD_NAME.to_owned(), pod.name.clone()),
            (labels::POD_NAMESPACE.to_owned(), pod.namespace.clone()),
        ]);
        if !self.kubelet.is_current() {
            labels.insert(labels::MANAGED.to_owned(), "true".to_owned());
        }
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_uids_and_namespaces_are_unique_per_run_and_case() {
        assert_eq!(pod_uid("r1", 3, "web"), "r1-3-web");
        assert_eq!(pod_uid("r1", 3, ""), "");
        assert_eq!(namespace("r1", 3), "crih-r1-3");
    }

    #[test]
    fn a_fixed_identity_keeps_its_name_and_namespace_and_a_unique_wire_uid() {
        let mentioned = BTreeSet::from(["a".to_owned(), "b".to_owned()]);
        let fixed = BTreeMap::from([(
            "a".to_owned(),
            PodIdentity {
                uid: Some("12345678".to_owned()),
                name: Some("foo".to_owned()),
                namespace: Some("new".to_owned()),
            },
        )]);
        let identity = Identity::new("r1", 2, &mentioned, &fixed, KubeletProfile::Seed);
        assert_eq!(
            identity.pod("a"),
            Pod {
                uid: "12345678-r1-2".to_owned(),
                name: "foo".to_owned(),
                namespace: "new".to_owned()
            }
        );
        assert_eq!(identity.pod("b").uid, "r1-2-b");
        assert_eq!(identity.alias_of("12345678-r1-2"), Some("a"));
        let mut redactor = Redactor::new("r1", "crih-r1-2", 2);
        identity.teach(&mut redactor, &fixed);
        assert_eq!(redactor.text("12345678-r1-2 r1-2-b"), "12345678 <uid:b>");
    }

    #[test]
    fn only_the_seeds_objects_carry_the_managed_label() {
        let mentioned = BTreeSet::from(["a".to_owned()]);
        let none = BTreeMap::new();
        let seed = Identity::new("r1", 2, &mentioned, &none, KubeletProfile::Seed);
        let current = Identity::new("r1", 2, &mentioned, &none, KubeletProfile::Current);
        let extra = BTreeMap::new();
        for (identity, managed) in [(seed, true), (current, false)] {
            let sandbox = identity.sandbox_labels("a", true, &extra);
            let container = identity.container_labels(Some("a"), "app", &extra);
            for map in [&sandbox, &container, &identity.base_labels()] {
                assert_eq!(map.contains_key(labels::MANAGED), managed, "{map:?}");
                assert_eq!(map[labels::RUN_ID], "r1");
            }
        }
    }
}
