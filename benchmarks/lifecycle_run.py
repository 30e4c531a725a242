"""One benchmark run: the lab (in-memory or on the real control plane), N claims booted through the provider at
once, all released, and what the run leaves (Recording): the writes the API server answered, the objects they
produced by resourceVersion, the operator's /metrics and CPU, the machine's load average.

Used by controller_latency.py and writes_per_lifecycle.py; see controller_latency's docstring for the run.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from homecluster import names
from homecluster_lab.cluster import LabCluster, LabConfig, free_port
from homecluster_lab.k8s.labcluster import RealLabCluster

import realaudit
from attribution import DELETED

# Boot settings are the seed's defaults but a short safety poll; every claim gets a 20 minute budget so
# 50 ansible-runner processes sharing 2 cores never run into a deadline.
SETTINGS = {"job_poll_interval": "5s"}
BUDGET_FLOOR = {"maxNodeProvisionTime": "20m"}
WATCHED = ("/apis/infra.homecluster.dev/v2alpha1/nodeclaims", "/apis/infra.homecluster.dev/v2alpha1/nodes",
           "/api/v1/nodes", "/apis/batch/v1/jobs", "/api/v1/pods", "/api/v1/events")


# ---- the run ---------------------------------------------------------------------------------------------
@dataclass
class Recording:
    """What one run leaves: the audit log's writes and every object state by resourceVersion."""

    writes: list[Any]
    objects: dict[str, dict]
    slots: list[str]
    marks: dict[str, float] = field(default_factory=dict)
    metrics: str = ""  # the operator's /metrics at the end
    cpu: dict[str, float] = field(default_factory=dict)  # operator / machine CPU seconds over the run
    control_plane: str = "memory"  # memory (the lab's in-memory API server) | kubernetes (kube-apiserver & co.)
    load: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # os.getloadavg() at start / end


async def _watch(url: str, path: str, objects: dict[str, dict], started: asyncio.Event) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{url}{path}?watch=1", timeout=aiohttp.ClientTimeout(total=None)) as resp:
            started.set()
            async for line in resp.content:
                if line.strip():
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        if event.get("type") == "DELETED":
                            obj[DELETED] = True  # the write that removed the last finalizer, or a delete
                        objects[rv] = obj


async def _until(check, timeout: float, what: str, lab: LabCluster) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            tail = lab.operator.log_tail(20) if lab.operator else ""
            raise SystemExit(f"timed out after {timeout:g}s waiting for {what}; operator log:\n{tail}")
        await asyncio.sleep(0.2)


def _phases(lab: LabCluster, kind: str) -> dict[str, str]:
    items = lab.claims() if kind == "claims" else lab.slots()
    return {o["metadata"]["name"]: (o.get("status") or {}).get("phase", "") for o in items}


def _cpu_seconds(pid: int | None) -> tuple[float, float]:
    """(CPU seconds used by process `pid` itself, CPU seconds used by the whole machine)."""
    tick = os.sysconf("SC_CLK_TCK")
    proc = 0.0
    if pid is not None:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            proc = sum(int(x) for x in fields[11:13]) / tick  # utime, stime
    line = Path("/proc/stat").read_text().splitlines()[0].split()
    busy = sum(int(x) for i, x in enumerate(line[1:]) if i not in (3, 4))  # all but idle and iowait
    return proc, busy / tick


def _self_cpu() -> float:
    """CPU seconds of this process: the lab's API server, machines, kubelets and executor (not the Job pods)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _scrape(address: str) -> str:
    with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://{address}/metrics", timeout=aiohttp.ClientTimeout(total=10)) as resp:
                return await resp.text()
    return ""


def lab_for(cfg: LabConfig) -> LabCluster:
    """The in-memory lab, or the lab on the real control plane with an audit log that keeps the objects the
    benchmark's writes produced (realaudit.POLICY)."""
    if cfg.control_plane == "memory":
        return LabCluster(cfg)
    lab = RealLabCluster(cfg)
    lab.audit_policy = realaudit.POLICY
    return lab


def check_planes(planes: list[str]) -> None:
    """Refuse before the first run, not after the in-memory one, when the real control plane is not built."""
    if "kubernetes" in planes:
        from homecluster_lab.k8s import binaries
        reason = binaries.missing_reason()
        if reason is not None:
            raise SystemExit(f"--control-plane kubernetes: {reason} (or use --control-plane memory)")


def real_writes(lab: Any) -> tuple[list[realaudit.AuditWrite], dict[str, dict]]:
    with open(lab.control_plane.files.audit_log, encoding="utf-8") as lines:
        return realaudit.read(lines)


