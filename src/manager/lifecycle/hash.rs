//! The container hash the manager writes in the `io.kubernetes.container.hash` annotation (as hex)
//! and compares on every sync: a running container whose annotation differs from its spec's hash
//! is killed and recreated.
//!
//! The kubelet's value (Go's `spew` dump of the spec fed to 32-bit FNV-1a) cannot be reproduced
//! outside Go, so this hash is 32-bit FNV-1a over the container's canonical JSON: serde_json of the
//! `k8s::Container`, which k8s-openapi writes in its fixed field order with absent fields left
//! out. It is stable across runs and builds (and across the key order of the YAML it was read
//! from), but differs from the Go kubelet's value for the same spec, so a runtime's containers made
//! by a real kubelet read as changed.
//!
//! Like earlier kubelets it hashes the whole spec, so any edit (image, command, env, ...) restarts
//! the container; today's kubelet hashes only the name and the image (`pickFieldsToHash`).

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
    let mut hasher = Fnv1a32::new();
    // The sink never fails and k8s-openapi types have string map keys only, so serde_json has
    // nothing to reject; should that ever change, the prefix hashed so far is still deterministic.
    if let Err(error) = serde_json::to_writer(&mut hasher, container) {
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
    fn a_changed_command_changes_the_hash() {
        let plain = container("app", "busybox");
        let with_command = k8s::Container {
            command: Some(vec!["sleep".to_owned(), "3600".to_owned()]),
            ..plain.clone()
        };
        let other_command = k8s::Container {
            command: Some(vec!["sleep".to_owned(), "60".to_owned()]),
            ..plain.clone()
        };
        let hashes = [&plain, &with_command, &other_command].map(hash_container);
        assert_ne!(hashes[0], hashes[1]);
        assert_ne!(hashes[1], hashes[2]);
    }

    #[test]
    fn the_hash_is_fnv1a_of_the_canonical_json() {
        // Fixed field order, absent fields left out: this is what makes the value stable across
        // builds.
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
            serde_saphyr::from_str("{args: [-g, daemon off;], image: nginx, name: app}").unwrap();
        assert_eq!(hash_container(&a), hash_container(&b));
    }
}
