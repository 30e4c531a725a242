"""The autoscaler provider as `homecluster run` serves it, driven like cluster-autoscaler drives it.

Every test starts a whole lab (homecluster_lab.cluster.LabCluster): the lab API server, simulated machines
behind real IPMI on loopback, the Job executor running the real playbooks, and the operator as a
subprocess -- whose provider, fed by the operator's own cache, is what the generated gRPC stub talks to
over TCP. No provider is constructed here.

Coverage of the RPCs (each at least once):
- test_every_rpc_against_homecluster_run: health, NodeGroups, NodeGroupForNode (placeholder, unmanaged,
  name only), TargetSize, IncreaseSize (incl. refusals), DecreaseTargetSize (cancel and refusal),
  DeleteNodes (refusal), TemplateNodeInfo (wire bytes), GetOptions (UNIMPLEMENTED and filled), pricing,
  GPULabel, GetAvailableGPUTypes, Refresh, Cleanup;
- test_scale_up_to_ready_machines_then_down_to_powered_off: NodeGroupForNode with real corev1 Nodes,
  NodeGroupNodes against the Nodes' providerIDs, DeleteNodes end to end;
- test_a_claim_the_provider_creates_boots_without_waiting_for_the_poll: the write -> pass latency;
- test_a_failed_boot_is_a_creation_error_the_autoscaler_can_read: errorInfo classes and codes;
- test_read_rpcs_cause_no_api_server_request: the request log around a burst of reads.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime, timezone
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from integration_pool import CLAIMS, SLOTS
from support import objects
from support.waits import until
from load_factor import scaled
from provider_client import (GROUP, Instance, ProviderClient, describe, from_corev1, lab_config, node,
                             operator_requests, placeholder, request_log_mark, window, wire)

from homecluster_lab.cluster import LabCluster
from homecluster_lab.faultknobs import ANNOTATION
from homecluster.model.timestamps import format_time
from homecluster.names import LABEL_GROUP
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import k8s_core_pb2 as core
from homecluster.provider.server import SERVICE_NAME

pytestmark = pytest.mark.lab

GROUPS = "groups.infra.homecluster.dev"
W1, W2 = "homecluster://worker-01", "homecluster://worker-02"
# the lab's slots draw 30 W and its Group prices energy at 0.30 per kWh
HOURLY = 30 / 1000 * 0.30
# what CA sends as `defaults`: its flags, in both duration encodings (CA 1.34.2+ does this)
DEFAULTS = pb.NodeGroupAutoscalingOptions(scaleDownUtilizationThreshold=0.5, scaleDownGpuUtilizationThreshold=0.6,
                                          zeroOrMaxNodeScaling=False, ignoreDaemonSetsUtilization=True)
for _new, _legacy, _seconds in (("scaleDownUnneededDuration", "scaleDownUnneededTime", 600),
                                ("scaleDownUnreadyDuration", "scaleDownUnreadyTime", 1200),
                                ("MaxNodeProvisionDuration", "MaxNodeProvisionTime", 900)):
    getattr(DEFAULTS, _new).seconds = _seconds
    getattr(DEFAULTS, _legacy).duration = _seconds * 10**9


@pytest.fixture
async def start_lab(tmp_path):
    """Factory: a lab with `homecluster run` and a ProviderClient on its provider; both stopped at teardown."""
    async with contextlib.AsyncExitStack() as stack:
        async def start(slots: int = 2, **settings: str) -> tuple[LabCluster, ProviderClient]:
            lab = await stack.enter_async_context(LabCluster(lab_config(tmp_path, slots, **settings)))
            assert lab.operator is not None and lab.provider is None, "the provider must be the operator's"
            client = await stack.enter_async_context(ProviderClient(lab.provider_address))
            return lab, client
        yield start


# ---- helpers ----------------------------------------------------------------------------------------------

def claim_of(lab: LabCluster, slot: str) -> dict[str, Any] | None:
    """The slot's newest NodeClaim as the API server holds it."""
    mine = [c for c in lab.claims() if c["spec"]["slotRef"] == slot]
    return max(mine, key=lambda c: int(c["metadata"]["resourceVersion"])) if mine else None


def status(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("status") or {}


def corev1_ready(obj: dict[str, Any] | None) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status(obj).get("conditions") or [])


async def refused(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float, what: str, interval: float = 0.05) -> Any:
    """support.waits.until over check(), its failure naming the last value check() returned too."""
    last: list[Any] = [None]

    async def recorded() -> Any:
        last[0] = await check()
        return last[0]
    return await until(recorded, what, timeout, detail=lambda: f"last: {last[0]!r}", interval=interval)


