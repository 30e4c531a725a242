"""Helpers for the integration tests: the real operator (`homecluster run`, a subprocess) against the whole lab.

homecluster_lab.cluster.LabCluster starts the lab API server, the simulated machines (real IPMI on
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
from homecluster_lab.cluster import LabCluster
from load_factor import load_factor
from support import objects
from support.lab_settings import boot_window, with_job_room
from support.waits import until

from homecluster.model.timestamps import format_time

CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"
OPERATOR = "homecluster-operator"
# A shutdown Job runs two ansible-runner processes one after the other (cordon-drain, the only step with a
# token, then the power-off): 30 s, as SHORT_SETTINGS and the metrics test give it. These are the figures for a
# quiet machine: lab_settings stretches the Job timeouts to the machine's load when a test builds its lab.
SETTINGS = {
    "startup_job_timeout": "30s", "job_poll_interval": "2s", "registration_wait": "10s", "readiness_gate": "10s",
    "uncordon_retry_ceiling": "1s", "slack": "2s", "shutdown_job_timeout": "30s", "shutdown_holdoff": "20s",
    "pod_blocked_settle": "2s",  # the lab's kubelet retries a failed mount every second
}


# A watch stream lasts as long as its test: aiohttp's default (5 minutes in all) ended the Timeline of
# test_attempts silently at 300 s when the machine's load stretched the test to 452 s, and the claims' last
# statuses were never recorded.
WATCH_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_read=None)


class Phases:
    """Records every status.phase a watched object reports, from a real watch stream (not polling)."""

    def __init__(self, url: str, path: str) -> None:
        self.url, self.path = url, path
        self.seen: dict[str, list[str]] = {}
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        async with aiohttp.ClientSession(timeout=WATCH_TIMEOUT) as session:
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


def claim_budget(settings: dict[str, str]) -> timedelta:
    """A test claim's deadline: 5 minutes, or one boot window of the lab's settings and a minute if that is longer
    (their Job timeouts are stretched by the load, so a boot on a busy machine is not cut short by a deadline
    written for a quiet one)."""
    return max(timedelta(minutes=5), timedelta(seconds=boot_window(settings) + 60))


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

    async def last_claim(self, slot: str, name: str, timeout: float = 10.0) -> dict:
        """The slot's lastClaim digest once it names `name`: written after the claim's terminal status, so
        a test that saw the claim end waits for it here instead of racing it."""
        return await until(lambda: (self.slot_status(slot).get("lastClaim") or {}).get("name") == name
                           and self.slot_status(slot)["lastClaim"],
                           lambda: f"lastClaim {name} on {slot} (slot status {self.slot_status(slot)})", timeout)

    async def claim(self, name: str, slot: str = "worker-01", budget: timedelta | None = None) -> dict:
        """A NodeClaim for `slot`, requested now, its deadline `budget` (default: claim_budget) later."""
        budget = claim_budget(self.lab.config.settings) if budget is None else budget
        now = datetime.now(timezone.utc)
        return await self.api.create(objects.claim(name, slot, labelled=True, requested_at=format_time(now),
                                                   deadline_at=format_time(now + budget)))

    async def phase(self, name: str, phase: str, timeout: float = 30.0) -> dict:
        await until(lambda: self.status(name).get("phase") == phase,
                    lambda: f"claim {name} to be {phase} (now {self.status(name)}); operator log:\n"
                            f"{self.lab.operator.log_tail(20) if self.lab.operator else ''}", timeout)
        return self.status(name)

    async def gone(self, name: str, timeout: float = 30.0) -> None:
        await until(lambda: self.claim_obj(name) is None,
                    lambda: f"claim {name} to be gone ({self.status(name)}); operator log:\n"
                            f"{self.lab.operator.log_tail(20) if self.lab.operator else ''}", timeout)

    def operator_writes(self, since: float = 0.0) -> list:
        return [e for e in self.api.audit.writes() if OPERATOR in e.user_agent and e.time >= since]

    async def drop_webhook(self) -> None:
        """Remove the webhook registration (as if it were down with failurePolicy Ignore)."""
        kind = "validatingwebhookconfigurations.admissionregistration.k8s.io"
        for cfg in self.api.list(kind):
            await self.api.delete(kind, cfg["metadata"]["name"])

    def jobs(self) -> list[dict]:
        return self.api.list("jobs.batch", self.lab.config.namespace)


# ---- short boot window, timelines, kubectl (test_table_rows, test_machinegone_and_shutdowns, test_attempts) ----
# Every boot setting shrunk so one boot window (the MachineGone expiry, the boot floor) is 25+1+4+4+1+1 = 36 s on a
# quiet machine. The startup Job runs the real playbook through ansible-runner, which needs ~5-8 s on 2 quiet cores,
# and since the Job covers the boot it also waits for the machine's boot check port: 25 s. Shutdown Jobs (cordon,
# drain, power off) need ~8-10 s: 30 s. Both are stretched by the machine's load when a lab is built
# (lab_settings), so the window a test waits out is support.lab_settings.boot_window(lab.config.settings).
SHORT_SETTINGS = {
    "startup_job_timeout": "25s", "job_poll_interval": "1s", "registration_wait": "4s", "readiness_gate": "4s",
    "uncordon_retry_ceiling": "1s", "slack": "1s", "shutdown_job_timeout": "30s", "shutdown_holdoff": "15s",
    "pod_blocked_settle": "2s",
}
NODES = "nodes"  # corev1 Nodes (the lab resolves the core group first)
JOBS = "jobs.batch"


def lab_settings(base: dict[str, str] = SETTINGS, **settings: str) -> dict[str, str]:
    """`base` overridden by `settings`, the Job timeouts multiplied by the machine's load factor, measured now
    (once per lab): a Job timeout a test sets itself (a boot longer than the default Job's) is its figure on a
    quiet machine, stretched the same way."""
    return with_job_room({**base, **settings}, load_factor())


def short_lab_config(tmp_path, slots: int = 3, **settings: str):
    """A LabConfig for the real operator with SHORT_SETTINGS overridden by `settings`, its Job timeouts
    stretched to the machine's load (lab_settings)."""
    from homecluster_lab.cluster import LabConfig
    return LabConfig(slots=slots, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                     provider_address="127.0.0.1:0", workdir=tmp_path / "lab",
                     settings=lab_settings(SHORT_SETTINGS, **settings), require_operator=True)


class Timeline:
    """Every watch event of one resource, with the moment it arrived: (time.time(), type, object).

    A real watch stream, like Phases, but it keeps whole objects, so a test can ask what the slot said
    while the claim was in a given state (a transient row of the decision table)."""

    def __init__(self, url: str, path: str) -> None:
        self.url, self.path = url, path
        self.events: list[tuple[float, str, dict]] = []
        self._task: asyncio.Task | None = None
        self._started = asyncio.Event()

    async def _run(self) -> None:
        async with aiohttp.ClientSession(timeout=WATCH_TIMEOUT) as session:
            async with session.get(f"{self.url}{self.path}?watch=1") as resp:
                self._started.set()
                async for line in resp.content:
                    if line.strip():
                        event = json.loads(line)
                        self.events.append((time.time(), event.get("type", ""), event.get("object") or {}))

    async def start(self) -> "Timeline":
        self._task = asyncio.create_task(self._run())
        await asyncio.wait_for(self._started.wait(), 10)
        return self

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def of(self, name: str) -> list[tuple[float, dict]]:
        return [(t, obj) for t, _, obj in self.events if (obj.get("metadata") or {}).get("name") == name]

    def statuses(self, name: str) -> list[dict]:
        return [obj.get("status") or {} for _, obj in self.of(name)]

    def phases(self, name: str) -> list[str]:
        out: list[str] = []
        for status in self.statuses(name):
            phase = status.get("phase")
            if phase and (not out or out[-1] != phase):
                out.append(phase)
        return out

    def first(self, name: str, pred) -> tuple[float, dict] | None:
        return next(((t, obj) for t, obj in self.of(name) if pred(obj)), None)


def slot_timelines(pool: "Pool") -> tuple[Timeline, Timeline]:
    return (Timeline(pool.api.url, "/apis/infra.homecluster.dev/v2alpha1/nodes"),
            Timeline(pool.api.url, "/apis/infra.homecluster.dev/v2alpha1/nodeclaims"))


async def kubectl(pool: "Pool", *args: str) -> str:
    """Run the real kubectl against the lab; returns stdout, raises with stderr on failure."""
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(pool.lab.kubeconfig_path), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {err.decode()}")
    return out.decode()


async def table_phase(pool: "Pool", slot: str) -> str:
    """The PHASE column of `kubectl get slots <slot>` (the printer column people read)."""
    lines = [line.split() for line in (await kubectl(pool, "get", "slots", slot)).splitlines() if line.strip()]
    header, row = lines[0], lines[1]
    return row[header.index("PHASE")]


async def settled_phase(pool: "Pool", slot: str, phase: str, timeout: float = 30.0) -> None:
    """Wait for the slot's status.phase, then check `kubectl get slots` prints the same PHASE."""
    await until(lambda: pool.slot_status(slot).get("phase") == phase,
                lambda: f"slot {slot} phase {phase} (now {pool.slot_status(slot)}); operator log:\n"
                        f"{pool.lab.operator.log_tail(15) if pool.lab.operator else ''}", timeout)
    printed = await table_phase(pool, slot)
    assert printed == phase, f"kubectl get slots {slot} prints PHASE {printed}, status.phase is {phase}"


def jobs_of_claim(pool: "Pool", claim: str) -> list[dict]:
    return [j for j in pool.jobs()
            if ((j.get("metadata") or {}).get("labels") or {}).get("infra.homecluster.dev/claim") == claim]


def job_creates(pool: "Pool", since: float = 0.0) -> list:
    return [e for e in pool.api.audit.writes("jobs") if e.verb == "create" and e.code == 201 and e.time >= since]


async def set_fault(pool: "Pool", slot: str, value: str | None) -> None:
    """Set (or clear, with None) the lab's fault annotation on a slot, and wait until the machine has it."""
    from homecluster_lab.faultknobs import ANNOTATION, describe, parse
    await pool.api.patch(SLOTS, slot, {"metadata": {"annotations": {ANNOTATION: value}}})
    want = describe(parse(slot, value))
    await until(lambda: describe(pool.lab.machine(slot).faults) == want, f"fault knobs {want!r} on {slot}", 5)
