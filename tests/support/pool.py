"""The pool the lifecycle and operator tests start from: the lab API server, our client pointed at it, a hand-filled
cache, a fake clock (fixtures lab, env, pool, logged; tests/lifecycle/conftest.py and tests/operator/conftest.py
import them).

Nothing is mocked: every write goes to the lab's real HTTP API server (schema validation, status
subresource, resourceVersion conflicts). What the tests play by hand is the rest of the cluster --
the Job controller (Job status), the kubelet (the corev1 Node) -- and the clock, so each rule of the
model can be reached exactly and in milliseconds.
"""
from __future__ import annotations

import contextlib
import logging

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from support import objects

from homecluster import names
from homecluster_lab.apiserver import LabAPIServer
from homecluster.model.settings import Settings
from homecluster.model.timestamps import format_time
from homecluster.kube.connection import Connection
from homecluster.lifecycle.context import Context
from homecluster.operator.controller import Controller
from homecluster.kube.client import KubeClient
from homecluster.kube.store import Store

REPO = Path(__file__).resolve().parents[2]
NS = "homecluster-system"


class Clock:
    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(timezone.utc).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> datetime:
        self.now += timedelta(**kw)
        return self.now


SHORT = Settings.from_mapping({
    "startup_job_timeout": "60s", "job_poll_interval": "5s", "registration_wait": "30s", "readiness_gate": "60s",
    "uncordon_retry_ceiling": "2s", "slack": "10s", "shutdown_holdoff": "300s", "shutdown_job_timeout": "60s",
    "claim_ttl": "600s",
})


@pytest.fixture
async def lab(tmp_path: Path):
    async with LabAPIServer(crd_dir=REPO / "config" / "crd", workdir=tmp_path / "lab-api", gc_interval=0.05) as api:
        await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        yield api


