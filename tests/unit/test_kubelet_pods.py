"""BoundPods (the machines' kubelets' pods, lab/homecluster_lab/machines/kubelet_pods.py): an event for a pod
whose write is under way is not lost.

The writes are replaced by a recorder whose "run" write waits on a gate (a fake: what matters is the order of
events and writes, which a real server cannot hold still); the rest is BoundPods' own code. The real
kubelet's pods on the real control plane: tests/k8s/test_k8s_pool_nodes.py.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from homecluster_lab.node.boundpods import BoundPods


class GatedWrites(BoundPods):
    def __init__(self) -> None:
        super().__init__(Path("unused-kubeconfig"), "worker-01")
        self.writes: list[tuple[str, str]] = []
        self.gate = asyncio.Event()

    async def _write(self, todo: str, pod: dict[str, Any]) -> None:
        self.writes.append((todo, pod["metadata"]["uid"]))
        if todo == "run":
            await self.gate.wait()

    async def settle(self) -> None:
        while self._work:
            await asyncio.gather(*list(self._work.values()))


def pod(deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web-0", "namespace": "default", "uid": "u1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": "worker-01", "containers": [{"name": "web"}]},
            "status": {"phase": "Pending"}}


async def test_a_deletion_seen_while_the_run_write_is_under_way_is_finished_after_it() -> None:
    pods = GatedWrites()
    pods._event("ADDED", pod())
    await asyncio.sleep(0)
    assert pods.writes == [("run", "u1")]
    pods._event("MODIFIED", pod(deleting=True))  # kubectl drain's eviction, while "run" is still being written
    await asyncio.sleep(0)
    assert pods.writes == [("run", "u1")]  # one write per pod at a time
    pods.gate.set()
    await pods.settle()
    assert pods.writes == [("run", "u1"), ("finish", "u1")]


async def test_a_pod_deleted_while_its_write_is_under_way_is_not_written_again() -> None:
    pods = GatedWrites()
    pods._event("ADDED", pod())
    await asyncio.sleep(0)
    pods._event("MODIFIED", pod(deleting=True))
    pods._event("DELETED", pod(deleting=True))
    pods.gate.set()
    await pods.settle()
    assert pods.writes == [("run", "u1")]
