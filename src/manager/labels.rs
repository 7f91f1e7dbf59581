//! Reading back the labels and annotations the kubelet writes on sandboxes and containers
//! (kubelet rules: #labels-and-annotations): missing or unparsable values fall back the way the
//! kubelet's readers do.

use std::collections::BTreeMap;

use crate::cri::labels::{
    CONTAINER_HASH, CONTAINER_NAME, CONTAINER_RESTART_COUNT, MANAGED, POD_NAME, POD_NAMESPACE,
    POD_UID,
};

type Map = BTreeMap<String, String>;

/// The value under `key`, or "" when absent.
pub(crate) fn get(map: &Map, key: &str) -> String {
    map.get(key).cloned().unwrap_or_default()
}

/// The seed kubelet's mark: `io.kubernetes.managed` present and equal to "true".
pub(crate) fn is_managed(labels: &Map) -> bool {
    labels.get(MANAGED).is_some_and(|v| v == "true")
}

/// Pod `(uid, name, namespace)` from a container's labels, "" for each one missing.
pub(crate) fn pod_identity(labels: &Map) -> (String, String, String) {
    (
        get(labels, POD_UID),
        get(labels, POD_NAME),
        get(labels, POD_NAMESPACE),
    )
}

/// The container name label, "" when absent.
pub(crate) fn container_name(labels: &Map) -> String {
    get(labels, CONTAINER_NAME)
}

/// The container hash annotation read as hex u64; 0 when absent or not hex.
pub(crate) fn container_hash(annotations: &Map) -> u64 {
    annotations
        .get(CONTAINER_HASH)
        .and_then(|v| u64::from_str_radix(v, 16).ok())
        .unwrap_or(0)
}

/// The restart count annotation read as decimal; 0 when absent or not a number.
pub(crate) fn restart_count(annotations: &Map) -> i32 {
    annotations
        .get(CONTAINER_RESTART_COUNT)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A grace-period annotation in decimal seconds; absent when missing or not a number (the
/// kubelet only writes it when the pod had the value set).
pub(crate) fn seconds(annotations: &Map, key: &str) -> Option<i64> {
    let value = annotations.get(key)?;
    match value.parse() {
        Ok(seconds) => Some(seconds),
        Err(_) => {
            tracing::warn!(key, value, "ignoring unparsable grace-period annotation");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::labels::POD_DELETION_GRACE_PERIOD;
    use rstest::rstest;

    fn map(pairs: &[(&str, &str)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[rstest]
    #[case::absent(&[], 0)]
    #[case::lower_hex(&[(CONTAINER_HASH, "deadbeef")], 0xdead_beef)]
    #[case::upper_hex(&[(CONTAINER_HASH, "ABC")], 0xabc)]
    #[case::full_width(&[(CONTAINER_HASH, "ffffffffffffffff")], u64::MAX)]
    #[case::too_wide(&[(CONTAINER_HASH, "1ffffffffffffffff")], 0)]
    #[case::not_hex(&[(CONTAINER_HASH, "xyz")], 0)]
    #[case::empty(&[(CONTAINER_HASH, "")], 0)]
    fn container_hash_reads_hex_or_zero(#[case] pairs: &[(&str, &str)], #[case] expected: u64) {
        assert_eq!(container_hash(&map(pairs)), expected);
    }

    #[rstest]
    #[case::absent(&[], 0)]
    #[case::decimal(&[(CONTAINER_RESTART_COUNT, "3")], 3)]
    #[case::hex_is_not_decimal(&[(CONTAINER_RESTART_COUNT, "a")], 0)]
    #[case::negative(&[(CONTAINER_RESTART_COUNT, "-1")], -1)]
    fn restart_count_reads_decimal_or_zero(#[case] pairs: &[(&str, &str)], #[case] expected: i32) {
        assert_eq!(restart_count(&map(pairs)), expected);
    }

    #[rstest]
    #[case::absent(&[], None)]
    #[case::set(&[(POD_DELETION_GRACE_PERIOD, "30")], Some(30))]
    #[case::zero(&[(POD_DELETION_GRACE_PERIOD, "0")], Some(0))]
    #[case::unparsable(&[(POD_DELETION_GRACE_PERIOD, "30s")], None)]
    fn grace_period_annotation_is_absent_unless_decimal(
        #[case] pairs: &[(&str, &str)],
        #[case] expected: Option<i64>,
    ) {
        assert_eq!(seconds(&map(pairs), POD_DELETION_GRACE_PERIOD), expected);
    }

    #[rstest]
    #[case::marked(&[(MANAGED, "true")], true)]
    #[case::absent(&[], false)]
    #[case::other_value(&[(MANAGED, "false")], false)]
    #[case::empty_value(&[(MANAGED, "")], false)]
    fn managed_means_the_label_is_true(#[case] pairs: &[(&str, &str)], #[case] expected: bool) {
        assert_eq!(is_managed(&map(pairs)), expected);
    }

    #[test]
    fn pod_identity_defaults_missing_labels_to_empty() {
        let labels = map(&[(POD_UID, "u1"), (POD_NAMESPACE, "ns")]);
        assert_eq!(
            pod_identity(&labels),
            ("u1".to_owned(), String::new(), "ns".to_owned())
        );
    }
}
