"""A container's environment as the kubelet computes it, from the pod and the objects it references.

Pure: the caller fetches the referenced Secrets and ConfigMaps first (`references`) and passes them in;
a missing one that is not optional is reported as the kubelet reports it (CreateContainerConfigError).
"""
from __future__ import annotations

import base64
import re
from typing import Any

Objects = dict[tuple[str, str], dict[str, Any] | None]  # ("secret"|"configmap", name) -> object or None


class NotReady(Exception):
    """The container cannot start yet; `reason` and the message are what the kubelet would show.

    `event` is the reason of the Warning Event a real kubelet posts on the pod instead of a message in
    the container's status (FailedMount for a volume: its waiting reason is a bare ContainerCreating).
    """

    def __init__(self, reason: str, message: str, event: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.event = event


def references(pod_spec: dict[str, Any]) -> set[tuple[str, str]]:
    """Every Secret and ConfigMap the pod's env and volumes name."""
    refs: set[tuple[str, str]] = set()
    for c in (pod_spec.get("initContainers") or []) + (pod_spec.get("containers") or []):
        for e in c.get("env") or []:
            vf = e.get("valueFrom") or {}
            if vf.get("secretKeyRef"):
                refs.add(("secret", vf["secretKeyRef"]["name"]))
            if vf.get("configMapKeyRef"):
                refs.add(("configmap", vf["configMapKeyRef"]["name"]))
        for ef in c.get("envFrom") or []:
            if ef.get("secretRef"):
                refs.add(("secret", ef["secretRef"]["name"]))
            if ef.get("configMapRef"):
                refs.add(("configmap", ef["configMapRef"]["name"]))
    for v in pod_spec.get("volumes") or []:
        if v.get("secret"):
            refs.add(("secret", v["secret"]["secretName"]))
        if v.get("configMap"):
            refs.add(("configmap", v["configMap"]["name"]))
        for src in (v.get("projected") or {}).get("sources") or []:
            if src.get("secret"):
                refs.add(("secret", src["secret"]["name"]))
            if src.get("configMap"):
                refs.add(("configmap", src["configMap"]["name"]))
    return refs


def object_data(kind: str, obj: dict[str, Any]) -> dict[str, bytes]:
    """The key → bytes content of a Secret (data is base64) or a ConfigMap (data, binaryData)."""
    out: dict[str, bytes] = {}
    if kind == "secret":
        for k, v in (obj.get("data") or {}).items():
            out[k] = base64.b64decode(v)
        for k, v in (obj.get("stringData") or {}).items():  # a lenient server may keep it
            out.setdefault(k, v.encode())
    else:
        for k, v in (obj.get("data") or {}).items():
            out[k] = v.encode()
        for k, v in (obj.get("binaryData") or {}).items():
            out[k] = base64.b64decode(v)
    return out


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod: dict[str, Any], path: str) -> str:
    """The value of a downward-API fieldRef (the paths the kubelet supports)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    m = _SUBSCRIPT.match(path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{_go_quote(v)}"' for k, v in sorted(items.items()))
    simple = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP", "127.0.0.1"), "status.podIP": status.get("podIP", "127.0.0.1"),
        "status.hostIPs": status.get("hostIP", "127.0.0.1"), "status.podIPs": status.get("podIP", "127.0.0.1"),
    }
    if path not in simple:
        raise NotReady("CreateContainerConfigError", f"unsupported fieldPath {path!r}")
    return str(simple[path] or "")


def _go_quote(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _lookup(objects: Objects, kind: str, ref: dict[str, Any]) -> dict[str, bytes] | None:
    obj = objects.get((kind, ref["name"]))
    if obj is None:
        if ref.get("optional"):
            return None
        label = "secret" if kind == "secret" else "configmap"
        raise NotReady("CreateContainerConfigError", f'{label} "{ref["name"]}" not found')
    return object_data(kind, obj)


_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes $(VAR) expansion: defined names are replaced, $$ escapes, the rest is left as is."""
    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR_REF.sub(repl, text)


def container_env(pod: dict[str, Any], container: dict[str, Any], objects: Objects) -> dict[str, str]:
    """envFrom, then env in order (later wins), with $(VAR) expansion against what came before."""
    env: dict[str, str] = {}
    for ef in container.get("envFrom") or []:
        prefix = ef.get("prefix", "")
        for kind, key in (("secret", "secretRef"), ("configmap", "configMapRef")):
            if ef.get(key):
                data = _lookup(objects, kind, ef[key]) or {}
                for k, v in data.items():
                    env[prefix + k] = v.decode(errors="replace")
    for e in container.get("env") or []:
        name = e["name"]
        if "value" in e or not e.get("valueFrom"):
            env[name] = expand(e.get("value", ""), env)
            continue
        vf = e["valueFrom"]
        if vf.get("fieldRef"):
            env[name] = field_value(pod, vf["fieldRef"]["fieldPath"])
        elif vf.get("resourceFieldRef"):
            env[name] = "0"  # the lab sets no resource limits
        else:
            kind, ref = ("secret", vf["secretKeyRef"]) if vf.get("secretKeyRef") else ("configmap",
                                                                                   vf["configMapKeyRef"])
            data = _lookup(objects, kind, ref)
            if data is None:
                continue
            if ref["key"] not in data:
                if ref.get("optional"):
                    continue
                raise NotReady("CreateContainerConfigError",
                               f'couldn\'t find key {ref["key"]} in {"Secret" if kind == "secret" else "ConfigMap"} '
                               f'{pod["metadata"]["namespace"]}/{ref["name"]}')
            env[name] = data[ref["key"]].decode(errors="replace")
    return env
