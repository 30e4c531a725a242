"""The whole system on real VMs: operator + provider + Jobs + playbooks + qemu machines behind real BMCs.

`LabCluster(machines="vm")` gives two slots backed by qemu VMs (worker-01 behind ipmi_sim, worker-02
behind the lab's Redfish service); their host-side kubelets register the corev1 Node while the
guest is up. Scale-up and scale-down go through the autoscaler provider's real gRPC protocol, as
cluster-autoscaler would. Settings are short so that one boot and one release take seconds.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from pathlib import Path

import pytest
from integration_pool import wait_for

from homecluster import names
from homecluster_lab.cluster import LabCluster, LabConfig
from homecluster_lab.faultknobs import ANNOTATION
from homecluster_lab.vm import procs
from homecluster_lab.vm.machine import leftover_processes
from homecluster_lab.vm.qemu import QEMU

pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.slow]

CLAIMS = f"{names.CLAIM_PLURAL}.{names.API_GROUP}"
SLOTS = f"{names.SLOT_PLURAL}.{names.API_GROUP}"
GROUP = "workers"
# Short settings, so that one boot and one release take seconds. The Job timeouts and the boot test's
# registration wait are generous (they cost nothing when things go well, and a TCG boot beside other
# test suites on 2 cores can take several times its 5 s). The startup Job covers the boot (it waits for the
# guest's boot check port), so its timeout holds ansible-runner's start and the TCG boot; a hung boot is
# waited out by it.
SETTINGS = {
    "startup_job_timeout": "120s", "job_poll_interval": "1s", "registration_wait": "60s", "readiness_gate": "15s",
    "uncordon_retry_ceiling": "1s", "slack": "2s", "shutdown_job_timeout": "60s", "shutdown_holdoff": "30s",
}


@contextlib.asynccontextmanager
async def vm_lab(tmp_path: Path, **settings: str):
    """A lab with two VM slots (worker-01 IPMI, worker-02 Redfish) and the operator; checks nothing is left."""
    if shutil.which(QEMU) is None:
        pytest.skip(f"{QEMU} is not installed (Debian package qemu-system-x86)")
    config = LabConfig(slots=2, driver="mixed", machines="vm", ready_taints_clear_seconds=0.5,
                       provider_address="127.0.0.1:0", workdir=tmp_path / "lab", settings={**SETTINGS, **settings},
                       require_operator=True)
    async with LabCluster(config) as lab:
        yield lab
    left = leftover_processes(tmp_path / "lab")
    assert not left, f"qemu/ipmi_sim processes left running after the lab stopped: pids {left}"


class Provider:
    """cluster-autoscaler's side: a gRPC client of the externalgrpc provider the operator serves."""

    def __init__(self, address: str) -> None:
        import grpc

        from homecluster.provider.proto import externalgrpc_pb2 as pb
        from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
        self.pb = pb
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = pb_grpc.CloudProviderStub(self.channel)

    async def increase(self, delta: int = 1) -> None:
        await self.stub.NodeGroupIncreaseSize(self.pb.NodeGroupIncreaseSizeRequest(id=GROUP, delta=delta), timeout=10)

    async def delete_node(self, name: str, provider_id: str) -> None:
        node = self.pb.ExternalGrpcNode(providerID=provider_id, name=name)
        await self.stub.NodeGroupDeleteNodes(self.pb.NodeGroupDeleteNodesRequest(id=GROUP, nodes=[node]), timeout=10)

    async def close(self) -> None:
        await self.channel.close()


def status(lab: LabCluster, kind: str, name: str) -> dict:
    return (lab.api.get(kind, name) or {}).get("status") or {}


def node_ready(lab: LabCluster, name: str) -> str | None:
    node = lab.api.get("nodes", name) or {}
    return {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}.get("Ready")


def qemu_pids(lab: LabCluster) -> list[int]:
    """The lab's live qemu processes (its ipmi_sim BMCs keep running while the lab does)."""
    return [pid for pid in leftover_processes(lab.fleet.state_root) if QEMU in procs.cmdline(pid)[0]]


def log_tail(lab: LabCluster) -> str:
    return lab.operator.log_tail(30) if lab.operator else ""


async def new_claim(lab: LabCluster, known: set[str]) -> dict:
    found = await wait_for(lambda: [c for c in lab.claims() if c["metadata"]["name"] not in known], 10,
                           "the provider to create a claim")
    assert len(found) == 1, found
    return found[0]


async def test_scale_up_boots_a_vm_to_ready_and_scale_down_powers_it_off(tmp_path, record_property):
    started = time.monotonic()
    async with vm_lab(tmp_path) as lab:
        record_property("lab_start_seconds", round(time.monotonic() - started, 2))
        await scale_up_and_down(lab, record_property)


