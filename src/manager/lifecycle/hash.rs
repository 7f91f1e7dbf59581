//! The container hash the manager writes in the `io.kubernetes.container.hash` annotation (as hex)
//! and compares on every sync: a running container whose annotation differs from its spec's hash
//! is killed and recreated.
//!
//! Today's kubelet hashes only the container's name and image (`pickFieldsToHash`: older kubelets
//! hashed the whole spec, so a kubelet upgrade that added a defaulted field restarted every
//! container). This port does the same: an image change restarts the container, a changed command
//! or env alone does not, as on a real node.
//!
//! The kubelet feeds Go's `spew` dump of that JSON to 32-bit FNV-1a, which cannot be reproduced
//! outside Go, so this hash is 32-bit FNV-1a over the JSON itself (`{"image":...,"name":...}`,
//! keys sorted as Go's encoder sorts a map's). It is stable across runs and builds, but differs
//! from the Go kubelet's value, so a runtime's containers made by a real kubelet read as changed.

use std::collections::BTreeMap;
use std::io;

use super::k8s;

/// 32-bit FNV-1a offset basis.
const FNV_OFFSET_BASIS: u32 = 0x811c_9dc5;
/// 32-bit FNV prime.
const FNV_PRIME: u32 = 0x0100_0193;

/// 32-bit FNV-1a as an [`io::Write`] sink, so the JSON streams into it without a buffer.
struct Fnv1a32(u32);

impl Fnv1a32 {
    fn new() -> Self {
        Self(FNV_OFFSET_BASIS)
    }
}

impl io::Write for Fnv1a32 {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for byte in buf {
            self.0 = (self.0 ^ u32::from(*byte)).wrapping_mul(FNV_PRIME);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The hash of a container spec (the kubelet's `HashContainer`, differing as the module says).
/// The value fits in 32 bits; it is a `u64` because the annotation is read back as one.
pub fn hash_container(container: &k8s::Container) -> u64 {
    let picked = BTreeMap::from([
        ("image", container.image.as_deref().unwrap_or_default()),
        ("name", container.name.as_str()),
    ]);
    let mut hasher = Fnv1a32::new();
    // The sink never fails and a map of strings always serializes; should that ever change, the
    // prefix hashed so far is still deterministic.
    if let Err(error) = serde_json::to_writer(&mut hasher, &picked) {
        tracing::warn!(container = %container.name, %error, "container spec did not serialize fully for hashing");
    }
    u64::from(hasher.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::io::Write;

    fn fnv1a32(bytes: &[u8]) -> u64 {
        let mut hasher = Fnv1a32::new();
        hasher.write_all(bytes).unwrap();
        u64::from(hasher.0)
    }

    fn container(name: &str, image: &str) -> k8s::Container {
        k8s::Container {
            name: name.to_owned(),
            image: Some(image.to_owned()),
            ..Default::default()
        }
    }

    // The published FNV-1a 32-bit test vectors.
    #[rstest]
    #[case::empty(b"", 0x811c_9dc5)]
    #[case::a(b"a", 0xe40c_292c)]
    #[case::foobar(b"foobar", 0xbf9c_f968)]
    fn the_hasher_is_fnv1a_32(#[case] input: &[u8], #[case] expected: u64) {
        assert_eq!(fnv1a32(input), expected);
    }

    #[test]
    fn equal_specs_hash_equal() {
        assert_eq!(
            hash_container(&container("app", "nginx")),
            hash_container(&container("app", "nginx"))
        );
    }

    #[test]
    fn a_changed_image_changes_the_hash() {
        assert_ne!(
            hash_container(&container("app", "nginx:1.25")),
            hash_container(&container("app", "nginx:1.26"))
        );
    }

    #[test]
    fn a_changed_command_or_env_leaves_the_hash_as_today_s_kubelet_does() {
        let plain = container("app", "busybox");
        let with_command = k8s::Container {
            command: Some(vec!["sleep".to_owned(), "3600".to_owned()]),
            ..plain.clone()
        };
        let other_command = k8s::Container {
            command: Some(vec!["sleep".to_owned(), "60".to_owned()]),
            ..plain.clone()
        };
        let with_env = k8s::Container {
            env: Some(vec![k8s::EnvVar {
                name: "A".to_owned(),
                value: Some("1".to_owned()),
                ..Default::default()
            }]),
            ..plain.clone()
        };
        let hashes = [&plain, &with_command, &other_command, &with_env].map(hash_container);
        assert!(hashes.iter().all(|h| *h == hashes[0]), "{hashes:?}");
    }

    #[test]
    fn a_changed_name_changes_the_hash() {
        assert_ne!(
            hash_container(&container("app", "busybox")),
            hash_container(&container("web", "busybox"))
        );
    }

    #[test]
    fn the_hash_is_fnv1a_of_the_picked_fields_json() {
        // Sorted keys: this is what makes the value stable across builds.
        assert_eq!(
            hash_container(&container("foo", "busybox")),
            fnv1a32(br#"{"image":"busybox","name":"foo"}"#)
        );
    }

    #[test]
    fn the_key_order_of_the_manifest_does_not_matter() {
        let a: k8s::Container =
            serde_saphyr::from_str("{name: app, image: nginx, args: [-g, daemon off;]}").unwrap();
        let b: k8s::Container =
            serde_saphyr::from_str("{image: nginx, name: app, args: [-g, daemon off;]}").unwrap();
        assert_eq!(hash_container(&a), hash_container(&b));
    }
}
