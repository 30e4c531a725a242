"""Pure builders of what a simulated kubelet writes: the Node at registration, its status, its Lease.

A kubelet owns the Node's status and the taints it registers with; everything else on the Node
(a cordon in spec.unschedulable, other taints, annotations, labels others add) belongs to someone
else and is carried over untouched by these functions.
"""
from __future__ import annotations

import datetime as dt
import uuid

from homecluster_lab.node.identity import Identity, Taint

KUBELET_VERSION = "v1.32.0-homecluster-lab"
CONDITION_TYPES = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
_HEALTHY = {  # type -> (reason, message) while the kubelet runs
    "MemoryPressure": ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    "DiskPressure": ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    "PIDPressure": ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
}


def rfc3339(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def boot_id(identity: Identity, boot_count: int) -> str:
    """A stable id per boot, as /proc/sys/kernel/random/boot_id would give."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"homecluster-lab:{identity.name}:{boot_count}"))


def registration(identity: Identity, with_readiness_taints: bool) -> dict:
    """The Node a kubelet creates when none exists (status is written separately)."""
    labels = {"kubernetes.io/hostname": identity.node_name, "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64", **identity.labels}
    spec: dict = {"providerID": identity.provider_id} if identity.provider_id else {}  # the runner has none
    if with_readiness_taints and identity.readiness_taints:
        spec["taints"] = [t.to_api() for t in identity.readiness_taints]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": identity.node_name, "labels": labels},
            "spec": spec}


def merge_taints(current: list[dict] | None, ours: tuple[Taint, ...], present: bool) -> list[dict]:
    """`current` with our taints added (present) or removed (not present); others' taints kept in order."""
    keys = {(t.key, t.effect) for t in ours}
    kept = [t for t in (current or []) if (t.get("key"), t.get("effect")) not in keys]
    if not present:
        return kept
    existing = {(t.get("key"), t.get("effect")): t for t in (current or [])}
    return kept + [existing.get((t.key, t.effect)) or t.to_api() for t in ours]


def registration_patch(identity: Identity, node: dict, with_readiness_taints: bool) -> dict | None:
    """What to merge into an existing Node when the kubelet registers again; None if nothing.

    Labels are added (never removed); providerID is set only when empty (it is immutable once set);
    taints are rewritten only to add or remove our own. metadata.resourceVersion makes the write
    conditional, so a concurrent change (a cordon, a taint) is never lost."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    wanted_labels = registration(identity, False)["metadata"]["labels"]
    labels = {k: v for k, v in wanted_labels.items() if (meta.get("labels") or {}).get(k) != v}
    patch: dict = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {}}
    if labels:
        patch["metadata"]["labels"] = labels
    if not spec.get("providerID") and identity.provider_id:
        patch["spec"]["providerID"] = identity.provider_id
    taints = merge_taints(spec.get("taints"), identity.readiness_taints, with_readiness_taints)
    if taints != (spec.get("taints") or []):
        patch["spec"]["taints"] = taints
    if not labels and not patch["spec"]:
        return None
    if not patch["spec"]:
        del patch["spec"]
    return patch


def taints_patch(identity: Identity, node: dict, present: bool) -> dict | None:
    """A conditional merge patch that adds or removes our readiness taints; None if already so."""
    spec = node.get("spec") or {}
    taints = merge_taints(spec.get("taints"), identity.readiness_taints, present)
    if taints == (spec.get("taints") or []):
        return None
    return {"metadata": {"resourceVersion": (node.get("metadata") or {}).get("resourceVersion")},
            "spec": {"taints": taints}}


def conditions(ready: str, previous: list[dict] | None, now: dt.datetime, *, flapping: bool = False) -> list[dict]:
    """The four node conditions for a Ready status of "True", "False" or "Unknown".

    lastTransitionTime is kept from `previous` for a condition whose status did not change."""
    before = {c.get("type"): c for c in (previous or [])}
    stamp = rfc3339(now)
    out = []
    for kind in CONDITION_TYPES:
        if ready == "Unknown":
            status, reason, message = "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."
        elif kind == "Ready":
            if ready == "True":
                status, reason, message = "True", "KubeletReady", "kubelet is posting ready status"
            else:
                status, reason = "False", "KubeletNotReady"
                message = ("container runtime network not ready (simulated flap)" if flapping
                           else "the machine is powered off or restarting")
        else:
            status, (reason, message) = "False", _HEALTHY[kind]
        old = before.get(kind)
        transition = old.get("lastTransitionTime") if old and old.get("status") == status else None
        out.append({"type": kind, "status": status, "reason": reason, "message": message,
                    "lastHeartbeatTime": stamp, "lastTransitionTime": transition or stamp})
    return out


def full_status(identity: Identity, conds: list[dict], boot_count: int, *, address: str = "127.0.0.1") -> dict:
    """The status a running kubelet posts: conditions, capacity, addresses, nodeInfo."""
    return {
        "conditions": conds,
        "capacity": dict(identity.capacity),
        "allocatable": dict(identity.allocatable or identity.capacity),
        "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": identity.node_name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": uuid.uuid5(uuid.NAMESPACE_URL, f"homecluster-lab:{identity.name}").hex,
            "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, identity.name)),
            "bootID": boot_id(identity, boot_count),
            "kernelVersion": "6.1.0-homecluster-lab",
            "osImage": "homecluster lab simulated machine",
            "containerRuntimeVersion": "containerd://1.7.0",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def lease(identity: Identity, node_uid: str | None, now: dt.datetime, duration_seconds: int) -> dict:
    """The node's heartbeat Lease in kube-node-lease, owned by its Node."""
    meta: dict = {"name": identity.node_name, "namespace": "kube-node-lease"}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": identity.node_name, "uid": node_uid}]
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": identity.node_name, "leaseDurationSeconds": duration_seconds,
                     "renewTime": micro_time(now)}}
