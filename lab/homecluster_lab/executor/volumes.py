"""Materialise a pod's volumes as files under its directory, as the kubelet mounts them.

secret, configMap, downwardAPI, projected (those three sources) and emptyDir; hostPath is used in
place. A missing non-optional Secret or ConfigMap raises NotReady (the kubelet's FailedMount).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from homecluster_lab.executor.envresolve import NotReady, Objects, field_value, object_data
from homecluster_lab.executor.layout import Layout


def _write(path: Path, content: bytes, mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    if mode is not None:
        os.chmod(path, mode)


def _keyed(target: Path, kind: str, src: dict[str, Any], name: str, objects: Objects, default_mode: int | None,
           volume: str = "") -> None:
    obj = objects.get((kind, name))
    if obj is None:
        if src.get("optional"):
            return
        # the kubelet's words: the container waits in ContainerCreating, the reason is a FailedMount Event
        raise NotReady("ContainerCreating", f'MountVolume.SetUp failed for volume "{volume}" : '
                       f'{"secret" if kind == "secret" else "configmap"} "{name}" not found', event="FailedMount")
    data = object_data(kind, obj)
    items = src.get("items")
    if not items:
        items = [{"key": k, "path": k} for k in sorted(data)]
    for item in items:
        if item["key"] not in data:
            if src.get("optional"):
                continue
            raise NotReady("ContainerCreating", f'MountVolume.SetUp failed for volume "{volume}" : key '
                           f'"{item["key"]}" not in {kind} "{name}"', event="FailedMount")
        _write(target / item["path"], data[item["key"]], item.get("mode", default_mode))


def _downward(target: Path, pod: dict[str, Any], items: list[dict[str, Any]], default_mode: int | None) -> None:
    for item in items:
        if item.get("fieldRef"):
            value = field_value(pod, item["fieldRef"]["fieldPath"])
        else:
            value = "0"  # resourceFieldRef: the lab sets no resource limits
        _write(target / item["path"], value.encode(), item.get("mode", default_mode))


LAB_TOKEN = b"lab: no service-account token; KUBECONFIG points at the lab API server\n"


def mounts_token(pod_spec: dict[str, Any], container: dict[str, Any]) -> bool:
    """Whether the container mounts a projected service-account token."""
    token_volumes = {v["name"] for v in pod_spec.get("volumes") or []
                     if any(s.get("serviceAccountToken") for s in (v.get("projected") or {}).get("sources") or [])}
    return any(m["name"] in token_volumes for m in container.get("volumeMounts") or [])


def materialise(layout: Layout, pod: dict[str, Any], objects: Objects, token: bytes | None = None) -> None:
    """Create every volume's content. Raises NotReady when a referenced object is missing. `token` is the
    pod's ServiceAccount token for its projected token sources (None: the lab's placeholder)."""
    for v in pod["spec"].get("volumes") or []:
        target = layout.volume_dirs[v["name"]]
        if v.get("hostPath"):
            continue
        target.mkdir(parents=True, exist_ok=True)
        if v.get("secret"):
            s = v["secret"]
            _keyed(target, "secret", s, s["secretName"], objects, s.get("defaultMode", 0o644), v["name"])
        elif v.get("configMap"):
            c = v["configMap"]
            _keyed(target, "configmap", c, c["name"], objects, c.get("defaultMode", 0o644), v["name"])
        elif v.get("downwardAPI"):
            d = v["downwardAPI"]
            _downward(target, pod, d.get("items") or [], d.get("defaultMode", 0o644))
        elif v.get("projected"):
            p = v["projected"]
            mode = p.get("defaultMode", 0o644)
            for src in p.get("sources") or []:
                if src.get("secret"):
                    _keyed(target, "secret", src["secret"], src["secret"]["name"], objects, mode, v["name"])
                elif src.get("configMap"):
                    _keyed(target, "configmap", src["configMap"], src["configMap"]["name"], objects, mode,
                           v["name"])
                elif src.get("downwardAPI"):
                    _downward(target, pod, src["downwardAPI"].get("items") or [], mode)
                elif src.get("serviceAccountToken"):
                    # The in-memory lab issues no tokens: a container that mounts one gets KUBECONFIG (kubelet.py);
                    # on the real control plane the runner node writes the pod's own token here too.
                    _write(target / src["serviceAccountToken"].get("path", "token"), token or LAB_TOKEN, mode)
    # subPath mounts of emptyDirs must exist before the process looks at them
    for local in layout.mounts.values():
        if not local.exists() and local.parent.exists() and local.suffix == "":
            local.mkdir(parents=True, exist_ok=True)
