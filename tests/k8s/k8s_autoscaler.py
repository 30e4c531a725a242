"""What the real-autoscaler tests share: the builds to run, the lab they drive, the workload, the counts.

One lab per version (module-scoped fixture `pool`, parametrized over autoscaler_builds.discover()): three
IPMI machines, 2 s boots, the Group's readiness taint held 15 s after each Node registers (several of
the autoscaler's 2 s scans see a registered Node that still carries it), the operator with short clocks,
and the autoscaler as config/autoscaler ships it. With no build found, every test here skips naming
HOMECLUSTER_CLUSTER_AUTOSCALER. Each test records the release it ran (`cluster_autoscaler` property),
which tests/conftest.py's summary lists.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from homecluster.model.settings import Settings
from homecluster_lab import topology
from homecluster_lab.autoscaler_demo import INSTANCE_TYPE, NS
from homecluster_lab.autoscaler_demo import workload as demo_workload
from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import autoscaler_builds
from homecluster_lab.k8s.autoscaler import Autoscaler
from homecluster_lab.k8s.autoscaler_flags import Clocks
from homecluster_lab.k8s.labcluster import RealLabCluster

BUILDS = autoscaler_builds.discover()
NEWEST = BUILDS[-1].release if BUILDS else None
# registration_wait short: a machine that boots but never registers fails soon (the never-joins test)
SETTINGS = {"job_poll_interval": "2s", "shutdown_holdoff": "1m", "registration_wait": "30s"}
TAINT_HOLD = 15.0  # s a joined Node keeps the readiness taint: the window the defect needs


def build_params() -> list[Any]:
    """One pytest param per build, named by its release; one skipping param (naming the variable) if none."""
    if not BUILDS:
        return [pytest.param(None, id="no-autoscaler",
                             marks=pytest.mark.skip(reason=autoscaler_builds.missing_reason()))]
    return [pytest.param(b, id=b.release) for b in BUILDS]


@dataclass
class Pool:
    lab: RealLabCluster
    ca: Autoscaler
    build: autoscaler_builds.Build


def lab_config(workdir: Path, slots: int = 3, provider_tls: bool = False) -> LabConfig:
    return LabConfig(slots=slots, driver="ipmi", boot_seconds=2, ready_taints_clear_seconds=TAINT_HOLD,
                     provider_address="127.0.0.1:0", workdir=workdir, require_operator=True,
                     control_plane="kubernetes", ready_timeout=180, settings=dict(SETTINGS),
                     provider_tls=provider_tls)


def clocks() -> Clocks:
    floor = Settings.from_mapping(SETTINGS).boot_floor.total_seconds()
    return Clocks(max_node_provision=floor)


def workload(name: str, replicas: int, *, cpu: str = "3", tolerate: bool = False) -> dict[str, Any]:
    """A Deployment whose pods each need a machine of their own: 3 of a lab machine's 4 CPUs, the Group's
    instance type, and no two on one host (autoscaler_demo.workload)."""
    return demo_workload(replicas, cpu, INSTANCE_TYPE, name=name,
                         tolerate=(topology.READINESS_TAINT,) if tolerate else ())


async def pods(lab: RealLabCluster, app: str) -> list[dict[str, Any]]:
    return (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods", {"labelSelector": f"app={app}"}))["items"]


def running(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return bool(pod["spec"].get("nodeName")) and status.get("phase") == "Running" \
        and not pod["metadata"].get("deletionTimestamp")


def audit(lab: RealLabCluster) -> list[dict[str, Any]]:
    assert lab.control_plane is not None and lab.control_plane.files is not None
    events = []
    lines = lab.control_plane.files.audit_log.read_text().splitlines()
    for index, line in enumerate(lines):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if index < len(lines) - 1:
                raise  # only the last line may be one the API server is still writing
    return events


def epoch(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def claims_created(lab: RealLabCluster, since: float) -> list[dict[str, Any]]:
    """The audit events of every NodeClaim created (HTTP 201) since `since` (epoch s), in order: the audit
    log's word, so a claim created and deleted again between two looks counts too."""
    return [e for e in audit(lab)
            if e.get("verb") == "create" and (e.get("objectRef") or {}).get("resource") == "nodeclaims"
            and not (e.get("objectRef") or {}).get("subresource")
            and (e.get("responseStatus") or {}).get("code") == 201
            and epoch(e["requestReceivedTimestamp"]) >= since]


