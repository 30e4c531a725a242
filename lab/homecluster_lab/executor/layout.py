"""Where a container's paths live on this machine: the lab's one liberty.

There is no container filesystem, so each volumeMount's path is mapped to a local directory (or file,
for a subPath) under the pod's own directory, and that path prefix is rewritten in the container's
command, args and env values. `/etc/homecluster/job/vars.json` in a command becomes
`<pod dir>/volumes/job-vars/vars.json`. Nothing else is rewritten: a program that opens a mounted path
it computed itself would not find it, so the lab passes paths only through command, args and env.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A mount path is replaced only where it is a whole path prefix: not preceded by a path character,
# and followed by the end, a slash or a character that cannot continue a path segment.
_BEFORE = r"(?<![A-Za-z0-9_./-])"
_AFTER = r"(?=$|/|[^A-Za-z0-9_.-])"


@dataclass(frozen=True)
class Layout:
    """The pod's local directories: root, one per volume, and the mount path → local path map."""

    root: Path
    volume_dirs: dict[str, Path]
    mounts: dict[str, Path]  # container path -> local path, for the first container

    def substitute(self, text: str) -> str:
        """Rewrite every mounted path prefix in text to its local path, in one pass (a local path that
        itself starts with another mount path, such as /tmp, is never rewritten again); the longest
        mount path wins."""
        if not self.mounts:
            return text
        by_length = sorted(self.mounts, key=len, reverse=True)
        pattern = _BEFORE + "(" + "|".join(re.escape(m.rstrip("/") or "/") for m in by_length) + ")" + _AFTER
        local = {(m.rstrip("/") or "/"): str(p) for m, p in self.mounts.items()}
        return re.sub(pattern, lambda match: local[match.group(1)], text)

    @property
    def log_file(self) -> Path:
        return self.root / "container.log"


def plan_layout(root: Path, pod_spec: dict[str, Any], container: dict[str, Any]) -> Layout:
    """Decide (without touching the disk) where each volume and each mount of one container lives."""
    volume_dirs = {}
    for v in pod_spec.get("volumes") or []:
        # A hostPath is this machine's own path; every other volume gets a directory of the pod.
        host = (v.get("hostPath") or {}).get("path")
        volume_dirs[v["name"]] = Path(host) if host else root / "volumes" / v["name"]
    mounts: dict[str, Path] = {}
    for m in container.get("volumeMounts") or []:
        base = volume_dirs.get(m["name"])
        if base is None:
            raise ValueError(f'container "{container["name"]}": volumeMount "{m["name"]}" names no volume of the pod')
        local = base / m["subPath"] if m.get("subPath") else base
        mounts[m["mountPath"]] = local
    return Layout(root=root, volume_dirs=volume_dirs, mounts=mounts)
