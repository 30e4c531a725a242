#!/usr/bin/env python3
"""A real cluster-autoscaler scaling the lab's pool up and down, per version: what homecluster adds.

For each cluster-autoscaler found (HOMECLUSTER_CLUSTER_AUTOSCALER, ~/.cache/homecluster/cluster-autoscaler/,
or --autoscaler), one real-control-plane lab (`homecluster lab --control-plane kubernetes`: IPMI machines,
the operator, the Group's readiness taint) and the autoscaler as config/autoscaler ships it, with the lab's
clocks. Each cycle creates a Deployment of --pods pods that each need a machine, waits until all run, scales
it to 0 and waits until every machine is off and its claim gone. Reported per version:

- pod created -> Running, minus the machine's own boot (the lab's boot seconds plus the readiness taint's
  hold): what the scheduler, the autoscaler's scan, the provider, the startup Job and the readiness gate add;
- pods gone (unneeded from then) -> machine off, minus --scale-down-unneeded-time: the autoscaler's scan,
  DeleteNodes, the drain and the shutdown Job;
- machines bought per pending pod (NodeClaims created, from the API server's audit log, over pods): must be 1.00;
- the autoscaler's own timings from its metrics (function_duration_seconds: cloudProviderRefresh is its
  Refresh call to the provider, scaleUp includes NodeGroupIncreaseSize, scaleDown:nodeDeletion DeleteNodes).

    .venv/bin/python benchmarks/autoscaler_e2e.py [--cycles 10] [--pods 2] [--autoscaler RELEASE=PATH ...]

Not a test: the numbers depend on the machine (and on what else runs on it).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from homecluster_lab.autoscaler_demo import APP, INSTANCE_TYPE, NS, most_of, workload
from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import autoscaler_builds
from homecluster_lab.k8s.autoscaler import Autoscaler
from homecluster_lab.k8s.autoscaler_flags import Clocks
from homecluster_lab.k8s.labcluster import RealLabCluster

BOOT, TAINT_HOLD = 2.0, 3.0
CLOCKS = Clocks(scan_interval=2, unneeded=10, delay_after_add=0, max_node_provision=900)
FUNCTIONS = ("cloudProviderRefresh", "scaleUp", "scaleDown:nodeDeletion")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def histogram_quantile(text: str, name: str, labels: str, q: float) -> float:
    """The q-quantile (0..1) of a Prometheus histogram in `text` whose bucket lines carry `labels`
    (e.g. 'function="scaleUp"'), linearly inside the bucket as Prometheus does; nan when empty."""
    buckets: list[tuple[float, float]] = []
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{") and labels in line:
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((math.inf if le == "+Inf" else float(le), float(line.rsplit(" ", 1)[1])))
    buckets.sort()
    if not buckets or buckets[-1][1] == 0:
        return math.nan
    rank, lower, below = q * buckets[-1][1], 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * ((rank - below) / (count - below) if count > below else 0)
        lower, below = upper, count
    return lower


async def _pods(lab: RealLabCluster) -> list[dict[str, Any]]:
    return (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods", {"labelSelector": f"app={APP}"}))["items"]


async def _until(check, what: str, timeout: float = 900.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.2)


def _created_claims(lab: RealLabCluster, since: float) -> int:
    assert lab.control_plane is not None and lab.control_plane.files is not None
    count = 0
    for line in lab.control_plane.files.audit_log.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line the API server is still writing
        ref = event.get("objectRef") or {}
        if event.get("verb") == "create" and ref.get("resource") == "nodeclaims" and not ref.get("subresource") \
                and (event.get("responseStatus") or {}).get("code") == 201:
            from datetime import datetime
            stamp = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
            count += stamp >= since
    return count


async def cycle(lab: RealLabCluster, pods: int, up: list[float], down: list[float]) -> int:
    """One scale-up and scale-down; appends each pod's extra seconds to `up` and each machine's to `down`;
    returns the NodeClaims created."""
    since = time.time() - 0.5
    created = time.monotonic()
    await lab.api.kube.create(f"/apis/apps/v1/namespaces/{NS}/deployments",
                              workload(pods, most_of(lab.config.capacity.get("cpu", "4")), INSTANCE_TYPE))
    running: dict[str, float] = {}

    async def all_running() -> bool:
        for pod in await _pods(lab):
            if (pod.get("status") or {}).get("phase") == "Running":
                running.setdefault(pod["metadata"]["name"], time.monotonic())
        return len(running) >= pods
    await _until(all_running, f"{pods} pods Running")
    up.extend(t - created - BOOT - TAINT_HOLD for t in running.values())
    on = {c["spec"]["slotRef"] for c in lab.claims()}
    await lab.api.kube.merge_patch(f"/apis/apps/v1/namespaces/{NS}/deployments/{APP}", {"spec": {"replicas": 0}})

    async def no_pods() -> bool:
        return not await _pods(lab)
    await _until(no_pods, "the pods gone")
    unneeded_from, off = time.monotonic(), {}

    async def all_off() -> bool:
        for slot in on:
            if lab.machine(slot).power_state() == "off":
                off.setdefault(slot, time.monotonic())
        return len(off) == len(on) and not lab.claims()
    await _until(all_off, f"machines {sorted(on)} off and their claims gone")
    down.extend(t - unneeded_from - CLOCKS.unneeded for t in off.values())
    await lab.api.kube.delete(f"/apis/apps/v1/namespaces/{NS}/deployments/{APP}")
    await _until(no_pods, "the Deployment gone")
    return _created_claims(lab, since)


async def run_version(build: autoscaler_builds.Build, cycles: int, pods: int, workdir: Path) -> dict[str, Any]:
    config = LabConfig(slots=max(pods, 2), driver="ipmi", boot_seconds=BOOT, ready_taints_clear_seconds=TAINT_HOLD,
                       provider_address="127.0.0.1:0", workdir=workdir, require_operator=True,
                       control_plane="kubernetes", ready_timeout=180,
                       settings={"job_poll_interval": "2s", "shutdown_holdoff": "1m"})
    up: list[float] = []
    down: list[float] = []
    bought = 0
    async with RealLabCluster(config) as lab:
        async with Autoscaler.for_lab(lab, build, clocks=CLOCKS) as ca:
            for index in range(cycles):
                claims = await cycle(lab, pods, up, down)
                bought += claims
                print(f"  {build.release} cycle {index + 1}/{cycles}: {claims} machine(s) for {pods} pod(s)",
                      flush=True)
            metrics = await ca.metrics()
    timings = {f: (histogram_quantile(metrics, "cluster_autoscaler_function_duration_seconds",
                                      f'function="{f}"', 0.5),
                   histogram_quantile(metrics, "cluster_autoscaler_function_duration_seconds",
                                      f'function="{f}"', 0.99)) for f in FUNCTIONS}
    return {"release": build.release, "cycles": cycles, "up": up, "down": down,
            "per_pod": bought / (cycles * pods), "timings": timings}


def report(result: dict[str, Any]) -> list[str]:
    up, down = result["up"], result["down"]
    lines = [f"cluster-autoscaler {result['release']}: {result['cycles']} cycles",
             f"  pod created -> Running minus the boot ({BOOT:g}s + {TAINT_HOLD:g}s taint): "
             f"p50 {percentile(up, 50):.1f}s  p99 {percentile(up, 99):.1f}s  (n={len(up)})",
             f"  unneeded -> machine off minus {CLOCKS.unneeded:g}s unneeded time: "
             f"p50 {percentile(down, 50):.1f}s  p99 {percentile(down, 99):.1f}s  (n={len(down)})",
             f"  machines bought per pending pod: {result['per_pod']:.2f}"]
    for name, (p50, p99) in result["timings"].items():
        lines.append(f"  autoscaler {name}: p50 {p50 * 1000:.1f} ms  p99 {p99 * 1000:.1f} ms (its histogram)")
    return lines


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--pods", type=int, default=2, help="pods per cycle, each needing a machine (default 2)")
    parser.add_argument("--autoscaler", action="append", default=[], metavar="[RELEASE=]PATH",
                        help="a binary to measure (repeatable); default: every one found")
    args = parser.parse_args(argv)
    builds = [autoscaler_builds.choose(a) for a in args.autoscaler] or autoscaler_builds.discover()
    if not builds:
        print(autoscaler_builds.missing_reason(), file=sys.stderr)
        return 2
    failed = False
    for build in builds:
        with tempfile.TemporaryDirectory(prefix=f"ca-e2e-{build.release}-") as tmp:
            result = await run_version(build, args.cycles, args.pods, Path(tmp))
        print("\n".join(report(result)), flush=True)
        failed |= result["per_pod"] != 1.0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
