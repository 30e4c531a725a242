"""The whole system on real VMs and the real control plane: operator + provider + Jobs + playbooks + qemu
machines behind real BMCs, on etcd, kube-apiserver, kube-controller-manager and kube-scheduler.

`RealLabCluster(machines="vm")` gives two slots backed by qemu VMs (worker-01 behind ipmi_sim, worker-02
behind the lab's Redfish service). The operator runs as its ServiceAccount; the real Job controller makes each
lifecycle Job's pod, the real scheduler binds it to the runner node, whose kubelet (ours) runs it with
ansible-runner. Each VM's host-side kubelet registers its Node, posts its status, renews its Lease and marks
the pods bound to it Running as its node (`system:node:<slot>`, a client certificate from the lab's CA), so the
Node authorizer and NodeRestriction judge it. Scale-up and scale-down go through the autoscaler provider's
real gRPC protocol, as cluster-autoscaler would.

One lab, both stories at once (a lab start and a VM boot cost tens of seconds on 2 loaded cores): worker-02's
VM is set to hang (the lab's fault annotation, the image's hang knob), the provider asks for two nodes; worker-01
boots to a ready Node and is then given back (cordon, drain, power-off), worker-02 never registers, its claim
fails and its VM is forced off. Last, the real audit log: the VMs' Node writes came from their own node
identities, and none of our identities was refused anything.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from support.waits import until

from homecluster import names
from homecluster_lab.config import LabConfig
from homecluster_lab.executor.runnernode import binding_lag
from homecluster_lab.faultknobs import ANNOTATION
from homecluster_lab.k8s import binaries
from homecluster_lab.k8s.install import CNI_USER
from homecluster_lab.k8s.labcluster import RUNNER, RealLabCluster
from homecluster_lab.node.kube import KubeError
from homecluster_lab.operator_proc import unavailable_reason
from homecluster_lab.vm import procs
from homecluster_lab.vm.machine import leftover_processes
from homecluster_lab.vm.qemu import QEMU

pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.slow]

CLAIMS = f"{names.CLAIM_PLURAL}.{names.API_GROUP}"
SLOTS = f"{names.SLOT_PLURAL}.{names.API_GROUP}"
SLOTS_PATH = f"/apis/{names.API_GROUP}/v2alpha1/{names.SLOT_PLURAL}"
GROUP = "workers"
NS = "homecluster-system"
BOOTS, HANGS = "worker-01", "worker-02"  # IPMI and Redfish (driver "mixed")
# Short settings, so that one boot and one release take seconds. The Job timeouts and the registration wait
# are generous (they cost nothing when things go well, and a TCG boot beside other test suites on 2 cores can
# take several times its 5 s). The startup Job covers the boot (it waits for the guest's boot check port), so
# its timeout holds ansible-runner's start and the TCG boot; the hung boot is waited out by it. The shutdown
# Job's holds ansible-runner's start, the IPMI soft-off (an SSH login into the TCG guest) and its wait: at a
# load of 15-19 on 2 cores a 60 s one timed out before the guest was off, as tests/k8s found (their Jobs get
# 2 and 3 minutes on the real control plane).
SETTINGS = {
    "startup_job_timeout": "120s", "job_poll_interval": "1s", "registration_wait": "60s", "readiness_gate": "15s",
    "uncordon_retry_ceiling": "1s", "slack": "2s", "shutdown_job_timeout": "150s", "shutdown_holdoff": "30s",
}


@contextlib.asynccontextmanager
async def vm_lab(tmp_path: Path):
    """The real control plane with two VM slots and the operator; checks that no VM process is left."""
    for reason in (None if shutil.which(QEMU) else f"{QEMU} is not installed (Debian package qemu-system-x86)",
                   binaries.missing_reason(), unavailable_reason()):
        if reason:
            pytest.skip(reason)
    config = LabConfig(slots=2, driver="mixed", machines="vm", control_plane="kubernetes",
                       ready_taints_clear_seconds=0.5, provider_address="127.0.0.1:0", workdir=tmp_path / "lab",
                       settings=dict(SETTINGS), require_operator=True, ready_timeout=180)
    async with RealLabCluster(config) as lab:
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


def status(lab: RealLabCluster, kind: str, name: str) -> dict:
    return (lab.api.get(kind, name) or {}).get("status") or {}


def node_ready(lab: RealLabCluster, name: str) -> str | None:
    node = lab.api.get("nodes", name) or {}
    return {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}.get("Ready")


def qemu_pids(lab: RealLabCluster) -> list[int]:
    """The lab's live qemu processes (its ipmi_sim BMCs keep running while the lab does)."""
    return [pid for pid in leftover_processes(lab.fleet.state_root) if QEMU in procs.cmdline(pid)[0]]


