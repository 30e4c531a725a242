"""What the operator's Events look like once read back, for tests that compare whole Events."""
from __future__ import annotations


def as_read(event: dict) -> dict:
    """An Event without what the server adds (uid, creationTimestamp, generation, its own resourceVersion)."""
    return {**event, "metadata": {"name": event["metadata"]["name"], "namespace": event["metadata"]["namespace"]}}