async def scale_up_and_down(lab: LabCluster, record_property) -> None:
    provider = Provider(lab.provider_address)
    try:
        started = time.monotonic()
        await provider.increase(1)
        claim = await new_claim(lab, set())
        name, slot = claim["metadata"]["name"], claim["spec"]["slotRef"]
        vm = lab.machine(slot).vm
        await wait_for(lambda: status(lab, CLAIMS, name).get("phase") in ("ready", "failed"), 180,
                       lambda: f"claim {name} to be ready; operator log:\n{log_tail(lab)}")
        assert status(lab, CLAIMS, name)["phase"] == "ready", json.dumps(status(lab, CLAIMS, name))
        record_property("claim_to_ready_seconds", round(time.monotonic() - started, 2))
        assert vm.is_running(), "a ready claim's VM runs"
        answer = await asyncio.to_thread(vm.ssh, "hostname")
        assert (answer.returncode, answer.stdout.strip()) == (0, slot), answer.stderr
        node = lab.api.get("nodes", slot)
        assert node_ready(lab, slot) == "True"
        await wait_for(lambda: status(lab, SLOTS, slot).get("phase") == "ready", 30, f"slot {slot} ready")
        other = next(s for s in lab.slot_names if s != slot)
        assert not lab.machine(other).vm.is_running(), "only the claimed slot's VM was powered on"

        # a pod on the node, for the drain to evict
        await lab.api.create({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": "app", "namespace": "default"},
                              "spec": {"nodeName": slot, "containers": [{"name": "app", "image": "busybox"}]}})

        released = time.monotonic()
        await provider.delete_node(slot, node["spec"]["providerID"])
        await wait_for(lambda: not vm.is_running(), 120,
                       lambda: f"the VM of {slot} to power off; operator log:\n{log_tail(lab)}")
        record_property("scale_down_to_qemu_exit_seconds", round(time.monotonic() - released, 2))
        assert lab.api.get("nodes", slot)["spec"].get("unschedulable") is True, "the node was cordoned"
        # the host-side kubelet stopped with the VM: the Node turns NotReady
        await wait_for(lambda: node_ready(lab, slot) == "False", 10, f"node {slot} to turn NotReady")
        assert lab.api.get("pods", "app", namespace="default") is None, "the drain evicted the pod"
        await wait_for(lambda: status(lab, SLOTS, slot).get("phase") == "off", 20,
                       lambda: f"slot {slot} to report off (now {status(lab, SLOTS, slot)})")
        last = await wait_for(lambda: (status(lab, SLOTS, slot).get("lastClaim") or {}).get("name") == name
                              and status(lab, SLOTS, slot)["lastClaim"], 20, f"slot {slot} to record claim {name}")
        assert (last["name"], last["phase"], last["reachedReady"]) == (name, "completed", True), last
        assert qemu_pids(lab) == [], "no qemu process of the lab is left after the power-off"
    finally:
        await provider.close()


async def test_a_vm_whose_boot_hangs_fails_its_claim_and_is_forced_off(tmp_path):
    async with vm_lab(tmp_path) as lab:
        await hang_fails_and_forces_off(lab)


async def hang_fails_and_forces_off(lab: LabCluster) -> None:
    # the lab's fault annotation selects the image's hang knob on each VM (from its next power-on)
    for slot in lab.slot_names:
        await lab.api.patch(SLOTS, slot, {"metadata": {"annotations": {ANNOTATION: "never-boots"}}})
    await wait_for(lambda: all(lab.machine(s).faults.never_boots for s in lab.slot_names), 10,
                   "the lab to set the hang knob")
    provider = Provider(lab.provider_address)
    try:
        await provider.increase(1)
        claim = await new_claim(lab, set())
        name, slot = claim["metadata"]["name"], claim["spec"]["slotRef"]
        vm = lab.machine(slot).vm
        await wait_for(vm.is_running, 90, lambda: f"the VM of {slot} to be powered on; operator log:\n{log_tail(lab)}")
        assert await asyncio.to_thread(vm.wait_for_hang, 60), vm.serial_text()[-2000:]
        await wait_for(lambda: status(lab, CLAIMS, name).get("phase") in ("failed", "ready"), 150,
                       lambda: f"claim {name} to fail; operator log:\n{log_tail(lab)}")
        final = status(lab, CLAIMS, name)
        # the startup Job waits for the guest's boot check port, which a hung boot never opens: the Job's reason
        assert final["phase"] == "failed" and final.get("reason") in ("StartupJobTimedOut", "StartupJobFailed"), \
            json.dumps(final)
        assert lab.api.get("nodes", slot) is None, "a hung guest never registered a Node"
        await wait_for(lambda: not vm.is_running(), 90,
                       lambda: f"the hung VM of {slot} to be forced off; operator log:\n{log_tail(lab)}")
        await wait_for(lambda: status(lab, SLOTS, slot).get("phase") == "off", 20, f"slot {slot} off")
    finally:
        await provider.close()