def log_tail(lab: RealLabCluster) -> str:
    return lab.operator.log_tail(30) if lab.operator else ""


def job_logs(lab: RealLabCluster, kind: str) -> str:
    """The last lines of every `kind` (startup, shutdown) Job pod's output, for a failure message."""
    logs = sorted((lab.workdir / "pods").glob(f"*/*-{kind}*/container.log"))
    return "\n".join(f"--- {f.parent.name}:\n" + "\n".join(f.read_text().splitlines()[-25:]) for f in logs)


async def pod(lab: RealLabCluster, name: str) -> dict | None:
    try:
        return await lab.api.kube.get(f"/api/v1/namespaces/default/pods/{name}")
    except KubeError as exc:
        if exc.status == 404:
            return None
        raise


async def test_a_claim_boots_a_vm_to_a_ready_node_another_hangs_and_both_are_powered_off(tmp_path, record_property):
    started = time.monotonic()
    async with vm_lab(tmp_path) as lab:
        record_property("lab_start_seconds", round(time.monotonic() - started, 2))
        await lab.api.kube.merge_patch(f"{SLOTS_PATH}/{HANGS}",
                                       {"metadata": {"annotations": {ANNOTATION: "never-boots"}}})
        await until(lambda: lab.machine(HANGS).faults.never_boots, "the lab to set the hang knob", 10)
        provider = Provider(lab.provider_address)
        try:
            await both_stories(lab, provider, record_property)
        finally:
            await provider.close()
        events = lab.control_plane.files.audit_log.read_text().splitlines()
    judge_the_audit_log([json.loads(line) for line in events if line.strip()])


async def both_stories(lab: RealLabCluster, provider: Provider, record_property) -> None:
    started = time.monotonic()
    await provider.increase(2)
    claims = await until(lambda: len(lab.claims()) == 2 and lab.claims(), "the provider to create 2 claims", 10)
    by_slot = {c["spec"]["slotRef"]: c["metadata"]["name"] for c in claims}
    assert sorted(by_slot) == [BOOTS, HANGS], by_slot
    name, hung = by_slot[BOOTS], by_slot[HANGS]
    vm, hung_vm = lab.machine(BOOTS).vm, lab.machine(HANGS).vm

    await until(lambda: status(lab, CLAIMS, name).get("phase") in ("ready", "failed"),
                lambda: f"claim {name} to be ready; operator log:\n{log_tail(lab)}", 180)
    assert status(lab, CLAIMS, name)["phase"] == "ready", json.dumps(status(lab, CLAIMS, name))
    record_property("claim_to_ready_seconds", round(time.monotonic() - started, 2))
    assert vm.is_running(), "a ready claim's VM runs"
    answer = await asyncio.to_thread(vm.ssh, "hostname")
    assert (answer.returncode, answer.stdout.strip()) == (0, BOOTS), answer.stderr
    node = lab.api.get("nodes", BOOTS)
    assert node_ready(lab, BOOTS) == "True"
    assert node["spec"]["providerID"] == f"homecluster://{BOOTS}"
    await until(lambda: status(lab, SLOTS, BOOTS).get("phase") == "ready", f"slot {BOOTS} ready", 30)

    # a pod on the node, for the drain to evict; the VM's kubelet marks it Running, as its node
    await lab.api.kube.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app", "namespace": "default"},
        "spec": {"nodeName": BOOTS, "containers": [{"name": "app", "image": "busybox"}]}})
    await until(lambda: _phase(lab, "app", "Running"), "the VM's kubelet to mark pod app Running", 60)

    released = time.monotonic()
    await provider.delete_node(BOOTS, node["spec"]["providerID"])
    await until(lambda: not vm.is_running(),
                lambda: f"the VM of {BOOTS} to power off; shutdown Jobs:\n{job_logs(lab, 'shutdown')}", 300)
    record_property("scale_down_to_qemu_exit_seconds", round(time.monotonic() - released, 2))
    assert lab.api.get("nodes", BOOTS)["spec"].get("unschedulable") is True, "the node was cordoned"
    assert await pod(lab, "app") is None, "the drain evicted the pod (its VM's kubelet finished the deletion)"
    # slower than on the in-memory server: the Jobs' pods go through the real Job controller and scheduler, and
    # the runner's kubelet, at a load of 15-20 here
    await until(lambda: status(lab, SLOTS, BOOTS).get("phase") == "off",
                lambda: f"slot {BOOTS} to report off (now {status(lab, SLOTS, BOOTS)})", 120)
    last = await until(lambda: (status(lab, SLOTS, BOOTS).get("lastClaim") or {}).get("name") == name
                       and status(lab, SLOTS, BOOTS)["lastClaim"],
                       lambda: f"slot {BOOTS} to record claim {name} (now {status(lab, SLOTS, BOOTS)}, "
                               f"Node Ready {node_ready(lab, BOOTS)}); operator log:\n{log_tail(lab)}", 120)
    assert (last["name"], last["phase"], last["reachedReady"]) == (name, "completed", True), last

    # the hung boot: powered on, never up, its claim failed by the startup Job, its VM forced off
    assert await asyncio.to_thread(hung_vm.wait_for_hang, 60), hung_vm.serial_text()[-2000:]
    await until(lambda: status(lab, CLAIMS, hung).get("phase") in ("failed", "ready"),
                lambda: f"claim {hung} to fail; operator log:\n{log_tail(lab)}", 150)
    final = status(lab, CLAIMS, hung)
    # the startup Job waits for the guest's boot check port, which a hung boot never opens: the Job's reason
    assert final["phase"] == "failed" and final.get("reason") in ("StartupJobTimedOut", "StartupJobFailed"), \
        json.dumps(final)
    assert lab.api.get("nodes", HANGS) is None, "a hung guest never registered a Node"
    await until(lambda: not hung_vm.is_running(),
                lambda: f"the hung VM of {HANGS} to be forced off; operator log:\n{log_tail(lab)}", 300)
    await until(lambda: status(lab, SLOTS, HANGS).get("phase") == "off", f"slot {HANGS} off", 120)
    assert qemu_pids(lab) == [], "no qemu process of the lab is left after the power-offs"


