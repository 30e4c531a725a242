#!/usr/bin/env python3
"""Controller-added latency per transition: the event a pass reacted to -> the write it sent.

Runs the whole lab (in-memory API server, simulated machines over real IPMI with a 1 s boot, the Job
executor running the real playbooks, and `homecluster run` as a subprocess), asks the operator's
autoscaler provider for N machines at once (NodeGroupIncreaseSize, delta N: N claims on N slots), waits
until every claim is ready, then gives them all back (NodeGroupDeleteNodes) and waits until every slot
is off again. All times come from the lab API server's audit log (the moment it began handling each request);
the object each write produced is looked up by its resourceVersion in watch streams of every kind.

Definitions (precise):
- the *dependencies* of a slot are its claims, the slot itself, its Jobs (label infra.homecluster.dev/slot)
  and its corev1 Node. An *event* on them is: any write to a claim or to the slot (by anyone); a write
  to a Job that changes its outcome (created / succeeded / failed); a write to the Node that changes a
  fact the controller reads (it exists, Ready, the pool's readiness taints, the cordon, providerID).
  Heartbeats (leases, a Node status write that changes none of those) are not events.
- the *step latency* of an operator write W on slot s is W.time - the time of the latest event on s's
  dependencies before W (the operator's own earlier writes included: a pass that wrote is re-run, and
  the next write of the chain depends on the previous one). This is the controller-added latency the
  goal is about: p99 under 250 ms.
- the *transition latency* measures some transitions from their outside cause instead, so the chains of
  writes in between are included: seed / booting <- the claim's creation; ready <- the Node's first
  write that made it usable (joined, Ready, untainted; the startup Job's completion is not waited for,
  and the operator does not wait for it either); release (the first write after a delete) <- the claim's
  deletion; completed <- the later of (the Node reads not Ready, the shutdown Job ended).

    .venv/bin/python benchmarks/controller_latency.py [--claims 50] [--workers N] [--pod-nice 10] [--workdir DIR]

Besides the audit log, the operator's own figures are printed, to tell the controller's time from the
machine's: its queue wait and event-loop lag histograms (from its /metrics), and the CPU it used
against the whole machine's (from /proc) -- a loop that runs late while the operator is not busy
is starved by the lab's other processes, a long queue wait with a punctual loop is ours.

Not a test: prints, asserts nothing. The numbers depend on the machine: on 2 cores, N real
ansible-runner processes run at once next to the operator.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from homecluster import names
from homecluster.jobs.manifest import DEFAULT_SERVICE_ACCOUNT
from homecluster_lab import topology
from homecluster_lab.cluster import LabCluster, LabConfig, free_port
# the real control plane's users: the operator's and the Jobs' ServiceAccounts, the runner node that runs the
# Job pods, the identity that clears the readiness taint
from homecluster_lab.k8s.install import CNI_USER, OPERATOR_ACCOUNT
from homecluster_lab.k8s.labcluster import RUNNER, RealLabCluster

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402
import realaudit  # noqa: E402
import tail  # noqa: E402

OPERATOR_UA = "homecluster-operator"
# Boot settings are the seed's defaults but a short safety poll; every claim gets a 20 minute budget so
# 50 ansible-runner processes sharing 2 cores never run into a deadline.
SETTINGS = {"job_poll_interval": "5s"}
BUDGET_FLOOR = {"maxNodeProvisionTime": "20m"}
DELETED = "__deleted__"
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


# ---- attribution (pure) ----------------------------------------------------------------------------------
def dig(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


@dataclass(frozen=True)
class Write:
    time: float
    writer: str  # operator | provider | executor | kubelet | job pod | helper | other
    what: str  # resource[/subresource] verb
    label: str  # what the write did, for the operator's writes (seed, booting, slot ready, ...)
    slot: str | None
    obj: dict | None
    prev: dict | None
    done: float | None = None  # when the server answered (the real audit log's stageTimestamp; None in memory)


def _resource(e: Any) -> str:
    core = "" if e.group in ("", None) else f".{e.group.split('.')[0]}"
    base = e.resource + ("" if e.group in ("", "batch", "coordination.k8s.io") else core)
    if e.resource == "nodes" and e.group == names.API_GROUP:
        base = "slots"
    elif e.resource == "nodes":
        base = "corev1 nodes"
    return base + (f"/{e.subresource}" if e.subresource else "")


def writer_of(e: Any, obj: dict | None, prev: dict | None) -> str:
    """Who wrote: by the authenticated user on the real control plane; by user agent, and by resource where
    two lab parts share the kubernetes client's agent, on the in-memory one (it has no users)."""
    by_user = realaudit.writer_by_user(getattr(e, "user", ""), OPERATOR_ACCOUNT, DEFAULT_SERVICE_ACCOUNT,
                                       RUNNER, CNI_USER)
    if by_user is not None:
        return by_user
    if OPERATOR_UA in e.user_agent:
        return "provider" if e.resource == "nodeclaims" and e.verb in ("create", "delete") else "operator"
    if "lab-test-helper" in e.user_agent:
        return "helper"
    if "lab-controller-manager" in e.user_agent:
        return "garbage collector"
    if e.resource in ("jobs", "pods") and e.subresource != "eviction":
        return "executor"
    if e.resource == "leases" or (e.resource == "nodes" and e.group == ""):
        cordon = bool(dig(obj, "spec", "unschedulable")) != bool(dig(prev, "spec", "unschedulable"))
        return "job pod (playbook)" if cordon and e.subresource == "" else "kubelet"
    if e.subresource == "eviction":
        return "job pod (playbook)"
    return "other"