def now() -> float:
    return time.time()


def story(lab: RealLabCluster, ca: Autoscaler) -> str:
    """What a failure message needs: the claims and their phases, and the autoscaler's log tail."""
    return (f"claims: {[(c['metadata']['name'], (c.get('status') or {}).get('phase')) for c in lab.claims()]}\n"
            f"machines: {lab.machine_summary()}\n"
            f"cluster-autoscaler {ca.build.release} log ({ca.log_path}):\n{ca.log_tail(60)}")


async def until_running(lab: RealLabCluster, ca: Autoscaler, apps: dict[str, int], what: str, bound: float, *,
                        since: float | None = None) -> list[dict[str, Any]]:
    """The pods of each Deployment in `apps` (name -> replicas), once all of them run; fails with the story.
    With `since`, fails at once when more NodeClaims were created since then than pods are wanted."""
    from support.waits import until
    wanted = sum(apps.values())

    async def check():
        assert ca.exited() is None, "the autoscaler exited"
        if since is not None:
            bought = len(claims_created(lab, since))
            assert bought <= wanted, f"{bought} NodeClaims created for {wanted} pods (a machine bought twice)"
        found = [p for app in apps for p in await pods(lab, app)]
        return found if len(found) == wanted and all(running(p) for p in found) else None
    try:
        return await until(check, what, bound)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{story(lab, ca)}") from None


@contextlib.asynccontextmanager
async def newest_lab(tmp_path_factory: pytest.TempPathFactory, prefix: str, slots: int,
                     provider_tls: bool = False) -> AsyncIterator[tuple[RealLabCluster, autoscaler_builds.Build]]:
    """A lab for one file's slow scenarios, which run on the newest version found (yielded with the lab);
    skips naming HOMECLUSTER_CLUSTER_AUTOSCALER when none is found, or why the operator cannot run."""
    from homecluster_lab.operator_proc import unavailable_reason
    if not BUILDS:
        pytest.skip(autoscaler_builds.missing_reason())
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    build = BUILDS[-1]
    folder = tmp_path_factory.mktemp(prefix + re.sub(r"[^\w.]", "_", build.release)[-40:])
    async with RealLabCluster(lab_config(folder, slots=slots, provider_tls=provider_tls)) as lab:
        yield lab, build


DELETE_ASK = "NodeGroupDeleteNodes asked for slot "  # the provider's line per node asked for (provider/actions.py)


def delete_asks(lab: RealLabCluster, start: int = 0) -> dict[str, int]:
    """slot -> how many times the autoscaler's NodeGroupDeleteNodes named it, from the operator's log (read from
    byte `start`): every ask counts, a repeated one for a claim already being deleted too, which the audit log
    cannot show (such an ask makes no API call)."""
    assert lab.operator is not None, "the lab runs no operator"
    with open(lab.operator.log_path, "rb") as log:
        log.seek(start)
        text = log.read().decode(errors="replace")
    asks: dict[str, int] = {}
    for line in text.splitlines():
        if DELETE_ASK in line:
            slot = line.split(DELETE_ASK, 1)[1].split(":", 1)[0]
            asks[slot] = asks.get(slot, 0) + 1
    return asks


def operator_log_size(lab: RealLabCluster) -> int:
    assert lab.operator is not None, "the lab runs no operator"
    return lab.operator.log_path.stat().st_size if lab.operator.log_path.exists() else 0


async def scans_later(ca: Autoscaler, scans: int, bound: float) -> None:
    """Returns once the autoscaler has started `scans` more main loops (its --v=4 "Starting main loop"): long
    enough for a second DeleteNodes it would make to be made, with no sleep."""
    from support.waits import until

    def loops() -> int:
        return ca.log_text().count("Starting main loop")
    first = loops()

    async def later():
        assert ca.exited() is None, "the autoscaler exited"
        return loops() >= first + scans
    await until(later, f"{scans} more main loops of the autoscaler", bound)