async def _phase(lab: RealLabCluster, name: str, phase: str) -> bool:
    found = await pod(lab, name)
    return bool(found) and (found.get("status") or {}).get("phase") == phase


def judge_the_audit_log(events: list[dict[str, Any]]) -> None:
    """The VM's Node, its status, its Lease and its pod's status were written by its own node identity (which
    the Node authorizer and NodeRestriction judged), and nothing of ours was refused."""
    node_user = f"system:node:{BOOTS}"

    def writers(resource: str, name: str, subresource: str = "", group: str = "",
                verbs=("create", "update", "patch")) -> set[str]:
        """Who wrote (successfully) that object; group "" is the core API (not our slots, also `nodes`)."""
        return {e["user"]["username"] for e in events
                if e["verb"] in verbs and e["responseStatus"]["code"] < 300
                and (e.get("objectRef") or {}).get("apiGroup", "") == group
                and (e.get("objectRef") or {}).get("resource") == resource
                and (e.get("objectRef") or {}).get("name") == name
                and (e.get("objectRef") or {}).get("subresource", "") == subresource}

    # the kubelet's own writes; the node lifecycle controller also updates the status once the VM is off
    assert writers("nodes", BOOTS, verbs=("create",)) == {node_user}
    assert writers("nodes", BOOTS, "status", verbs=("patch",)) == {node_user}
    assert writers("leases", BOOTS, group="coordination.k8s.io") == {node_user}
    assert writers("pods", "app", "status", verbs=("patch",)) == {node_user}
    # the readiness taint is lifted by the lab's "CNI", as on a cluster (NodeRestriction keeps a kubelet off them)
    assert CNI_USER in writers("nodes", BOOTS, verbs=("patch",))
    ours = {node_user, f"system:node:{HANGS}", f"system:node:{RUNNER}", CNI_USER,
            f"system:serviceaccount:{NS}:homecluster-controller", f"system:serviceaccount:{NS}:homecluster-job"}
    refused = [(e["user"]["username"], e["verb"], e["requestURI"]) for e in events
               if e["responseStatus"]["code"] == 403 and e["user"]["username"] in ours
               and not (e["user"]["username"] == f"system:node:{RUNNER}" and binding_lag(e))]
    assert refused == [], refused