class Env:
    """The lab plus one controller over a hand-filled cache; `step()` refills and runs one pass."""

    def __init__(self, lab: LabAPIServer, ctx: Context, controller: Controller, clock: Clock) -> None:
        self.lab, self.ctx, self.controller, self.clock = lab, ctx, controller, clock

    async def refill(self) -> None:
        await self.controller.fill()

    async def drain_queue(self) -> None:
        """Take every slot the controller has queued off its queue (as done), so a test sees what comes next."""
        while len(self.controller.queue):
            self.controller.queue.done(await self.controller.queue.get())

    async def step(self, slot: str = "worker-01", times: int = 1):
        """Refill the cache from the server, then run the pass until it stops writing (at most `times` writes).
        Before each refill the lab's garbage collector makes one pass (it also runs on its own every 0.2 s): what
        a delete's propagation does (a Job deleted Foreground goes once its pods are gone) is there for the pass."""
        result = None
        for _ in range(max(times, 1) * 4):
            self.lab.collector.run_once()
            await self.refill()
            from homecluster.lifecycle.jobio import StaleJob
            from homecluster.kube.client import Conflict
            from homecluster.lifecycle.slotpass import run_pass
            try:
                result = await run_pass(self.ctx, slot)
            except (StaleJob, Conflict):  # the controller re-runs the pass; so do we
                continue
            if not result.wrote:
                break
        return result

    # --- objects as the rest of the cluster would write them ------------------------------
    async def group(self, name: str = "workers", **spec: Any) -> dict:
        body = {"minSize": 0, "maxSize": 3, "template": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": 110}},
                **spec}
        return await self.lab.create({"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group",
                                      "metadata": {"name": name}, "spec": body})

    async def slot(self, name: str = "worker-01", group: str = "workers") -> dict:
        return await self.lab.create(objects.slot(name, group, power=objects.ipmi(secret=f"{name}-bmc", port=6230)))

    async def claim(self, name: str = "c1", slot: str = "worker-01", deadline: timedelta | None = timedelta(minutes=5),
                    created_offset: int = 0) -> dict:
        return await self.lab.create(objects.claim(
            name, slot, requested_at=format_time(self.clock.now), labelled=True,
            deadline_at=format_time(self.clock.now + deadline) if deadline is not None else None))

    async def slot_gone_by_hand(self, name: str = "worker-01") -> None:
        """The slot deleted and its finalizer removed by hand (`kubectl patch slot X --type=merge -p
        '{"metadata":{"finalizers":null}}'`, or the operator down): the slot is gone, whatever its machine."""
        await self.lab.delete("nodes.infra.homecluster.dev", name)
        if self.get("nodes.infra.homecluster.dev", name) is not None:
            await self.lab.patch("nodes.infra.homecluster.dev", name, {"metadata": {"finalizers": None}})
        assert self.get("nodes.infra.homecluster.dev", name) is None

    def get(self, resource: str, name: str, namespace: str = "") -> dict | None:
        return self.lab.get(resource, name, namespace)

    def claim_status(self, name: str = "c1") -> dict:
        return (self.get("nodeclaims.infra.homecluster.dev", name) or {}).get("status") or {}

    def slot_status(self, name: str = "worker-01") -> dict:
        return (self.get("nodes.infra.homecluster.dev", name) or {}).get("status") or {}

    def jobs(self) -> list[dict]:
        return self.lab.list("jobs.batch", NS)

    async def job_done(self, name: str, outcome: str = "succeeded", at: datetime | None = None) -> None:
        """Play the Job controller: mark a Job Complete, Failed, or Failed/DeadlineExceeded."""
        at = at or self.clock.now
        stamp = format_time(at)
        if outcome == "succeeded":
            conds = [{"type": "Complete", "status": "True", "lastTransitionTime": stamp}]
            status = {"conditions": conds, "succeeded": 1, "startTime": stamp, "completionTime": stamp}
        else:
            reason = "DeadlineExceeded" if outcome == "timed_out" else "BackoffLimitExceeded"
            conds = [{"type": "Failed", "status": "True", "reason": reason, "message": outcome,
                      "lastTransitionTime": stamp}]
            status = {"conditions": conds, "failed": 1, "startTime": stamp}
        await self.lab.patch("jobs.batch", name, {"status": status}, namespace=NS, subresource="status")

    async def node(self, name: str = "worker-01", ready: bool = True, *, taints: list | None = None,
                   unschedulable: bool = False, annotations: dict | None = None, at: datetime | None = None) -> dict:
        """Play the kubelet: create or update the corev1 Node with its Ready condition."""
        stamp = format_time(at or self.clock.now)
        cond = {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp,
                "lastHeartbeatTime": stamp, "reason": "KubeletReady" if ready else "KubeletNotReady"}
        existing = self.lab.get("nodes", name)
        spec: dict[str, Any] = {"taints": taints or [], "unschedulable": unschedulable}
        if existing is None:
            await self.lab.create({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec})
        else:
            md: dict[str, Any] = {"annotations": annotations} if annotations is not None else {}
            await self.lab.patch("nodes", name, {"metadata": md, "spec": spec})
        return await self.lab.patch("nodes", name, {"status": {"conditions": [cond]}}, subresource="status")

    async def job_pod(self, name: str, phase: str, job: str = "c1-startup") -> dict:
        """A pod of Job `job` in `phase` (the Job controller's and the kubelet's part): Pending waits in
        ContainerCreating; any other phase carries a container that has run."""
        created = await self.lab.create({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": {"job-name": job}},
            "spec": {"containers": [{"name": "ansible-runner", "image": "runner:test"}]}})
        state = {"waiting": {"reason": "ContainerCreating"}} if phase == "Pending" else {"terminated": {"exitCode": 0}}
        await self.lab.patch("pods", name, {"status": {"phase": phase, "containerStatuses": [
            {"name": "ansible-runner", "ready": False, "restartCount": 0, "image": "runner:test", "imageID": "",
             "state": state}]}}, namespace=NS, subresource="status")
        return created

    async def lease(self, name: str = "worker-01", *, duration: int = 40) -> dict:
        """Play the kubelet's heartbeat: create or renew the Node's Lease in kube-node-lease at the clock's now."""
        if self.lab.get("namespaces", "kube-node-lease") is None:
            await self.lab.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"}})
        spec = {"holderIdentity": name, "leaseDurationSeconds": duration,
                "renewTime": self.clock.now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        if self.lab.get("leases.coordination.k8s.io", name, "kube-node-lease") is None:
            return await self.lab.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                          "metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": spec})
        return await self.lab.patch("leases.coordination.k8s.io", name, {"spec": spec}, namespace="kube-node-lease")

    def writes(self, agent: str = "homecluster-operator"):
        return [e for e in self.lab.audit.writes() if agent in e.user_agent]

    async def booting(self, **group: Any) -> None:
        """The Group (with `group` in its spec), the slot worker-01 and claim c1, taken to booting."""
        await self.group(**group)
        await self.slot()
        await self.claim()
        await self.step()
        assert self.claim_status()["phase"] == "booting"

    async def ready_claim(self, name: str = "c1") -> None:
        """A claim on worker-01 taken to ready: its startup Job succeeds and its Node joins."""
        await self.claim(name)
        await self.step()
        await self.job_done(f"{name}-startup")
        await self.node()
        await self.step()
        assert self.claim_status(name)["phase"] == "ready"


def shutdown_jobs(env: Env) -> list[dict]:
    return [j for j in env.jobs() if j["metadata"]["labels"][names.LABEL_JOB_KIND] == "shutdown"]


def newest_shutdown(env: Env) -> str:
    return max(shutdown_jobs(env), key=lambda j: int(j["metadata"]["resourceVersion"]))["metadata"]["name"]


@pytest.fixture
async def env(lab: LabAPIServer):
    clock = Clock()
    client = KubeClient(Connection(server=lab.url))
    ctx = Context(client=client, store=Store(), settings=SHORT, namespace=NS, job_image="runner:test", clock=clock)
    controller = Controller(ctx, workers=1)
    e = Env(lab, ctx, controller, clock)
    yield e
    await client.close()


@pytest.fixture
async def pool(env: Env) -> Env:
    """One Group and its slot worker-01: what most lifecycle tests start from."""
    await env.group()
    await env.slot()
    return env


@contextlib.contextmanager
def _logged(log: logging.Logger, level: int):
    """The records `log` emits at `level` or above, whatever other tests did to the logging tree."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(level)
    handler.emit = records.append
    before = log.level
    log.addHandler(handler)
    log.setLevel(level)
    try:
        yield records
    finally:
        log.removeHandler(handler)
        log.setLevel(before)


@pytest.fixture
def logged():
    """`with logged(env.ctx.log, logging.INFO) as records:` the operator's log records of a step."""
    return _logged