async def run_lifecycles(claims: int, workdir: Path | None, *, pod_nice: int | None = 10, workers: int | None = None,
                         control_plane: str = "memory", say=print) -> Recording:
    """Boot `claims` machines through the provider at once, wait for ready, release them all, wait for off.

    `control_plane`: "memory" (the lab's in-memory API server; times and objects from its request log and
    watches) or "kubernetes" (etcd, kube-apiserver, kube-controller-manager, kube-scheduler; times and
    objects from kube-apiserver's audit log, see realaudit).

    `pod_nice`: the nice value (and autogroup nice) the Job pods -- real ansible-runner processes -- run
    at; the lab's default is 10 (homecluster_lab.executor.priority). In a cluster they run on other
    machines' CPUs; the lab runs them on the operator's own cores. None runs them at the lab's priority."""
    import grpc

    from homecluster.provider.proto import externalgrpc_pb2 as pb
    from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc

    metrics_address = f"127.0.0.1:{free_port('127.0.0.1')}"
    operator_args = ("--metrics-address", metrics_address) + (("--workers", str(workers)) if workers else ())
    cfg = LabConfig(slots=claims, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                    provider_address="127.0.0.1:0", workdir=workdir, settings=dict(SETTINGS),
                    require_operator=True, ready_timeout=120, operator_args=operator_args,
                    control_plane=control_plane)
    objects: dict[str, dict] = {}
    memory = control_plane == "memory"
    async with lab_for(cfg) as lab:
        group = cfg.group
        lab.executor.cfg.pod_nice = pod_nice
        if memory:
            await lab.api.patch(f"{names.GROUP_PLURAL}.{names.API_GROUP}", group, {"spec": BUDGET_FLOOR})
        else:
            await lab.api.kube.merge_patch(f"/apis/{names.API_GROUP}/v2alpha1/{names.GROUP_PLURAL}/{group}",
                                           {"spec": BUDGET_FLOOR})
        tasks, started = [], []
        for path in WATCHED if memory else ():  # the real one's objects come with its audit log
            ev = asyncio.Event()
            started.append(ev)
            tasks.append(asyncio.create_task(_watch(lab.api.url, path, objects, ev)))
        await asyncio.gather(*(asyncio.wait_for(e.wait(), 10) for e in started))
        rec = Recording([], objects, list(lab.slot_names), control_plane=control_plane)
        rec.load["start"] = os.getloadavg()
        cpu_before = _cpu_seconds(lab.operator.pid if lab.operator else None)
        lab_before = _self_cpu()
        wall_before = time.monotonic()
        try:
            async with grpc.aio.insecure_channel(lab.provider_address) as channel:
                stub = pb_grpc.CloudProviderStub(channel)
                rec.marks["increase"] = time.time()
                await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id=group, delta=claims), timeout=30)
                say(f"{claims} claims created through the provider; waiting for ready")
                await _until(lambda: list(_phases(lab, "claims").values()).count("ready") == claims, 1200,
                             f"{claims} ready claims", lab)
                await _until(lambda: list(_phases(lab, "slots").values()).count("ready") == claims, 60,
                             "every slot ready", lab)
                rec.marks["all ready"] = time.time()
                say(f"all ready after {rec.marks['all ready'] - rec.marks['increase']:.1f}s; releasing")
                await asyncio.sleep(2)
                nodes = [pb.ExternalGrpcNode(providerID=f"{names.PROVIDER_ID_SCHEME}{s}", name=s)
                         for s in lab.slot_names]
                rec.marks["delete"] = time.time()
                await stub.NodeGroupDeleteNodes(pb.NodeGroupDeleteNodesRequest(id=group, nodes=nodes), timeout=60)
                await _until(lambda: not lab.claims(), 1200, "every claim released", lab)
                await _until(lambda: set(_phases(lab, "slots").values()) == {"off"}, 60, "every slot off", lab)
                rec.marks["all off"] = time.time()
                say(f"all released after {rec.marks['all off'] - rec.marks['delete']:.1f}s")
                await asyncio.sleep(2)
        finally:
            cpu_after = _cpu_seconds(lab.operator.pid if lab.operator else None)
            rec.cpu = {"operator": cpu_after[0] - cpu_before[0], "machine": cpu_after[1] - cpu_before[1],
                       "lab": _self_cpu() - lab_before,
                       "wall": time.monotonic() - wall_before, "cores": float(os.cpu_count() or 1)}
            rec.load["end"] = os.getloadavg()
            rec.metrics = await _scrape(metrics_address)
            if memory:
                every = lab.api.audit.writes()
            else:
                every, produced = real_writes(lab)
                objects.update(produced)
            rec.writes = [e for e in every if 200 <= e.code < 300]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return rec
