"""The integration scenarios' Pool (tests/integration/integration_pool.py) on the real control plane.

The scenarios read and write through `pool.api` the calls of the in-memory server's store: `get`/`list`
of slots, claims, corev1 Nodes and Jobs (synchronous, inside their waits), `create`, `patch`, `delete`.
RealPoolApi gives the same calls on kube-apiserver as the admin: the reads from RealApi's watched cache
(the informer pattern the lab itself uses) plus a watched cache of the operator's Jobs, the writes through
the API. What it does not give (the in-memory server's fault knobs, its request log, its plain-HTTP URL for
the scenarios' own watches) the scenarios run here do not use.
"""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from homecluster_lab.config import LabConfig
from homecluster_lab.k8s.labcluster import RealLabCluster
from homecluster_lab.node.watching import list_and_watch

import integration_pool
from support import waits


# resource names as the scenarios pass them -> the collection's path (all cluster-scoped but Jobs)
PATHS = {
    "nodeclaims.infra.homecluster.dev": "/apis/infra.homecluster.dev/v2alpha1/nodeclaims",
    "nodes.infra.homecluster.dev": "/apis/infra.homecluster.dev/v2alpha1/nodes",
    "groups.infra.homecluster.dev": "/apis/infra.homecluster.dev/v2alpha1/groups",
    "nodes": "/api/v1/nodes",
}
JOBS = "jobs.batch"
# The Jobs' timeouts on the real control plane: 2 and 3 minutes on a quiet machine, not SHORT_SETTINGS' 25 s and
# 30 s. A Job's pod is bound and started within a second of the Job; it is ansible-runner that the machine's load
# slows (at load 45 it printed nothing for 50 s: startup Jobs ran out at 40 s and 60 s, a shutdown Job's two runs
# at 60 s). Stretched by the load like every lab's (integration_pool.lab_settings). No scenario waits one out.
REAL_ROOM = {"startup_job_timeout": "120s", "shutdown_job_timeout": "180s"}


def real_lab_config(workdir: Path, slots: int = 1, settings: dict[str, str] | None = None, **config: Any) -> LabConfig:
    """The LabConfig of a real-control-plane lab for the operator's scenarios: IPMI machines that boot in a
    second, SHORT_SETTINGS with REAL_ROOM's Job timeouts overridden by `settings`, the Job timeouts stretched to
    the machine's load (integration_pool.lab_settings); `config` sets the rest (gitops=True, operator_args, ...)."""
    return LabConfig(**{
        "slots": slots, "driver": "ipmi", "boot_seconds": 1.0, "ready_taints_clear_seconds": 0.5,
        "provider_address": "127.0.0.1:0", "workdir": workdir, "require_operator": True,
        "control_plane": "kubernetes", "ready_timeout": 180,
        "settings": integration_pool.lab_settings({**integration_pool.SHORT_SETTINGS, **REAL_ROOM},
                                                  **(settings or {})),
        **config})


class RealPoolApi:
    """`pool.api` on the real lab. `await start()` once (it syncs the Jobs' cache), `await stop()` at the end."""

    def __init__(self, lab: RealLabCluster) -> None:
        self.real = lab.api
        self.namespace = lab.config.namespace
        self._jobs: dict[str, dict[str, Any]] = {}
        self._task: asyncio.Task | None = None

    async def start(self, timeout: float = 60) -> "RealPoolApi":
        synced = asyncio.Event()

        def resync(items: list[dict[str, Any]], _listed_at: float) -> None:
            self._jobs = {j["metadata"]["name"]: j for j in items}

        def event(etype: str, obj: dict[str, Any]) -> None:
            if etype == "DELETED":
                self._jobs.pop(obj["metadata"]["name"], None)
            else:
                self._jobs[obj["metadata"]["name"]] = obj

        self._task = asyncio.create_task(list_and_watch(
            self.real.kube, f"/apis/batch/v1/namespaces/{self.namespace}/jobs", resync, event, synced=synced))
        await asyncio.wait_for(synced.wait(), timeout)
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def get(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        if resource == JOBS:
            return self._jobs.get(name) if namespace in ("", self.namespace) else None
        return self.real.get(resource, name, namespace)

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        if resource == JOBS:
            assert namespace in (None, self.namespace), f"only the operator's Jobs are watched, not {namespace}'s"
            return sorted(self._jobs.values(), key=lambda j: j["metadata"]["name"])
        return self.real.list(resource, namespace)

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.real.create(obj)

    async def patch(self, resource: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.real.kube.merge_patch(f"{PATHS[resource]}/{name}", body)

    async def delete(self, resource: str, name: str) -> None:
        await self.real.kube.delete(f"{PATHS[resource]}/{name}")


@contextlib.asynccontextmanager
async def real_pool(config: Any, bound_scale: float):
    """(lab, pool): a RealLabCluster of `config` and the integration scenarios' Pool on it through RealPoolApi,
    the scenarios' wait bounds times `bound_scale` while it runs (waits still end when the thing happens)."""
    waits.BOUND_SCALE = bound_scale
    try:
        async with RealLabCluster(config) as lab:
            pool = integration_pool.Pool(lab)
            pool.api = await RealPoolApi(lab).start()
            try:
                yield lab, pool
            finally:
                await pool.api.stop()
    finally:
        waits.BOUND_SCALE = 1.0
