"""What the operator's Events look like once read back, for tests that compare whole Events."""
from __future__ import annotations

import hashlib


def as_read(event: dict) -> dict:
    """An Event without what the server adds (uid, creationTimestamp, generation, its own resourceVersion)."""
    return {**event, "metadata": {"name": event["metadata"]["name"], "namespace": event["metadata"]["namespace"]}}


def as_posted(obj: dict, kind: str, rv: str, key: str, reason: str, message: str, type_: str, stamp: str) -> dict:
    """The core/v1 Event the operator posts about `obj` (a NodeClaim, or a slot: kind Node) at its
    resourceVersion `rv`, as `as_read` leaves it: its name from the object's uid, the key and the reason."""
    uid, name = obj["metadata"]["uid"], obj["metadata"]["name"]
    digest = hashlib.sha256(f"{uid}/{key}/{reason}".encode()).hexdigest()[:10]
    return {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.{digest}", "namespace": "default"},
        "involvedObject": {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": kind, "name": name,
                           "uid": uid, "resourceVersion": rv},
        "reason": reason, "message": message, "type": type_,
        "source": {"component": "homecluster-controller"}, "reportingComponent": "homecluster-controller",
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }
