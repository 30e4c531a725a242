"""The pods bound to a node: the watch every lab kubelet keeps on them, and a machine's, which reports them Running.

`watch_bound` lists and watches the pods bound to one Node (`fieldSelector=spec.nodeName=<node>`, the only way
a node may) and `finish_deletion` is a kubelet's end of a graceful deletion: both serve the runner
(executor/runnernode.py, which runs its pods as processes) and the machines' `BoundPods` below.

A simulated machine runs nothing (as KWOK's nodes): while its kubelet is up, every pod the scheduler binds
to its Node is reported Running at once (phase, the four conditions, each container running, a pod IP),
and a pod being deleted gracefully gets its final status (each container terminated, exit code 0) and is
then deleted with a grace period of 0, for that pod only (its uid as a precondition) — what a kubelet does
once the containers have stopped. So a Deployment's pods placed on a new pool Node run, and `kubectl
drain`'s evictions complete, as cluster-autoscaler expects of a node it added.

Authenticated as the node (the machine kubelet's own kubeconfig), so the Node authorizer and NodeRestriction
judge every request: the pods are listed and watched with `fieldSelector=spec.nodeName=<node>`, the only
way a node may. When the machine is off, `stop()` ends it: nothing answers for the pods any more, and the
real node lifecycle controller decides what becomes of them.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp

from homecluster_lab.node import podstatus
from homecluster_lab.node.clock import now_rfc3339
from homecluster_lab.node.kube import Kube, KubeError, pod_path
from homecluster_lab.node.watching import list_and_watch

log = logging.getLogger(__name__)


def watch_bound(kube: Kube, node_name: str, on_resync: Callable[[list[dict[str, Any]], float], None],
                on_event: Callable[[str, dict[str, Any]], None], *, synced: asyncio.Event | None = None
                ) -> Coroutine[Any, Any, None]:
    """List and watch, until cancelled, the pods the scheduler bound to `node_name` (node/watching.py)."""
    return list_and_watch(kube, "/api/v1/pods", on_resync, on_event, synced=synced,
                          query={"fieldSelector": f"spec.nodeName={node_name}"})


async def finish_deletion(kube: Kube, pod: dict[str, Any], status: dict[str, Any] | None) -> None:
    """A kubelet's end of a graceful deletion: the pod's final status (when given), then the delete with a grace
    period of 0, for this pod only (its uid as a precondition)."""
    meta = pod["metadata"]
    ns, name = meta["namespace"], meta["name"]
    if status is not None:
        await kube.merge_patch(pod_path(ns, name, "status"), {"status": status})
    await kube.request("DELETE", pod_path(ns, name), {
        "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
        "preconditions": {"uid": meta["uid"]}})


def running_status(pod: dict[str, Any], now: str, host_ip: str) -> dict[str, Any]:
    """A pod's status once its containers "run": podbuild's, with the Node's address."""
    status = podstatus.status_running(pod, now)
    status.update(hostIP=host_ip, hostIPs=[{"ip": host_ip}], podIP=host_ip, podIPs=[{"ip": host_ip}])
    return status


def stopped_status(pod: dict[str, Any], now: str, host_ip: str) -> dict[str, Any]:
    """A pod's status once its containers stopped on SIGTERM: each terminated with exit code 0."""
    started = (pod.get("status") or {}).get("startTime") or now
    status = podstatus.status_terminated(pod, started, now, 0)
    status.update(hostIP=host_ip, hostIPs=[{"ip": host_ip}], podIP=host_ip, podIPs=[{"ip": host_ip}])
    return status


def wanted(pod: dict[str, Any]) -> str | None:
    """What this kubelet owes the pod: "finish" (a graceful deletion), "run" (not yet Running), or None."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "finish"
    if (pod.get("status") or {}).get("phase") in (None, "Pending"):
        return "run"
    return None


class BoundPods:
    """`await start()` while the machine's kubelet is up; `await stop()` when the machine goes off."""

    def __init__(self, kubeconfig_path: Path, node_name: str, host_ip: str = "127.0.0.1") -> None:
        self.kubeconfig_path = kubeconfig_path
        self.node_name = node_name
        self.host_ip = host_ip
        self._kube: Kube | None = None
        self._watch: asyncio.Task | None = None
        self._work: dict[str, asyncio.Task] = {}  # pod uid -> the write under way
        # pod uid -> the latest version seen while its write was under way: considered once that write ends,
        # so a deletion arriving during the "run" write is finished, not left until the next relist
        self._pending: dict[str, dict[str, Any]] = {}
        self._stopped = False
        self._done: dict[str, str] = {}  # pod uid -> what was last done for it ("run" | "finish")

    @property
    def running(self) -> bool:
        return self._watch is not None

    async def start(self) -> None:
        if self._watch is not None:
            return
        self._kube = Kube(str(self.kubeconfig_path))
        await self._kube.__aenter__()
        self._done.clear()
        self._stopped = False
        self._watch = asyncio.create_task(watch_bound(self._kube, self.node_name, self._resync, self._event),
                                          name=f"kubelet {self.node_name} pods")

    async def stop(self) -> None:
        self._stopped = True
        self._pending.clear()
        tasks = ([self._watch] if self._watch is not None else []) + list(self._work.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._watch, self._work = None, {}
        if self._kube is not None:
            await self._kube.__aexit__()
            self._kube = None

    def _resync(self, items: list[dict[str, Any]], listed_at: float) -> None:
        for pod in items:
            self._consider(pod)

    def _event(self, etype: str, pod: dict[str, Any]) -> None:
        if etype == "DELETED":
            uid = (pod.get("metadata") or {}).get("uid", "")
            self._done.pop(uid, None)
            self._pending.pop(uid, None)
            return
        self._consider(pod)

    def _consider(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        todo = wanted(pod)
        if uid in self._work:
            self._pending[uid] = pod  # looked at again when that write ends (_do)
            return
        if todo is None or self._done.get(uid) == todo:
            return
        self._work[uid] = asyncio.create_task(self._do(todo, pod), name=f"pod {pod['metadata']['name']} {todo}")

    async def _do(self, todo: str, pod: dict[str, Any], attempts: int = 30) -> None:
        meta = pod["metadata"]
        ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
        try:
            for attempt in range(attempts):
                try:
                    await self._write(todo, pod)
                    self._done[uid] = todo
                    return
                except KubeError as exc:
                    if exc.status in (404, 409):  # gone, or another pod of that name now: nothing of ours to do
                        return
                    if attempt == attempts - 1:
                        log.warning("kubelet of %s: pod %s/%s (%s): %s", self.node_name, ns, name, todo, exc)
                        return
                except (OSError, asyncio.TimeoutError, aiohttp.ClientError):
                    pass
                await asyncio.sleep(1.0)
        finally:
            self._work.pop(uid, None)
            later = self._pending.pop(uid, None)
            if later is not None and not self._stopped:
                self._consider(later)

    async def _write(self, todo: str, pod: dict[str, Any]) -> None:
        assert self._kube is not None
        if todo == "finish":
            await finish_deletion(self._kube, pod, stopped_status(pod, now_rfc3339(), self.host_ip))
            return
        meta = pod["metadata"]
        await self._kube.merge_patch(pod_path(meta["namespace"], meta["name"], "status"),
                                     {"status": running_status(pod, now_rfc3339(), self.host_ip)})
