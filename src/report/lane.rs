//! A report's lane is what ran, as the report records it: the runtime's name and version, the
//! RuntimeClass handler, the target kind (the mock in a profile, or a runtime at an endpoint)
//! and the kubelet profile. `report diff` and `report history` pair the reports of different
//! nights by it, never by the directory a report was written to: nights are named by date.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use super::model::RunReport;

/// What a run ran against and as which kubelet. A field that is `None` was not recorded by
/// the harness that wrote the report (or, for the runtime, the run never got its Version).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct LaneId {
    /// The runtime's name from its Version answer.
    pub runtime_name: Option<String>,
    /// The runtime's version from its Version answer.
    pub runtime_version: Option<String>,
    /// The RuntimeClass handler the sandboxes asked for; empty for the runtime's default.
    pub runtime_handler: String,
    /// The mock (in which profile) or a runtime at an endpoint.
    pub target: Option<TargetKind>,
    /// The kubelet profile the managers followed (`seed`, `current`).
    pub kubelet: Option<String>,
}

/// The kind of target a run had.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// The built-in mock, answering as its profile says.
    Mock {
        /// The profile's name; empty for the default one.
        profile: String,
    },
    /// A runtime at an endpoint.
    Endpoint,
}

impl LaneId {
    /// The identity `report` records. Reports of older harnesses lack the kubelet profile
    /// (left unrecorded) and the mock's profile (the default one: there was no other).
    pub fn of(report: &RunReport) -> Self {
        // `target` is set before the runtime is reached, `target_kind` only after: an
        // endpoint that never answered still reads as an endpoint.
        let target = match (report.target.as_str(), report.target_kind.as_str()) {
            ("mock", _) | ("", "mock") => Some(TargetKind::Mock {
                profile: report.mock_profile.clone(),
            }),
            ("", "") => None,
            _ => Some(TargetKind::Endpoint),
        };
        Self {
            runtime_name: report.node.runtime_name.clone(),
            runtime_version: report.node.runtime_version.clone(),
            runtime_handler: report.runtime_handler.clone(),
            target,
            kubelet: report.kubelet.clone(),
        }
    }

    /// How many of its fields were not recorded.
    fn unrecorded(&self) -> usize {
        [
            self.runtime_name.is_none(),
            self.runtime_version.is_none(),
            self.target.is_none(),
            self.kubelet.is_none(),
        ]
        .into_iter()
        .filter(|missing| *missing)
        .count()
    }

    /// True when `self` records every field `less` records, with the same value, and more.
    fn covers(&self, less: &LaneId) -> bool {
        fn agrees<T: PartialEq>(more: &Option<T>, less: &Option<T>) -> bool {
            less.is_none() || more == less
        }
        self != less
            && self.runtime_handler == less.runtime_handler
            && agrees(&self.runtime_name, &less.runtime_name)
            && agrees(&self.runtime_version, &less.runtime_version)
            && agrees(&self.target, &less.target)
            && agrees(&self.kubelet, &less.kubelet)
    }

    /// `containerd v2.1.9 (endpoint, handler runc, kubelet current)`: what the diff and the
    /// history call the lane. Fields not recorded are left out.
    pub fn label(&self) -> String {
        let runtime = match (&self.runtime_name, &self.runtime_version) {
            (Some(name), Some(version)) => format!("{name} {version}"),
            (Some(name), None) => name.clone(),
            (None, Some(version)) => version.clone(),
            (None, None) => "unknown runtime".to_owned(),
        };
        let mut details = Vec::new();
        match &self.target {
            Some(TargetKind::Mock { profile }) if profile.is_empty() => {
                details.push("mock".to_owned());
            }
            Some(TargetKind::Mock { profile }) => details.push(format!("mock profile {profile}")),
            Some(TargetKind::Endpoint) => details.push("endpoint".to_owned()),
            None => {}
        }
        if !self.runtime_handler.is_empty() {
            details.push(format!("handler {}", self.runtime_handler));
        }
        if let Some(kubelet) = &self.kubelet {
            details.push(format!("kubelet {kubelet}"));
        }
        if details.is_empty() {
            runtime
        } else {
            format!("{runtime} ({})", details.join(", "))
        }
    }
}

