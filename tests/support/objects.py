"""The project's objects as the API server holds them, for tests to create or feed: a NodeClaim, a slot (the
infra Node), a Group, a core/v1 Node. Each builder writes the fields every test needs and takes the rest as
arguments, so a test names only what it is about (issue 27)."""
from __future__ import annotations

from typing import Any

from homecluster import GROUP_VERSION, names

def claim(name: str, slot: str = "worker-01", phase: str | None = None, *, requested_at: str | None = None,
          deadline_at: str | None = None, labelled: bool = False, finalizers: list[str] | None = None,
          spec: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None, **status: Any) -> dict:
    """A NodeClaim on `slot`. `labelled` adds the slot label the operator sets; `phase` and `status` (attempt=1,
    ...) make a status, which is left out without them; `spec` and `metadata` add their fields."""
    meta: dict[str, Any] = {"name": name, **(metadata or {})}
    if labelled:
        meta["labels"] = {names.LABEL_SLOT: slot, **meta.get("labels", {})}
    if finalizers is not None:
        meta["finalizers"] = list(finalizers)
    body: dict[str, Any] = {"slotRef": slot}
    if requested_at is not None:
        body["requestedAt"] = requested_at
    if deadline_at is not None:
        body["deadlineAt"] = deadline_at
    obj = {"apiVersion": GROUP_VERSION, "kind": "NodeClaim", "metadata": meta, "spec": {**body, **(spec or {})}}
    if phase is not None or status:
        obj["status"] = {**({"phase": phase} if phase is not None else {}), **status}
    return obj


def slot(name: str = "worker-01", group: str = "workers", *, power: dict[str, Any] | None = None,
         **spec: Any) -> dict:
    """A slot (kind Node of the infra group) in `group`; `power` is its spec.power block."""
    body: dict[str, Any] = {"groupRef": group, **({"power": power} if power is not None else {}), **spec}
    return {"apiVersion": GROUP_VERSION, "kind": "Node", "metadata": {"name": name}, "spec": body}


def ipmi(address: str = "127.0.0.1", secret: str = "worker-01-bmc", **fields: Any) -> dict:
    """An IPMI spec.power block whose credentials are in Secret `secret`."""
    return {"method": "ipmi", "ipmi": {"address": address, "credentialsSecretRef": {"name": secret}, **fields}}


def group(name: str = "workers", max_size: int = 3, *, capacity: dict[str, Any] | None = None, **spec: Any) -> dict:
    """A Group of at most `max_size` machines, each with `capacity` (4 CPUs, 8Gi, 110 pods by default)."""
    template = {"capacity": capacity or {"cpu": "4", "memory": "8Gi", "pods": 110}}
    return {"apiVersion": GROUP_VERSION, "kind": "Group", "metadata": {"name": name},
            "spec": {"maxSize": max_size, "template": template, **spec}}


def node(name: str, provider_id: str = "", ready: bool | None = None) -> dict:
    """A core/v1 Node, with a Ready condition when `ready` is given."""
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                           "spec": {"providerID": provider_id} if provider_id else {}}
    if ready is not None:
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return obj