def slot_of(e: Any, obj: dict | None, claim_slot: dict[str, str], slots: set[str]) -> str | None:
    name = e.name or dig(obj, "metadata", "name", default="")
    if e.resource == "nodeclaims":
        return dig(obj, "spec", "slotRef") or claim_slot.get(name)
    if e.resource in ("nodes", "leases"):
        return name if name in slots else None
    if e.resource in ("jobs", "pods"):
        return dig(obj, "metadata", "labels", names.LABEL_SLOT)
    if e.resource == "events":
        return claim_slot.get(dig(obj, "involvedObject", "name", default=""))
    return None


def _claim_label(e: Any, obj: dict | None, prev: dict | None) -> str:
    if e.subresource == "status":
        before, after = dig(prev, "status", default={}) or {}, dig(obj, "status", default={}) or {}
        if after.get("phase") != before.get("phase"):
            return "claim seed" if not before.get("attempt") and after.get("attempt") else f"claim {after.get('phase')}"
        if after.get("shutdownAttempts") != before.get("shutdownAttempts"):
            return "claim shutdownAttempts"
        return "claim status other"
    if obj is not None and obj.get(DELETED):
        return "claim finalizer release"  # the last finalizer went: the object was deleted by this write
    fin_before = set(dig(prev, "metadata", "finalizers", default=[]) or [])
    fin_after = set(dig(obj, "metadata", "finalizers", default=[]) or [])
    if fin_after - fin_before:
        return "claim finalizer add"
    if fin_before - fin_after:
        return "claim finalizer release"
    if dig(prev, "spec", "deadlineAt") and not dig(obj, "spec", "deadlineAt"):
        return "claim deadline clear"
    return "claim spec other"


def label_of(e: Any, obj: dict | None, prev: dict | None) -> str:
    if OPERATOR_UA not in e.user_agent:
        return f"{_resource(e)} {e.verb}"
    if e.resource == "nodeclaims":
        return f"claim {e.verb}" if e.verb in ("create", "delete") else _claim_label(e, obj, prev)
    if e.resource == "nodes" and e.group == names.API_GROUP:
        before, after = dig(prev, "status", default={}) or {}, dig(obj, "status", default={}) or {}
        if after.get("lastClaim") != before.get("lastClaim"):
            return "slot lastClaim"
        if after.get("phase") != before.get("phase"):
            return f"slot {after.get('phase')}"
        if after.get("powerState") != before.get("powerState"):
            return f"slot power {after.get('powerState')}"
        return "slot status other"
    if e.resource == "nodes":
        return "node cordon" if dig(obj, "spec", "unschedulable") and not dig(prev, "spec", "unschedulable") \
            else "node gate"
    if e.resource == "jobs":
        return f"{dig(obj, 'metadata', 'labels', names.LABEL_JOB_KIND, default='?')} Job {e.verb}"
    return f"{e.resource} {e.verb}"


