"""The lab's one kubelet: turns a node's NodeView into Kubernetes API writes, for every simulated node.

Every node the lab simulates runs this: a pool machine (machines.machine.SimMachine, its view from the boot
model), a VM (vm.node_watch.VmNode, its view from what the host sees of the guest) and the runner
(executor.runnernode.RunnerNode, always up: view.AlwaysUp). It speaks the standard Kubernetes API through the
lab's client (node/kube.py), so it works against the lab's API server or a real one. What it writes, and
nothing more:
- at each boot, the Node: created if missing (labels, providerID, the pool's readiness taints), or,
  if it exists, our labels added, providerID set if empty and our readiness taints put back —
  always by a merge patch conditional on resourceVersion, never touching spec.unschedulable, other
  taints or annotations;
- our readiness taints removed when the boot model says they clear (conditional patch again);
- nodes/<name>/status: conditions, capacity, allocatable, addresses, nodeInfo — on every change and
  every `status_seconds`; when the machine is off only the conditions (NotReady, then Unknown);
- the coordination.k8s.io Lease in kube-node-lease, renewed every `lease_seconds` while running
  (skipped with one warning when the server does not serve Leases).
On the real control plane (`pods_kubeconfig` given, `report_when_off=False`) it also does what the in-memory
server has no one else to do, and leaves what a real cluster has someone else for:
- while the machine is up, the pods bound to its Node are marked Running and their graceful deletions
  finished (boundpods.BoundPods, authenticated as the node); that stops when the machine goes off;
- once the machine is off it posts nothing (a switched-off kubelet cannot): the real node lifecycle
  controller marks the Node Unknown when its Lease runs out, and taints it node.kubernetes.io/unreachable.
  On the in-memory server, which has no such controller, it posts NotReady and then Unknown itself.
Traffic stays modest: between changes a kubelet sleeps until the boot model's next change or its
next heartbeat, and power changes wake it at once (the machine notifies it from any thread).
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from pathlib import Path
from typing import Any, Callable

import aiohttp

from homecluster_lab.node import manifest as nm
from homecluster_lab.node.boundpods import BoundPods
from homecluster_lab.node.kube import Kube, KubeError
from homecluster_lab.node.view import KubeletPhase, NodeSource, NodeView

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Kubelet:
    """One node's kubelet. `start()` runs it as a task (`reported` is set once it has posted); `stop()` ends it."""

    def __init__(self, machine: NodeSource, kube: Kube, *, lease_seconds: float = 10.0,
                 status_seconds: float = 60.0, retry_seconds: float = 1.0, lease_duration_seconds: int = 40,
                 wall_clock: Callable[[], dt.datetime] = _utcnow, taints_kube: Kube | None = None,
                 pods_kubeconfig: Path | None = None, report_when_off: bool = True) -> None:
        self.machine = machine
        self.identity = machine.identity
        self._kube = kube
        self._node_path = f"/api/v1/nodes/{self.identity.node_name}"
        # Who adds and removes the readiness taints once the Node exists. A kubelet authenticated as its node
        # may not (NodeRestriction: "node ... is not allowed to modify taints"); on a real cluster the CNI agent
        # does, with its own identity: `taints_kube` is that identity's client (None: this kubelet's own).
        self._taints_kube = taints_kube
        # the real control plane's extras (module docstring)
        self.pods = BoundPods(pods_kubeconfig, machine.identity.node_name) if pods_kubeconfig is not None else None
        self.report_when_off = report_when_off
        self.lease_seconds = lease_seconds
        self.status_seconds = status_seconds
        self.retry_seconds = retry_seconds
        self.lease_duration_seconds = lease_duration_seconds
        self._wall = wall_clock
        self._wake = asyncio.Event()
        self.reported = asyncio.Event()  # set once the Node is registered and its status and Lease posted
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._unsubscribe: Callable[[], None] | None = None
        # what we believe about the Node
        self._registered_boot: int | None = None
        self._node_uid: str | None = None
        self._taints_on = False
        self._posted: str | None = None
        self._posted_at = float("-inf")
        self._conditions: list[dict] | None = None
        self._lease_at = float("-inf")
        self._leases_served = True
        self._last_error: str | None = None
        self.writes = 0  # API writes made, for tests that watch the traffic budget

    # -- lifecycle
    def start(self) -> asyncio.Task:
        loop = asyncio.get_running_loop()
        self._unsubscribe = self.machine.subscribe(lambda: loop.call_soon_threadsafe(self._wake.set))
        self._task = asyncio.create_task(self.run(), name=f"kubelet-{self.identity.name}")
        return self._task

    async def stop(self) -> None:
        """Stop the kubelet. A cancellation that lands inside an HTTP call can be turned into an
        ordinary error by the client library and swallowed, so the loop also checks a flag."""
        self._stopping = True
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task is not None:
            self._wake.set()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.pods is not None:
            await self.pods.stop()

    async def run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            view = self.machine.view()
            try:
                await self._step(view)
                delay = self._delay(view)
                self._last_error = None
            except (KubeError, aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError) as exc:
                message = f"{type(exc).__name__}: {getattr(exc, 'status', '')} {getattr(exc, 'reason', exc)}"
                if message != self._last_error:  # say it once, not at every retry
                    log.warning("kubelet of %s (node %s): API call failed, retrying every %.1fs: %s",
                                self.identity.name, self.identity.node_name, self.retry_seconds, message)
                    self._last_error = message
                delay = self.retry_seconds
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _delay(self, view: NodeView) -> float | None:
        now = self.machine.now()
        times = [view.next_change]
        if view.phase is KubeletPhase.UP:
            times.append(self._posted_at + self.status_seconds)
            if self._leases_served:
                times.append(self._lease_at + self.lease_seconds)
        present = [t for t in times if t is not None]
        return max(0.0, min(present) - now) if present else None

    # -- one pass
    async def _step(self, view: NodeView) -> None:
        now = self.machine.now()
        if view.phase is KubeletPhase.UP:
            if self._registered_boot != view.boot_count:
                await self._register(view)
            if self._taints_on and not view.readiness_taints:
                await self._set_readiness_taints(False)
            if view.ready != self._posted or now >= self._posted_at + self.status_seconds:
                await self._post_status(view, full=True)
            if self._leases_served and now >= self._lease_at + self.lease_seconds:
                await self._renew_lease()
            self.reported.set()
            if self.pods is not None:
                await self.pods.start()
            return
        if self.pods is not None:
            await self.pods.stop()
        if not self.report_when_off:
            # switched off, so silent: the node lifecycle controller says Unknown. Post again once up.
            self._posted = None
            return
        if view.phase in (KubeletPhase.NOT_READY, KubeletPhase.UNKNOWN):
            if view.ready != self._posted:
                await self._post_status(view, full=False)

    async def _read_node(self) -> dict | None:
        try:
            return await self._kube.get(self._node_path)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    async def _patch_node(self, body: dict, kube: Kube | None = None) -> dict:
        self.writes += 1
        return await (kube or self._kube).merge_patch(self._node_path, body)

    async def _register(self, view: NodeView) -> None:
        """Create the Node, or re-register an existing one (conditional on resourceVersion, retried)."""
        for _ in range(5):
            node = await self._read_node()
            try:
                if node is None:
                    self.writes += 1
                    node = await self._kube.create("/api/v1/nodes", nm.registration(self.identity,
                                                                                     view.readiness_taints))
                else:
                    patch = nm.registration_patch(self.identity, node, view.readiness_taints)
                    if patch is not None and self._taints_kube is not None:
                        (patch.get("spec") or {}).pop("taints", None)  # put back by the taints' owner below
                        if not patch.get("spec"):
                            patch.pop("spec", None)
                        if set(patch) == {"metadata"} and set(patch["metadata"]) == {"resourceVersion"}:
                            patch = None
                    if patch is not None:
                        node = await self._patch_node(patch)
            except KubeError as exc:
                if exc.status == 409:  # created meanwhile, or changed since we read it: read again
                    continue
                raise
            break
        else:
            raise KubeError(409, "it kept changing while this kubelet registered it",
                            f"register node {self.identity.node_name}")
        if self._taints_kube is not None and view.readiness_taints and self.identity.readiness_taints:
            await self._set_readiness_taints(True)
        self._node_uid = (node.get("metadata") or {}).get("uid")
        self._conditions = (node.get("status") or {}).get("conditions")
        self._taints_on = view.readiness_taints and bool(self.identity.readiness_taints)
        self._registered_boot = view.boot_count
        self._posted = None  # post a full status now
        log.info("kubelet of %s: registered node %s (boot %d)", self.identity.name, self.identity.node_name,
                 view.boot_count)

    async def _set_readiness_taints(self, present: bool) -> None:
        for _ in range(5):
            node = await self._read_node()
            if node is None:  # someone deleted the Node: register again at the next pass
                self._registered_boot = None
                return
            patch = nm.taints_patch(self.identity, node, present)
            if patch is None:
                break
            try:
                await self._patch_node(patch, self._taints_kube)
                break
            except KubeError as exc:
                if exc.status != 409:
                    raise
        self._taints_on = present

    async def _post_status(self, view: NodeView, *, full: bool) -> None:
        ready = view.ready or "Unknown"
        conds = nm.conditions(ready, self._conditions, self._wall(), flapping=self.machine.faults.flaps)
        status: dict[str, Any] = (nm.full_status(self.identity, conds, view.boot_count) if full
                                  else {"conditions": conds})
        self.writes += 1
        try:
            await self._kube.merge_patch(f"{self._node_path}/status", {"status": status})
        except KubeError as exc:
            if exc.status != 404:
                raise
            # No Node (deleted, or never registered in this API server): nothing to report while down;
            # while up, register again.
            if view.phase is KubeletPhase.UP:
                self._registered_boot = None
                raise
        self._conditions = conds
        self._posted = view.ready
        self._posted_at = self.machine.now()

    async def _renew_lease(self) -> None:
        body = nm.lease(self.identity, self._node_uid, self._wall(), self.lease_duration_seconds)
        self.writes += 1
        try:
            await self._kube.merge_patch(f"{LEASES}/{self.identity.node_name}", {"spec": body["spec"]})
        except KubeError as exc:
            if exc.status != 404:
                raise
            await self._create_lease(body)
        self._lease_at = self.machine.now()

    async def _create_lease(self, body: dict) -> None:
        """Create the Lease; create kube-node-lease first if missing; give up on a server without Leases."""
        for attempt in range(2):
            try:
                await self._kube.create(LEASES, body)
                return
            except KubeError as exc:
                if exc.status == 409:
                    return
                if exc.status != 404:
                    raise
            if attempt == 0:
                with contextlib.suppress(KubeError):
                    await self._kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": LEASE_NAMESPACE}})
        self._leases_served = False
        log.warning("kubelet of %s: cannot create Lease %s/%s (the server does not serve coordination.k8s.io/v1 "
                    "Leases?); heartbeats go through node status only", self.identity.name, LEASE_NAMESPACE,
                    self.identity.node_name)

    # -- for tests and the lab
    @property
    def last_error(self) -> str | None:
        """The API error of the last pass that failed, or None once a pass succeeds."""
        return self._last_error

    @property
    def posted(self) -> str | None:
        """The Ready status last written ("True" | "False" | "Unknown"), or None."""
        return self._posted