def operator_log(lab: LabCluster) -> str:
    return lab.operator.log_tail(30) if lab.operator else ""


# ---- 1. every RPC -----------------------------------------------------------------------------------------

async def test_every_rpc_against_homecluster_run(start_lab):
    lab, ca = await start_lab(slots=2)
    assert await ca.health_status() == "SERVING"
    assert await ca.health_status(SERVICE_NAME) == "SERVING"

    # cluster-wide reads
    assert [(g.id, g.minSize, g.maxSize) for g in await ca.groups()] == [(GROUP, 0, 2)]
    await ca.stub.Refresh(pb.RefreshRequest(), timeout=5)
    assert (await ca.stub.GPULabel(pb.GPULabelRequest(), timeout=5)).label == ""
    assert dict((await ca.stub.GetAvailableGPUTypes(pb.GetAvailableGPUTypesRequest(), timeout=5)).gpuTypes) == {}

    # NodeGroupForNode: CA's placeholder for an unregistered instance, a Node known by name only, unmanaged
    assert await ca.group_for(placeholder(W2)) == GROUP
    assert await ca.group_for(node("", "worker-01")) == GROUP
    assert await ca.group_for(node("kind://control-plane", "control-plane")) == ""

    # TemplateNodeInfo: the same non-empty bytes in field 1 (CA <= 1.34) and field 2 (CA >= 1.34.2)
    raw = (await ca.template()).SerializeToString()
    fields = wire.fields(raw)
    assert [wt for wt, _ in fields[1]] == [2] and [wt for wt, _ in fields[2]] == [2]
    node_bytes = fields[2][0][1]
    assert node_bytes and fields[1][0][1] == node_bytes
    node_status = wire.one(node_bytes, 3)  # v1.Node.status
    capacity, allocatable = wire.string_map(node_status, 1), wire.string_map(node_status, 2)
    assert {k: wire.text(v, 1) for k, v in capacity.items()} == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert wire.text(allocatable["pods"], 1) == "110"
    assert wire.string_map(wire.one(node_bytes, 1), 11)[LABEL_GROUP] == GROUP.encode()  # metadata.labels

    # GetOptions without spec.autoscaling: UNIMPLEMENTED, so CA keeps its own flags
    error = await refused(ca.options(DEFAULTS))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED and "spec.autoscaling" in error.details()

    # pricing: energy over the window
    start, end = window(hours=2)
    price = await ca.stub.PricingNodePrice(pb.PricingNodePriceRequest(
        node=node(W1, "worker-01"), startTimestamp=start, endTimestamp=end), timeout=5)
    assert price.price == pytest.approx(2 * HOURLY)
    pod = core.Pod()
    pod.metadata.name = "web"
    pod.spec.nodeSelector[LABEL_GROUP] = GROUP
    container = pod.spec.containers.add(name="web")
    container.resources.requests["cpu"].string = "2"  # half of the template's 4 cpus
    container.resources.requests["memory"].string = "1Gi"
    price = await ca.stub.PricingPodPrice(pb.PricingPodPriceRequest(
        pod_bytes=pod.SerializeToString(), startTimestamp=start, endTimestamp=end), timeout=5)
    assert price.price == pytest.approx(0.5 * 2 * HOURLY)

    # IncreaseSize refusals
    assert await ca.target() == 0
    assert (await refused(ca.increase(0))).code() == grpc.StatusCode.INVALID_ARGUMENT
    error = await refused(ca.increase(3))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "maxSize 2" in error.details()
    assert (await refused(ca.increase(1, group="nope"))).code() == grpc.StatusCode.NOT_FOUND

    # DecreaseTargetSize cancels a pending claim. It stays pending because the API server refuses the
    # operator's startup Job (a real 500 from the lab API server, not a mock).
    mark = request_log_mark(lab.api)
    lab.api.faults.fail_next("jobs.batch", count=10_000, code=500, verbs=("create",))
    await ca.increase(1)
    assert await ca.target() == 1
    held = claim_of(lab, "worker-01")
    assert held is not None and held["spec"]["requestedBy"] == "cluster-autoscaler"
    await until(lambda: any(e.resource == "jobs" and e.verb == "create" and e.code >= 500
                            for e in operator_requests(lab.api, mark)), "the operator's refused Job create", 10)
    assert status(claim_of(lab, "worker-01")).get("phase") in (None, "pending")
    assert await ca.instances() == [Instance(W1, "Creating")]
    error = await refused(ca.decrease(-2))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "asked to cancel 2" in error.details() and "only 1 NodeClaim(s) are still pending" in error.details()
    await ca.decrease(-1)
    assert await ca.target() == 0  # at once, not when the watch catches up
    lab.api.faults.clear()
    await until(lambda: claim_of(lab, "worker-01") is None,
                lambda: f"the canceled claim to go ({status(claim_of(lab, 'worker-01'))})", 15)
    # canceled while pending: it bought nothing, so it is not an attempt (no lastClaim digest)
    assert status(lab.api.get(SLOTS, "worker-01")).get("lastClaim") is None

    # ...and refuses to cancel a claim that is already booting, saying how many it could cancel
    await ca.increase(1)
    await until(lambda: status(claim_of(lab, "worker-01")).get("phase") == "booting",
                lambda: f"the new claim to boot; operator log:\n{operator_log(lab)}", 10)
    error = await refused(ca.decrease(-1))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "only 0 NodeClaim(s) are still pending" in error.details()
    assert await ca.target() == 1

    # DeleteNodes refuses a node no group manages, naming it; nothing is deleted
    error = await refused(ca.delete([node("kind://control-plane", "control-plane")]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "'control-plane'" in error.details()
    assert await ca.target() == 1

    # GetOptions with spec.autoscaling: every field filled, durations in both encodings
    await lab.api.patch(GROUPS, GROUP, {"spec": {"maxNodeProvisionTime": "20m", "autoscaling": {
        "scaleDownUtilizationThreshold": 0.3, "scaleDownUnneededTime": "5m", "zeroOrMaxNodeScaling": True}}})

    async def options() -> Any:
        try:
            return await ca.options(DEFAULTS)
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise
            return None

    answer = await eventually(options, 10, "GetOptions to see the Group's spec.autoscaling")
    opts = answer.nodeGroupAutoscalingOptions
    assert opts.scaleDownUtilizationThreshold == pytest.approx(0.3)  # the Group's
    assert opts.scaleDownGpuUtilizationThreshold == pytest.approx(0.6)  # echoed default
    assert opts.zeroOrMaxNodeScaling is True and opts.ignoreDaemonSetsUtilization is True
    raw = opts.SerializeToString()
    expected_seconds = {3: 300, 4: 1200, 5: 1200}  # unneeded (Group), unready (default), provision (Group, 20m)
    for legacy, seconds in expected_seconds.items():
        assert wire.one(wire.one(raw, legacy), 1) == seconds * 10**9, f"legacy field {legacy} (nanoseconds)"
        assert wire.one(wire.one(raw, legacy + 5), 1) == seconds, f"Duration field {legacy + 5} (seconds)"
    assert set(wire.fields(raw)) == set(range(1, 11)), "every field of NodeGroupAutoscalingOptions is on the wire"
    assert (await refused(ca.options(DEFAULTS, group="nope"))).code() == grpc.StatusCode.NOT_FOUND

    await ca.stub.Cleanup(pb.CleanupRequest(), timeout=5)
    assert await ca.health_status() == "SERVING"  # Cleanup releases nothing the provider still needs


# ---- 2. scale up to ready machines, down to powered-off ones -----------------------------------------------

@pytest.mark.slow
async def test_scale_up_to_ready_machines_then_down_to_powered_off(start_lab):
    lab, ca = await start_lab(slots=2)
    await scale_up_then_down(lab, ca)


async def scale_up_then_down(lab: LabCluster, ca: ProviderClient,
                             before_delete: Callable[[dict[str, Any]], Awaitable[None]] | None = None) -> None:
    """IncreaseSize(2) -> worker-01 and worker-02 ready; DeleteNodes(worker-02) -> off. `before_delete(node)`
    runs with worker-02's corev1 Node before DeleteNodes. Also run on the real control plane
    (tests/k8s/test_k8s_integration.py), whose lab has a runner Node besides the pool's."""
    await ca.increase(2)
    assert await ca.target() == 2
    claims = lab.claims()
    assert sorted(c["spec"]["slotRef"] for c in claims) == ["worker-01", "worker-02"]

    await until(lambda: [status(claim_of(lab, s)).get("phase") for s in ("worker-01", "worker-02")]
                == ["ready", "ready"],
                lambda: f"both claims ready; operator log:\n{operator_log(lab)}", 45, interval=0.2)
    assert [lab.machine(s).power_state() for s in ("worker-01", "worker-02")] == ["on", "on"]
    corev1 = {n["spec"]["providerID"]: n for n in lab.api.list("nodes") if n["spec"].get("providerID")}
    assert set(corev1) == {W1, W2} and all(corev1_ready(n) for n in corev1.values()), corev1
    assert await ca.target() == 2
    instances = await ca.instances()
    assert sorted(instances, key=lambda i: i.id) == [Instance(W1, "Running"), Instance(W2, "Running")]
    assert {i.id for i in instances} == set(corev1)  # CA matches instances to Nodes by exact providerID
    for obj in corev1.values():
        assert await ca.group_for(from_corev1(obj)) == GROUP

    # scale down: CA deletes one real, drained node
    doomed = claim_of(lab, "worker-02")
    if before_delete is not None:
        await before_delete(corev1[W2])
    await ca.delete([from_corev1(corev1[W2])])
    assert await ca.target() == 1  # already lower when the call returns
    assert {i.id: i.state for i in await ca.instances()} == {W1: "Running", W2: "Deleting"}
    await until(lambda: lab.api.get(CLAIMS, doomed["metadata"]["name"]) is None,
                lambda: f"the released claim to complete and go; operator log:\n{operator_log(lab)}", 45, interval=0.2)
    assert lab.machine("worker-02").power_state() == "off"
    await until(lambda: status(lab.api.get(SLOTS, "worker-02")).get("phase") == "off", "slot worker-02 off", 10)
    last = status(lab.api.get(SLOTS, "worker-02"))["lastClaim"]
    assert (last["name"], last["phase"], last["reason"]) == (doomed["metadata"]["name"], "completed", "Released")
    assert await ca.instances() == [Instance(W1, "Running")]
    assert await ca.target() == 1
    assert lab.machine("worker-01").power_state() == "on"


# ---- 3. a provider-created claim is processed on its own write ---------------------------------------------

async def test_a_claim_the_provider_creates_boots_without_waiting_for_the_poll(start_lab):
    # With a 60 s safety-net poll, only the write itself (providerglue.ClaimWriter -> controller.ingest)
    # can give the new claim's slot a pass: the watch event of the same write carries the same
    # resourceVersion and is ignored as not newer.
    lab, ca = await start_lab(slots=1, job_poll_interval="60s")
    started = time.monotonic()
    await ca.increase(1)
    await until(lambda: status(claim_of(lab, "worker-01")).get("phase") == "booting",
                lambda: f"the claim to boot within seconds (claim {status(claim_of(lab, 'worker-01'))}); "
                f"operator log:\n{operator_log(lab)}", 8, interval=0.02)
    took = time.monotonic() - started
    # the bound tells the write's own pass from the 60 s poll, on a busy machine too (at most 10 x 5 s)
    assert took < scaled(5.0), f"pending -> booting took {took:.2f}s (the safety-net poll is 60 s)"
    assert status(claim_of(lab, "worker-01")).get("startupJob")


# ---- 4. a failed boot is a creation error ------------------------------------------------------------------

@pytest.mark.slow
async def test_a_failed_boot_is_a_creation_error_the_autoscaler_can_read(start_lab):
    lab, ca = await start_lab(slots=1, startup_job_timeout="10s", registration_wait="3s", attempt_limit="1")
    await lab.api.patch(SLOTS, "worker-01", {"metadata": {"annotations": {ANNOTATION: "never-boots"}}})
    await until(lambda: lab.machine("worker-01").faults.never_boots, "the never-boots fault to apply", 5)

    await ca.increase(1)
    first = claim_of(lab, "worker-01")
    await until(lambda: status(claim_of(lab, "worker-01")).get("phase") == "failed",
                lambda: f"the boot to fail; operator log:\n{operator_log(lab)}", 40, interval=0.05)
    failed_at = time.monotonic()
    failed = status(lab.api.get(CLAIMS, first["metadata"]["name"]))
    assert failed["reason"] in ("RegistrationTimedOut", "StartupJobTimedOut", "StartupJobFailed",
                                "DeadlineExceeded"), failed

    async def error_instance() -> Any:
        return [i for i in await ca.instances() if i.error_code]

    # well within one autoscaler loop (--scan-interval, 10 s) of the failure reaching the API server
    (instance,) = await eventually(error_instance, 3.0, "the failure in NodeGroupNodes", interval=0.1)
    assert time.monotonic() - failed_at < scaled(3.0)
    assert instance == Instance(W1, "Creating", failed["reason"], failed["message"], 99)  # OtherErrorClass
    assert await ca.target() == 0  # a failed claim is not wanted capacity

    # CA's deleteCreatedNodesWithErrors: DeleteNodes with the placeholder node of the error instance
    await ca.delete([placeholder(W1, "create-error")])
    # until the claim is gone (its forced shutdown first) the instance reads Deleting, never the error again
    assert all((i.state, i.error_code) == ("Deleting", "") for i in await ca.instances())
    await eventually(lambda: _no_instances(ca), 20, "the error instance to go after DeleteNodes", interval=0.1)
    assert lab.api.get(CLAIMS, first["metadata"]["name"]) is None

    # the slot's streak is at the limit: the provider will not spend another attempt on it...
    error = await refused(ca.increase(1))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "worker-01" in error.details()
    # ...and a claim made by hand fails AttemptLimitExceeded, which CA reads as out of resources (class 1)
    now = format_time(datetime.now(timezone.utc))
    await lab.api.create(objects.claim("by-hand", "worker-01", labelled=True, requested_at=now))
    await until(lambda: status(lab.api.get(CLAIMS, "by-hand")).get("reason") == "AttemptLimitExceeded",
                lambda: f"the by-hand claim to fail AttemptLimitExceeded ({status(lab.api.get(CLAIMS, 'by-hand'))})",
                15)
    (instance,) = await eventually(error_instance, 3.0, "the attempt-limit failure in NodeGroupNodes", interval=0.1)
    assert (instance.id, instance.state, instance.error_code, instance.error_class) == \
        (W1, "Creating", "AttemptLimitExceeded", 1)


async def _no_instances(ca: ProviderClient) -> bool:
    return await ca.instances() == []


# ---- 5. reads never reach the API server -------------------------------------------------------------------

async def test_read_rpcs_cause_no_api_server_request(start_lab):
    lab, ca = await start_lab(slots=2, job_poll_interval="60s")
    # a Group with spec.autoscaling, so GetOptions computes an answer instead of refusing
    await lab.api.patch(GROUPS, GROUP, {"spec": {"autoscaling": {"scaleDownUnneededTime": "5m"}}})
    await eventually(lambda: _options_ok(ca), 10, "GetOptions to see spec.autoscaling")
    # let the operator's start-up writes settle: one second without any request from it
    await eventually(lambda: _quiet(lab, 1.0), 20, "the operator to go quiet", interval=0.2)
    watches = [e for e in operator_requests(lab.api) if e.verb == "watch"]
    assert {e.resource for e in watches} >= {"nodeclaims", "nodes", "groups", "jobs"}, describe(watches)

    mark = request_log_mark(lab.api)
    start, end = window()
    pod = core.Pod()
    pod.spec.nodeSelector[LABEL_GROUP] = GROUP
    pod.spec.containers.add(name="c").resources.requests["cpu"].string = "1"
    calls = 0
    for round_ in range(30):
        await ca.stub.Refresh(pb.RefreshRequest(), timeout=5)
        await ca.groups()
        for n in (placeholder(W1), node(W2, "worker-02"), node("", "worker-01"), node("kind://cp", "control-plane"),
                  node(f"homecluster://unknown-{round_}", f"unknown-{round_}")):
            await ca.group_for(n)
        assert await ca.target() == 0
        assert await ca.instances() == []
        await ca.template()
        await ca.options(DEFAULTS)
        await ca.stub.PricingNodePrice(pb.PricingNodePriceRequest(node=node(W1, "worker-01"), startTimestamp=start,
                                                                  endTimestamp=end), timeout=5)
        await ca.stub.PricingPodPrice(pb.PricingPodPriceRequest(pod_bytes=pod.SerializeToString(),
                                                                startTimestamp=start, endTimestamp=end), timeout=5)
        await ca.stub.GPULabel(pb.GPULabelRequest(), timeout=5)
        await ca.stub.GetAvailableGPUTypes(pb.GetAvailableGPUTypesRequest(), timeout=5)
        assert (await refused(ca.target("nope"))).code() == grpc.StatusCode.NOT_FOUND
        calls += 16
    await asyncio.sleep(0.5)  # anything the burst caused would be logged by now
    caused = operator_requests(lab.api, mark)
    assert caused == [], f"{calls} read RPCs caused API requests: {describe(caused)}"

    # the same log does see the provider's requests: one write RPC -> one create, no read
    mark = request_log_mark(lab.api)
    await ca.increase(1)
    created = [e for e in operator_requests(lab.api, mark) if e.resource == "nodeclaims"]
    assert [(e.verb, e.user_agent) for e in created][:1] == [("create", "homecluster-operator")], describe(created)


async def _options_ok(ca: ProviderClient) -> bool:
    try:
        await ca.options(DEFAULTS)
        return True
    except grpc.aio.AioRpcError:
        return False


async def _quiet(lab: LabCluster, seconds: float) -> bool:
    entries = operator_requests(lab.api)
    return not entries or time.time() - max(e.time for e in entries) >= seconds