def attribute(rec: Recording) -> list[Write]:
    """Every successful write, with its writer, its slot, the object it produced and the one before."""
    slots = set(rec.slots)
    claim_slot: dict[str, str] = {}
    last_by_key: dict[tuple[str, str, str], dict] = {}
    out = []
    for e in sorted(rec.writes, key=lambda x: (x.time, int(x.rv) if x.rv.isdigit() else 0)):
        obj = rec.objects.get(e.rv)
        name = e.name or dig(obj, "metadata", "name", default="")
        key = (e.resource, e.group, name)
        prev = last_by_key.get(key)
        if obj is not None:
            last_by_key[key] = obj
        if e.resource == "nodeclaims" and dig(obj, "spec", "slotRef"):
            claim_slot[name] = obj["spec"]["slotRef"]
        what = f"{_resource(e)} {e.verb}"
        out.append(Write(e.time, writer_of(e, obj, prev), what, label_of(e, obj, prev),
                         slot_of(e, obj, claim_slot, slots), obj, prev, getattr(e, "done", None)))
    return out


# ---- events and latencies (pure) -------------------------------------------------------------------------
def _node_facts(node: dict | None) -> tuple:
    if node is None:
        return (False,)
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in dig(node, "status", "conditions", default=[]) or [])
    # the node lifecycle controller's own taints (node.kubernetes.io/not-ready, unreachable, ...) are not read
    taints = tuple(sorted(t.get("key", "") for t in dig(node, "spec", "taints", default=[]) or []
                          if not t.get("key", "").startswith("node.kubernetes.io/")))
    return (True, ready, taints, bool(dig(node, "spec", "unschedulable")), bool(dig(node, "spec", "providerID")))


def _job_outcome(job: dict | None) -> str:
    for c in dig(job, "status", "conditions", default=[]) or []:
        if c.get("status") == "True" and c.get("type") in ("Complete", "Failed"):
            return c["type"]
    return "running"


def is_event(w: Write) -> bool:
    """A write that changes a fact the controller reads (see the module docstring)."""
    if w.what.startswith(("nodeclaims", "slots")):
        return True
    if w.what.startswith("corev1 nodes"):
        return _node_facts(w.obj) != _node_facts(w.prev)
    if w.what.startswith("jobs"):
        return w.prev is None or _job_outcome(w.obj) != _job_outcome(w.prev)
    return False


def usable(node: dict | None) -> bool:
    facts = _node_facts(node)
    return len(facts) > 1 and facts[1] and topology.READINESS_TAINT not in facts[2] and not facts[3]


def step_causes(writes: list[Write], since: float = 0.0) -> list[tuple[float, Write, Write]]:
    """(seconds since the latest preceding event on the slot's dependencies, the operator write, that event),
    for the writes at or after `since` (the lab's own start-up, before the operator ran, is not a reaction)."""
    latest: dict[str, Write] = {}
    out = []
    for w in writes:
        if w.slot is None:
            continue
        if w.writer == "operator" and w.slot in latest and w.time >= since:
            out.append((w.time - latest[w.slot].time, w, latest[w.slot]))
        if is_event(w) or w.writer == "operator":
            latest[w.slot] = w
    return out


def step_latencies(writes: list[Write], since: float = 0.0) -> list[tuple[float, Write]]:
    """step_causes without the causes."""
    return [(dt, w) for dt, w, _ in step_causes(writes, since)]


