"""Helpers for the integration tests: the real operator (`homecluster run`, a subprocess) against the whole lab.

homecluster.lab.cluster.LabCluster starts the lab API server, the simulated machines (real IPMI on
loopback, a kubelet that joins a corev1 Node after the boot delay), the Job executor that runs the
real playbooks through ansible-runner, and the operator as a subprocess -- which is what lets the
crash tests SIGKILL it and start it again. Settings are short so a boot takes seconds.
"""
from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timedelta, timezone

import aiohttp
from homecluster.lab.cluster import LabCluster
from homecluster.model.timestamps import format_time

CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"
OPERATOR = "homecluster-operator"
SETTINGS = {
    "startup_job_timeout": "20s", "job_poll_interval": "2s", "registration_wait": "10s", "readiness_gate": "10s",
    "uncordon_retry_ceiling": "1s", "slack": "2s", "shutdown_job_timeout": "20s", "shutdown_holdoff": "20s",
}


async def wait_for(check, timeout: float = 30.0, what: str = "condition", interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


class Phases:
    """Records every status.phase a watched object reports, from a real watch stream (not polling)."""

    def __init__(self, url: str, path: str) -> None:
        self.url, self.path = url, path
        self.seen: dict[str, list[str]] = {}
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{self.url}{self.path}?watch=1") as resp:
                async for line in resp.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    name = (obj.get("metadata") or {}).get("name")
                    phase = (obj.get("status") or {}).get("phase")
                    history = self.seen.setdefault(name, [])
                    if phase and (not history or history[-1] != phase):
                        history.append(phase)

    def start(self) -> "Phases":
        self._task = asyncio.create_task(self._run())
        return self

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class Pool:
    def __init__(self, lab: LabCluster) -> None:
        self.lab = lab
        self.api = lab.api

    def claim_obj(self, name: str) -> dict | None:
        return self.api.get(CLAIMS, name)

    def status(self, name: str) -> dict:
        return (self.claim_obj(name) or {}).get("status") or {}

    def slot_status(self, slot: str = "worker-01") -> dict:
        return (self.api.get(SLOTS, slot) or {}).get("status") or {}

    async def claim(self, name: str, slot: str = "worker-01", budget: timedelta = timedelta(minutes=5)) -> dict:
        now = datetime.now(timezone.utc)
        return await self.api.create({
            "apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"infra.homecluster.dev/slot": slot}},
            "spec": {"slotRef": slot, "requestedAt": format_time(now), "deadlineAt": format_time(now + budget)}})

    async def phase(self, name: str, phase: str, timeout: float = 30.0) -> dict:
        await wait_for(lambda: self.status(name).get("phase") == phase, timeout,
                       f"claim {name} to be {phase} (now {self.status(name)}); operator log:\n"
                       f"{self.lab.operator.log_tail(20) if self.lab.operator else ''}")
        return self.status(name)

    async def gone(self, name: str, timeout: float = 30.0) -> None:
        await wait_for(lambda: self.claim_obj(name) is None, timeout, f"claim {name} to be gone ({self.status(name)})")

    def operator_writes(self, since: float = 0.0) -> list:
        return [e for e in self.api.audit.writes() if OPERATOR in e.user_agent and e.time >= since]

    async def drop_webhook(self) -> None:
        """Remove the webhook registration (as if it were down with failurePolicy Ignore)."""
        kind = "validatingwebhookconfigurations.admissionregistration.k8s.io"
        for cfg in self.api.list(kind):
            await self.api.delete(kind, cfg["metadata"]["name"])

    def jobs(self) -> list[dict]:
        return self.api.list("jobs.batch", self.lab.config.namespace)
