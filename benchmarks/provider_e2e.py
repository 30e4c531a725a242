#!/usr/bin/env python3
"""Latency of the hot read RPCs as `homecluster run` serves them in the lab, at 10, 100 and 1,000 slots.

benchmarks/provider_latency.py measures the provider alone over a hand-filled cache; this one measures
the provider the operator serves (its cache fed by kopf's watches, its event loop shared with the claim
controller's workers) in a LabCluster, through the generated stub over TCP, as cluster-autoscaler calls it.

The lab starts with one simulated machine; the other slots are created directly in the lab API server
with no machine behind them (an IPMI address nobody answers on; they are never launched), which keeps
1,000 slots cheap. Every 4th slot also gets a NodeClaim that the operator fails at once with
AttemptLimitExceeded (its slot's lastClaim says the streak is spent), so NodeGroupNodes reports a
creation-error instance per such slot, as it would after a bad night. The pool then grows 10 -> 100 ->
1,000 in the same lab; after each step the script waits until the operator is quiet and the provider
sees every slot and failure, then calls each RPC sequentially:

- GPULabel and Refresh: they do not look at the pool, so they are the transport floor (gRPC +
  protobuf + the operator's event loop for one unary call);
- NodeGroupNodes, NodeGroupTargetSize, NodeGroupForNode (cycling over every slot's providerID).

    .venv/bin/python benchmarks/provider_e2e.py [--calls 1000] [--sizes 10,100,1000]

Prints p50 / p99 in microseconds and p50 over the floor. Not a test: the numbers depend on the machine.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import socket
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grpc

from homecluster import GROUP_VERSION, names
from homecluster_lab.cluster import LabCluster, LabConfig
from homecluster_lab.topology import slot as slot_manifest
from homecluster.model.timestamps import format_time
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from provider_latency import measure  # benchmarks/ is on sys.path when a script here runs

SLOTS = f"{names.SLOT_PLURAL}.{names.API_GROUP}"
GROUPS = f"{names.GROUP_PLURAL}.{names.API_GROUP}"
GROUP = "workers"
OPERATOR_AGENTS = ("homecluster-operator", "kopf/")
ATTEMPT_LIMIT = 3


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def slot_name(i: int) -> str:
    return f"bench-{i:04d}"


def provider_id(slot: str) -> str:
    return f"{names.PROVIDER_ID_SCHEME}{slot}"


async def add_slots(lab: LabCluster, first: int, last: int, power: dict[str, Any]) -> list[str]:
    """Create slots bench-<first>..bench-<last - 1>; return those (every 4th) whose attempt streak is spent.

    The spent ones carry status.lastClaim = a failed attempt at the limit, written through /status as the
    operator's observer would have written it.
    """
    now = format_time(datetime.now(timezone.utc))
    spent_digest = {"name": "earlier", "attempt": ATTEMPT_LIMIT, "phase": "failed",
                    "reason": "RegistrationTimedOut", "reachedReady": False, "finishedAt": now}
    spent = []
    for i in range(first, last):
        name = slot_name(i)
        obj = slot_manifest(name, GROUP, power)
        if i % 4 == 1:
            obj["status"] = {"phase": "off", "powerState": "off", "lastClaim": spent_digest}
            spent.append(name)
        await lab.api.create(obj, keep_status=name in spent)
    await lab.api.patch(GROUPS, GROUP, {"spec": {"maxSize": last}})
    return spent


async def add_claims(lab: LabCluster, slots: list[str]) -> None:
    """One NodeClaim per slot, as a person would create it; the operator fails each AttemptLimitExceeded.

    Created only once the operator has seen the slots' status (see `settle`): a claim seeded before the
    slot's lastClaim reached the operator's cache would start at attempt 1 and really boot.
    """
    now = format_time(datetime.now(timezone.utc))
    for name in slots:
        await lab.api.create({
            "apiVersion": GROUP_VERSION, "kind": names.CLAIM_KIND,
            "metadata": {"generateName": f"{name}-", "labels": {names.LABEL_SLOT: name}},
            "spec": {"slotRef": name, "requestedAt": now}})


def failed_claims(lab: LabCluster) -> int:
    return sum(1 for c in lab.claims() if (c.get("status") or {}).get("reason") == "AttemptLimitExceeded")


async def settle(lab: LabCluster, stub: pb_grpc.CloudProviderStub, slots: list[str], failures: int,
                 timeout: float = 300.0) -> float:
    """Wait until every claim failed, the provider reports them, and the operator made no request for 2 s."""
    started = time.monotonic()
    last_slot = pb.ExternalGrpcNode(providerID=provider_id(slots[-1]), name=provider_id(slots[-1]))
    while True:
        if time.monotonic() - started > timeout:
            raise SystemExit(f"the lab did not settle within {timeout:.0f}s "
                             f"({failed_claims(lab)}/{failures} claims failed); see {lab.workdir}/operator.log")
        await asyncio.sleep(0.5)
        if failed_claims(lab) < failures:
            continue
        answer = await stub.NodeGroupForNode(pb.NodeGroupForNodeRequest(node=last_slot), timeout=5)
        if answer.nodeGroup.id != GROUP:
            continue
        nodes = await stub.NodeGroupNodes(pb.NodeGroupNodesRequest(id=GROUP), timeout=5)
        if sum(1 for i in nodes.instances if i.status.errorInfo.errorCode) < failures:
            continue
        entries = [e for e in lab.api.audit.select() if any(a in e.user_agent for a in OPERATOR_AGENTS)]
        if entries and time.time() - max(e.time for e in entries) < 2.0:
            continue
        return time.monotonic() - started


async def run(calls: int, sizes: list[int], workdir: Path) -> None:
    config = LabConfig(slots=1, driver="ipmi", provider_address="127.0.0.1:0", workdir=workdir,
                       settings={"attempt_limit": str(ATTEMPT_LIMIT)}, require_operator=True)
    async with contextlib.AsyncExitStack() as stack:
        started = time.monotonic()
        lab = await stack.enter_async_context(LabCluster(config))
        print(f"lab up in {time.monotonic() - started:.1f}s: homecluster run pid {lab.operator.pid}, "
              f"provider {lab.provider_address}", flush=True)
        # worker-01's power spec with a port nobody answers on: if a bench slot were ever launched, its
        # startup Job would fail at once instead of powering worker-01's machine on
        power = copy.deepcopy(lab.api.get(SLOTS, lab.slot_names[0])["spec"]["power"])
        power["ipmi"]["port"] = free_udp_port()
        channel = grpc.aio.insecure_channel(lab.provider_address)
        stack.push_async_callback(channel.close)
        stub = pb_grpc.CloudProviderStub(channel)
        slots = list(lab.slot_names)
        failures = 0
        print(f"{'slots':>6}  {'rpc':<22} {'p50 us':>9} {'p99 us':>9}  {'p50 / floor':>11}", flush=True)
        for size in sizes:
            waited = 0.0
            if size > len(slots):
                first = len(slots)
                spent = await add_slots(lab, first, size, power)
                slots += [slot_name(i) for i in range(first, size)]
                waited += await settle(lab, stub, slots, failures)
                await add_claims(lab, spent)
                failures += len(spent)
            waited += await settle(lab, stub, slots, failures)
            instances = len((await stub.NodeGroupNodes(pb.NodeGroupNodesRequest(id=GROUP), timeout=5)).instances)
            print(f"# {size} slots, {failures} failed claims, {instances} instances reported; "
                  f"settled in {waited:.1f}s", flush=True)
            for_node = [pb.NodeGroupForNodeRequest(node=pb.ExternalGrpcNode(providerID=provider_id(s), name=s))
                        for s in slots]
            rows = []
            for label, call, requests in (
                ("GPULabel (floor)", stub.GPULabel, [pb.GPULabelRequest()]),
                ("Refresh (floor)", stub.Refresh, [pb.RefreshRequest()]),
                ("NodeGroupNodes", stub.NodeGroupNodes, [pb.NodeGroupNodesRequest(id=GROUP)]),
                ("NodeGroupTargetSize", stub.NodeGroupTargetSize, [pb.NodeGroupTargetSizeRequest(id=GROUP)]),
                ("NodeGroupForNode", stub.NodeGroupForNode, for_node),
            ):
                rows.append((label, *await measure(lambda r, c=call: c(r, timeout=5), requests, calls)))
            floor = min(rows[0][1], rows[1][1])
            for label, p50, p99 in rows:
                print(f"{size:>6}  {label:<22} {p50:>9.0f} {p99:>9.0f}  {p50 / floor:>10.2f}x", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per RPC and size (default 1000)")
    parser.add_argument("--sizes", default="10,100,1000", help="pool sizes, ascending (default 10,100,1000)")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or sizes[0] < 1:
        parser.error(f"--sizes {args.sizes!r}: give ascending positive slot counts, e.g. 10,100,1000")
    with tempfile.TemporaryDirectory(prefix="homecluster-bench-") as tmp:
        asyncio.run(run(args.calls, sizes, Path(tmp) / "lab"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