def transition_latencies(writes: list[Write]) -> dict[str, list[float]]:
    """The latencies from an outside cause, per transition (see the module docstring)."""
    by_slot: dict[str, list[Write]] = defaultdict(list)
    for w in writes:
        if w.slot is not None:
            by_slot[w.slot].append(w)
    out: dict[str, list[float]] = defaultdict(list)
    for seq in by_slot.values():
        created = next((w.time for w in seq if w.label == "claim create"), None)
        deleted = next((w.time for w in seq if w.label == "claim delete"), None)
        usable_at = next((w.time for w in seq if w.what.startswith("corev1 nodes") and usable(w.obj)), None)
        for w in seq:
            if w.writer != "operator":
                continue
            if created is not None and w.label in ("claim seed", "claim booting") and \
                    (deleted is None or w.time < deleted):
                out[f"{w.label.split()[1]} <- claim created"].append(w.time - created)
            if w.label == "claim ready" and usable_at is not None:
                out["ready <- Node usable"].append(w.time - usable_at)
        if deleted is not None:
            first = next((w for w in seq if w.writer == "operator" and w.time > deleted), None)
            if first is not None:
                out[f"release ({first.label}) <- claim deleted"].append(first.time - deleted)
            done = next((w for w in seq if w.label == "claim completed"), None)
            if done is not None:
                off = [w.time for w in seq if deleted < w.time < done.time and w.what.startswith("corev1 nodes")
                       and _node_facts(w.obj)[1:2] == (False,)]
                ended = [w.time for w in seq if deleted < w.time < done.time and w.what.startswith("jobs")
                         and _job_outcome(w.obj) != "running" and _job_outcome(w.prev) == "running"]
                if off and ended:
                    out["completed <- Node off + shutdown Job ended"].append(done.time - max(off[0], ended[-1]))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def table(rows: dict[str, list[float]]) -> str:
    lines = [f"{'':44} {'n':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}"]
    for label, values in sorted(rows.items()):
        lines.append(f"{label:44} {len(values):5d} {pct(values, .5) * 1e3:9.1f} {pct(values, .99) * 1e3:9.1f} "
                     f"{max(values) * 1e3:9.1f}")
    return "\n".join(lines)


def latency_rows(rec: Recording) -> dict[str, list[float]]:
    """Every figure the report prints as a table row: "step ALL", "step <write>", "transition <what>"."""
    writes = attribute(rec)
    steps = step_latencies(writes, rec.marks.get("increase", 0.0))
    rows: dict[str, list[float]] = defaultdict(list)
    for dt, w in steps:
        rows["step ALL operator writes"].append(dt)
        rows[f"step {w.label}"].append(dt)
    for label, values in transition_latencies(writes).items():
        rows[f"transition {label}"] = values
    return rows


def report(rec: Recording) -> str:
    writes = attribute(rec)
    steps = step_latencies(writes, rec.marks.get("increase", 0.0))
    per_label: dict[str, list[float]] = defaultdict(list)
    for dt, w in steps:
        per_label[w.label].append(dt)
    every = [dt for dt, _ in steps]
    out = [f"control plane: {rec.control_plane}; {compare.load_text(rec.load)}",
           f"step latency of every operator write (event on the slot's dependencies -> write), "
           f"{len(rec.slots)} concurrent claims:",
           table({"ALL operator writes": every}), "", "by write:", table(per_label), "",
           "transition latency (outside cause -> write, chains included):", table(transition_latencies(writes)), "",
           f"goal: step p99 < 250 ms -> {'met' if pct(every, .99) < 0.25 else 'NOT met'} "
           f"(p99 {pct(every, .99) * 1e3:.1f} ms)", "", "the 5 slowest steps:"]
    for dt, w in sorted(steps, key=lambda x: -x[0])[:5]:
        out.append(f"  {dt * 1e3:8.1f} ms  {w.slot}: {w.label} ({w.what})")
    out += ["", tail.report(step_causes(writes, rec.marks.get("increase", 0.0)), writes)]
    out += ["", operator_side(rec)]
    if {"increase", "all ready", "delete", "all off"} <= set(rec.marks):
        m = rec.marks
        out.append(f"\nwall: all ready {m.get('all ready', 0) - m.get('increase', 0):.1f}s after the scale-up, "
                   f"all off {m.get('all off', 0) - m.get('delete', 0):.1f}s after the scale-down")
    return "\n".join(out)


