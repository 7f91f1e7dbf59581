#!/usr/bin/env python3
"""Wraps one static binary into a single-layer OCI image layout, byte for byte reproducibly.

Usage: oci-image.py BINARY OUT_DIR TAG

The binary lands at /pause (mode 0755, owned by root) and is the config's Entrypoint; the
platform is linux/amd64. Every timestamp is the epoch, so the same binary always gives the
same digests, and ci/crio.sh can tell by the config digest whether the registry already
serves this build. Prints the manifest's digest. Push the layout with skopeo:
    skopeo copy --insecure-policy --dest-tls-verify=false oci:OUT_DIR:TAG docker://HOST/NAME:TAG
"""
import hashlib
import io
import json
import os
import sys
import tarfile

EPOCH = "1970-01-01T00:00:00Z"


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_blob(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as blob:
        blob.write(data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def layer_tar(binary):
    """An uncompressed tar holding the binary as /pause, with no varying metadata."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        entry = tarfile.TarInfo("pause")
        entry.size = len(binary)
        entry.mode = 0o755
        entry.mtime = 0
        entry.uid = entry.gid = 0
        entry.uname = entry.gname = "root"
        tar.addfile(entry, io.BytesIO(binary))
    return out.getvalue()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2])
    binary_path, layout, tag = sys.argv[1:]
    with open(binary_path, "rb") as source:
        binary = source.read()
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)

    layer = write_blob(layout, layer_tar(binary))
    config = write_blob(layout, canonical({
        "architecture": "amd64",
        "os": "linux",
        "created": EPOCH,
        "config": {"Entrypoint": ["/pause"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]},
        "history": [{"created": EPOCH, "created_by": "ci/crio/oci-image.py"}],
    }))
    manifest_media = "application/vnd.oci.image.manifest.v1+json"
    manifest = write_blob(layout, canonical({
        "schemaVersion": 2,
        "mediaType": manifest_media,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer}],
    }))
    with open(os.path.join(layout, "index.json"), "wb") as index:
        index.write(canonical({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": manifest_media,
                **manifest,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"org.opencontainers.image.ref.name": tag},
            }],
        }))
    with open(os.path.join(layout, "oci-layout"), "wb") as marker:
        marker.write(canonical({"imageLayoutVersion": "1.0.0"}))
    print(manifest["digest"])


if __name__ == "__main__":
    main()