/// A lane across nights: its identity and, only where some night holds two reports of that
/// identity (one runtime in two configurations the report cannot see, such as CRI-O's two
/// signature-policy modes), the report's path under its night, which tells them apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct LaneKey {
    /// What ran.
    pub id: LaneId,
    /// The report's path under its night, when the identity alone is not unique.
    pub at: Option<String>,
}

impl LaneKey {
    /// The identity's label, and the path where it tells the lane apart.
    pub fn label(&self) -> String {
        match self.at.as_deref() {
            None => self.id.label(),
            Some("") => format!("{} at .", self.id.label()),
            Some(at) => format!("{} at {at}", self.id.label()),
        }
    }
}

/// One run report of a night, where it was found and what ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The file.
    pub path: PathBuf,
    /// Its path under the directory given, without a trailing `results.json`; empty for the
    /// directory's own report or a file given directly.
    pub at: String,
    /// What ran.
    pub id: LaneId,
}

/// Reports whose lanes cannot be told apart.
#[derive(Debug, thiserror::Error)]
pub enum LaneError {
    /// One night holds two reports of one identity at the same path under it (two inputs given
    /// as one side, each with the same report at its root).
    #[error(
        "{} and {} are both the lane {lane}: give them as separate nights, or in separate \
         directories under one",
        first.display(),
        second.display()
    )]
    Ambiguous {
        /// The lane both are.
        lane: String,
        /// One report.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
}