def histogram(text: str, name: str) -> tuple[list[tuple[float, float]], float, float]:
    """(cumulative (le, count) buckets, count, sum) of a Prometheus histogram without labels."""
    buckets, count, total = [], 0.0, 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == f"{name}_bucket":
                buckets.append((float(sample.labels["le"]), sample.value))  # float("+Inf") is inf
            elif sample.name == f"{name}_count":
                count = sample.value
            elif sample.name == f"{name}_sum":
                total = sample.value
    return buckets, count, total


def bucket_quantile(buckets: list[tuple[float, float]], count: float, q: float) -> str:
    """The upper bound of the bucket holding quantile q ("<= 0.05 s"), as honest as buckets allow."""
    for le, n in buckets:
        if count and n >= q * count:
            return "> last bucket" if le == float("inf") else f"<= {le * 1e3:g} ms"
    return "n/a"


def operator_side(rec: Recording) -> str:
    lines = ["the operator's own figures (its /metrics; quantiles are bucket bounds):"]
    for name, what in (("homecluster_slot_queue_wait_seconds", "queue wait (slot asked for -> a worker takes it)"),
                       ("homecluster_slot_pass_seconds", "slot pass (all its writes included)"),
                       ("homecluster_event_loop_lag_seconds", "event-loop lag (a 0.25 s sleep woke late by)")):
        buckets, count, total = histogram(rec.metrics, name)
        if not count:
            lines.append(f"  {what}: not reported")
            continue
        lines.append(f"  {what}: n {count:.0f}, mean {total / count * 1e3:.1f} ms, "
                     f"p50 {bucket_quantile(buckets, count, .5)}, p99 {bucket_quantile(buckets, count, .99)}")
    c = rec.cpu
    if c.get("wall"):
        lines.append(f"  CPU over {c['wall']:.0f} s on {c['cores']:.0f} cores: the operator used "
                     f"{c['operator'] / c['wall'] * 100:.0f}% of one core, the lab process (API server, machines, "
                     f"kubelets, executor) {c.get('lab', 0) / c['wall'] * 100:.0f}%; the machine was "
                     f"{c['machine'] / (c['wall'] * c['cores']) * 100:.0f}% busy")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=50, help="concurrent claims (one slot each); default 50")
    parser.add_argument("--workdir", type=Path, help="keep the lab's files (operator log, pods) here")
    parser.add_argument("--pod-nice", type=int, default=10,
                        help="the Job pods' nice value, their sessions' autogroups included (default 10, the lab's "
                             "default; -1: not lowered), see run_lifecycles")
    parser.add_argument("--workers", type=int, help="homecluster run --workers (default: the operator's default)")
    compare.add_arguments(parser)
    args = parser.parse_args(argv)
    pod_nice = None if args.pod_nice < 0 else args.pod_nice
    check_planes(compare.planes(args.control_plane))
    print(f"Job pods' nice: {pod_nice if pod_nice is not None else 'not lowered'}; "
          f"operator workers: {args.workers or 'default'}; {args.claims} claims; "
          f"{args.runs} run(s) per control plane: {', '.join(compare.planes(args.control_plane))}")
    figures: dict[str, list[dict[str, tuple[float, float]]]] = {}
    for run in range(args.runs):  # the planes take turns, so a change in the machine's load hits both
        for plane in compare.planes(args.control_plane):
            workdir = args.workdir / f"{plane}-{run + 1}" if args.workdir else None
            rec = asyncio.run(run_lifecycles(args.claims, workdir, pod_nice=pod_nice, workers=args.workers,
                                             control_plane=plane, say=lambda s: print(s, file=sys.stderr)))
            print(f"\n==== {plane}, run {run + 1} of {args.runs} ====", flush=True)
            print(report(rec), flush=True)
            figures.setdefault(plane, []).append(compare.per_run_figures(latency_rows(rec)))
    if args.runs > 1:
        for plane, runs in figures.items():
            print(f"\n==== {plane}: {len(runs)} runs, median and spread of each run's p50 and p99 ====")
            print(compare.spread_table(runs))
    if len(figures) > 1:
        print(f"\n==== each control plane against the in-memory server (medians over the runs) ====")
        print(compare.ratio_table({plane: compare.medians(runs) for plane, runs in figures.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
