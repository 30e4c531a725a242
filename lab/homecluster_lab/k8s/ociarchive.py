"""A one-file OCI image archive, written here: the real node's pod sandbox ("pause") image.

No registry can be reached, so the sandbox image every pod starts with is made from the `pause` program
`make realnode` builds (lab/k8s-node/pause): one layer holding /pause, a config that runs it as 65535, an
OCI image layout tarred (`ctr images import` reads it). Deterministic: the same program gives the same digest.
`name` puts the program elsewhere than /pause (a test's image of Debian's static busybox is /busybox, the name it
needs to find its applets).
"""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

USER = "65535:65535"


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _layer(program: bytes, name: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(program), 0o755, 0
        tar.addfile(info, io.BytesIO(program))
    return out.getvalue()


def write_single_binary_image(program: Path, reference: str, archive: Path, name: str = "pause") -> str:
    """Write an OCI archive of an image whose entrypoint is `program` (as /NAME); returns its manifest digest."""
    layer_digest, layer = _blob(_layer(program.read_bytes(), name))
    config_digest, config = _blob(json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": [f"/{name}"], "User": USER},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }, sort_keys=True).encode())
    manifest_digest, manifest = _blob(json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest,
                    "size": len(layer)}],
    }, sort_keys=True).encode())
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
        "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": reference,
                                               "io.containerd.image.name": reference}}]}).encode()
    entries = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": index}
    for digest, data in ((layer_digest, layer), (config_digest, config), (manifest_digest, manifest)):
        entries["blobs/sha256/" + digest.split(":", 1)[1]] = data
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return manifest_digest