/// The lane of every report of every night, in the same shape as `nights`. Reports are paired
/// across nights by identity; the path under the night joins the key only for identities some
/// night holds twice. A report of an older harness, lacking a field, joins the one lane that
/// records the same values for the fields it has and more, where exactly one such lane exists
/// (or one among them at the same path) and it never ran in the same night; otherwise it stays
/// a lane of its own.
pub fn resolve(nights: &[Vec<Placed>]) -> Result<Vec<Vec<LaneKey>>, LaneError> {
    let mut repeated = BTreeSet::new();
    for night in nights {
        let mut seen = BTreeSet::new();
        for placed in night {
            if !seen.insert(&placed.id) {
                repeated.insert(placed.id.clone());
            }
        }
    }
    let keys: Vec<Vec<LaneKey>> = nights
        .iter()
        .map(|night| {
            night
                .iter()
                .map(|placed| LaneKey {
                    id: placed.id.clone(),
                    at: repeated.contains(&placed.id).then(|| placed.at.clone()),
                })
                .collect()
        })
        .collect();

    // Every key with the nights it ran in and the paths its reports sat at.
    #[derive(Default)]
    struct Seen {
        nights: BTreeSet<usize>,
        at: BTreeSet<String>,
    }
    let mut seen: BTreeMap<LaneKey, Seen> = BTreeMap::new();
    for (n, (night, placed)) in keys.iter().zip(nights).enumerate() {
        let mut first: BTreeMap<&LaneKey, &PathBuf> = BTreeMap::new();
        for (key, placed) in night.iter().zip(placed) {
            if let Some(other) = first.insert(key, &placed.path) {
                return Err(LaneError::Ambiguous {
                    lane: key.label(),
                    first: other.clone(),
                    second: placed.path.clone(),
                });
            }
            let entry = seen.entry(key.clone()).or_default();
            entry.nights.insert(n);
            entry.at.insert(placed.at.clone());
        }
    }

    // The best-recorded keys first, so a less recorded one finds its lane among them.
    let mut order: Vec<LaneKey> = seen.keys().cloned().collect();
    order.sort_by_key(|key| key.id.unrecorded());
    let mut canonical: BTreeMap<LaneKey, LaneKey> = BTreeMap::new();
    let mut lanes: Vec<(LaneKey, Seen)> = Vec::new();
    for key in order {
        let Some(this) = seen.remove(&key) else {
            continue;
        };
        let fits = |(lane, lane_seen): &(LaneKey, Seen)| {
            lane.id.covers(&key.id)
                && lane_seen.nights.is_disjoint(&this.nights)
                && (lane.at.is_none() || key.at.is_none() || lane.at == key.at)
        };
        let mut candidates: Vec<usize> = (0..lanes.len()).filter(|&i| fits(&lanes[i])).collect();
        if candidates.len() > 1 {
            candidates.retain(|&i| !lanes[i].1.at.is_disjoint(&this.at));
        }
        match candidates[..] {
            [only] => {
                let (lane, lane_seen) = &mut lanes[only];
                lane_seen.nights.extend(this.nights);
                lane_seen.at.extend(this.at);
                canonical.insert(key, lane.clone());
            }
            _ => lanes.push((key, this)),
        }
    }
    Ok(keys
        .into_iter()
        .map(|night| {
            night
                .into_iter()
                .map(|key| canonical.get(&key).cloned().unwrap_or(key))
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(runtime: &str, version: &str, kubelet: Option<&str>) -> LaneId {
        LaneId {
            runtime_name: Some(runtime.into()),
            runtime_version: Some(version.into()),
            runtime_handler: String::new(),
            target: Some(TargetKind::Endpoint),
            kubelet: kubelet.map(Into::into),
        }
    }

    fn placed(at: &str, id: &LaneId) -> Placed {
        Placed {
            path: PathBuf::from(format!("{at}/results.json")),
            at: at.into(),
            id: id.clone(),
        }
    }

    fn labels(resolved: &[Vec<LaneKey>]) -> Vec<Vec<String>> {
        resolved
            .iter()
            .map(|night| night.iter().map(LaneKey::label).collect())
            .collect()
    }

    #[test]
    fn the_identity_is_read_from_what_the_report_records() {
        let mut report: RunReport = serde_json::from_value(serde_json::json!({
            "run_id": "r", "cases": [], "target": "unix:///run/crio/crio.sock",
            "target_kind": "cri-o", "runtime_handler": "crun", "kubelet": "current",
            "node": {"name": "n", "kernel": "6.1", "os_image": null,
                     "runtime_name": "cri-o", "runtime_version": "1.36.3"},
        }))
        .unwrap();
        assert_eq!(
            LaneId::of(&report).label(),
            "cri-o 1.36.3 (endpoint, handler crun, kubelet current)"
        );
        // An endpoint that never answered keeps the default target kind, and no runtime.
        report.target_kind = "mock".into();
        report.node.runtime_name = None;
        report.node.runtime_version = None;
        assert_eq!(
            LaneId::of(&report).label(),
            "unknown runtime (endpoint, handler crun, kubelet current)"
        );
        report.target = "mock".into();
        report.mock_profile = "other-runtime".into();
        assert_eq!(
            LaneId::of(&report).target,
            Some(TargetKind::Mock {
                profile: "other-runtime".into()
            })
        );
        // A report of a harness that recorded none of it.
        let old: RunReport = serde_json::from_value(serde_json::json!({
            "run_id": "r", "cases": [], "node": {"name": "n", "kernel": "5.10",
            "os_image": null, "runtime_name": null, "runtime_version": null},
        }))
        .unwrap();
        let id = LaneId::of(&old);
        assert_eq!((id.unrecorded(), id.target, id.kubelet), (4, None, None));
    }

    #[test]
    fn reports_of_one_identity_pair_wherever_they_were_written() {
        let c = id("containerd", "v2.1.9", Some("seed"));
        let nights = [
            vec![placed("2026-12-03", &c)],
            vec![placed("2026-12-04", &c)],
        ];
        let resolved = resolve(&nights).unwrap();
        assert_eq!(resolved[0], resolved[1]);
        assert_eq!(resolved[0][0].at, None);
        assert_eq!(
            labels(&resolved)[0],
            ["containerd v2.1.9 (endpoint, kubelet seed)"]
        );
    }

    #[test]
    fn each_field_of_the_identity_makes_another_lane() {
        let base = id("containerd", "v2.1.9", Some("seed"));
        let mut handler = base.clone();
        handler.runtime_handler = "runc".into();
        let mut mock = base.clone();
        mock.target = Some(TargetKind::Mock {
            profile: String::new(),
        });
        let mut other_mock = base.clone();
        other_mock.target = Some(TargetKind::Mock {
            profile: "other-runtime".into(),
        });
        let variants = [
            base.clone(),
            id("cri-o", "v2.1.9", Some("seed")),
            id("containerd", "v1.7.24", Some("seed")),
            id("containerd", "v2.1.9", Some("current")),
            handler,
            mock,
            other_mock,
        ];
        let night: Vec<Placed> = variants.iter().map(|v| placed("lane", v)).collect();
        let resolved = resolve(&[night]).unwrap();
        let distinct: BTreeSet<&LaneKey> = resolved[0].iter().collect();
        assert_eq!(distinct.len(), variants.len());
        assert!(resolved[0].iter().all(|key| key.at.is_none()));
        assert_eq!(
            labels(&resolved)[0][4..],
            [
                "containerd v2.1.9 (endpoint, handler runc, kubelet seed)",
                "containerd v2.1.9 (mock, kubelet seed)",
                "containerd v2.1.9 (mock profile other-runtime, kubelet seed)",
            ]
        );
    }

    #[test]
    fn two_reports_of_one_identity_in_a_night_are_told_apart_by_their_paths() {
        let crio = id("cri-o", "1.36.3", Some("seed"));
        let other = id("containerd", "v2.1.9", Some("seed"));
        let night = |order: [&str; 2]| {
            vec![
                placed(order[0], &crio),
                placed("containerd", &other),
                placed(order[1], &crio),
            ]
        };
        let resolved = resolve(&[
            night(["crio-signed", "crio-system"]),
            night(["crio-system", "crio-signed"]),
        ])
        .unwrap();
        assert_eq!(resolved[0][0], resolved[1][2]);
        assert_eq!(resolved[0][2], resolved[1][0]);
        assert_eq!(resolved[0][1], resolved[1][1]);
        assert_eq!(resolved[0][1].at, None);
        assert_eq!(
            labels(&resolved)[0][0],
            "cri-o 1.36.3 (endpoint, kubelet seed) at crio-signed"
        );
    }

    #[test]
    fn two_reports_of_one_identity_at_one_path_are_an_error_naming_both() {
        let c = id("containerd", "v2.1.9", Some("seed"));
        let night = vec![
            Placed {
                path: "a/results.json".into(),
                at: String::new(),
                id: c.clone(),
            },
            Placed {
                path: "b/results.json".into(),
                at: String::new(),
                id: c,
            },
        ];
        let err = resolve(&[night]).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "a/results.json and b/results.json are both the lane containerd v2.1.9"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_report_without_the_kubelet_profile_joins_the_one_lane_it_fits() {
        let old = id("containerd", "v2.1.9", None);
        let seed = id("containerd", "v2.1.9", Some("seed"));
        let mock = LaneId {
            target: Some(TargetKind::Mock {
                profile: String::new(),
            }),
            ..id("cri-harness-mock", "0.1.0", None)
        };
        let resolved = resolve(&[
            vec![placed("x", &old), placed("m", &mock)],
            vec![placed("y", &seed)],
        ])
        .unwrap();
        assert_eq!(resolved[0][0], resolved[1][0]);
        assert_eq!(resolved[0][0].id, seed);
        // Nothing fits the mock's report: it stays its own lane.
        assert_eq!(resolved[0][1].id, mock);
    }

    #[test]
    fn a_report_without_the_kubelet_profile_that_fits_two_lanes_joins_the_one_at_its_path() {
        let old = id("containerd", "v2.1.9", None);
        let seed = id("containerd", "v2.1.9", Some("seed"));
        let current = id("containerd", "v2.1.9", Some("current"));
        let resolved = resolve(&[
            vec![placed("c-seed", &old), placed("c-current", &old)],
            vec![placed("c-current", &current), placed("c-seed", &seed)],
        ])
        .unwrap();
        assert_eq!(resolved[0][0], resolved[1][1]);
        assert_eq!(resolved[0][1], resolved[1][0]);

        // At other paths, neither lane is more likely: the old report stays its own lane.
        let resolved = resolve(&[
            vec![placed("old", &old)],
            vec![placed("c-current", &current), placed("c-seed", &seed)],
        ])
        .unwrap();
        assert_eq!(resolved[0][0].id, old);
    }

    #[test]
    fn a_lane_that_ran_in_the_same_night_is_no_match_for_a_less_recorded_report() {
        let unreachable = LaneId {
            runtime_name: None,
            runtime_version: None,
            ..id("", "", Some("seed"))
        };
        let c = id("containerd", "v2.1.9", Some("seed"));
        let d = id("containerd", "v1.7.24", Some("seed"));
        let resolved = resolve(&[
            vec![placed("c21", &c), placed("c17", &d)],
            vec![placed("c21", &c), placed("c17", &unreachable)],
        ])
        .unwrap();
        // It fits both lanes, but containerd 2.1 ran beside it: it is containerd 1.7's.
        assert_eq!(resolved[1][1], resolved[0][1]);
        let resolved = resolve(&[vec![placed("c21", &c), placed("c17", &unreachable)]]).unwrap();
        assert_eq!(resolved[0][1].id, unreachable);
    }
}
