"""LabCluster in-process: the pool it creates, kubectl against it, fault annotations, the provider, a real Job.

Everything is real: the API server over HTTP, kubectl as a subprocess, the machines' BMCs on loopback,
the provider over gRPC, and a lifecycle Job run by the executor through ansible-runner.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import grpc
import pytest
from support import objects

from homecluster_lab.cluster import LabCluster, LabConfig, LabError
from homecluster_lab.faultknobs import ANNOTATION

pytestmark = pytest.mark.lab


@pytest.fixture
async def lab(tmp_path: Path):
    config = LabConfig(slots=3, operator=False, provider_address="127.0.0.1:0", workdir=tmp_path / "lab",
                       boot_seconds=0.5, ready_taints_clear_seconds=0.2)
    async with LabCluster(config) as cluster:
        yield cluster


async def kubectl(lab: LabCluster, *args: str, timeout: float = 60) -> str:
    home = lab.workdir / "kubectl-home"
    home.mkdir(exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(lab.kubeconfig_path), "--cache-dir", str(home / "cache"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {err.decode()}"
    return out.decode()


async def eventually(check, timeout: float = 10, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_kubectl_lists_the_slots_with_the_printer_columns(lab):
    out = await kubectl(lab, "get", "slots")
    lines = out.strip().splitlines()
    assert lines[0].split() == ["NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE"]
    assert [line.split()[:2] for line in lines[1:]] == [[f"worker-0{i}", "workers"] for i in (1, 2, 3)]
    pools = await kubectl(lab, "get", "pools", "-o", "name")
    assert pools.split() == ["group.infra.homecluster.dev/workers"]
    everything = await kubectl(lab, "get", "homecluster", "-o", "name")
    assert "node.infra.homecluster.dev/worker-02" in everything.split()


async def test_each_slot_points_at_its_machine_and_a_secret_in_the_operator_namespace(lab):
    methods = {}
    for slot in lab.slots():
        name, power = slot["metadata"]["name"], slot["spec"]["power"]
        methods[name] = power["method"]
        step = power.get("ipmi") or power.get("redfish") or power["ssh"]
        ref = step["credentialsSecretRef"]
        assert ref["namespace"] == "homecluster-system"
        secret = lab.api.get("secrets", ref["name"], "homecluster-system")
        assert secret is not None, f"slot {name}: its Secret {ref['name']} is missing"
        assert set(secret["data"]) == ({"privateKey"} if power["method"] == "wol" else {"username", "password"})
        assert lab.fleet.endpoints[name].method == power["method"]
    assert methods == {"worker-01": "ipmi", "worker-02": "redfish", "worker-03": "wol"}


async def test_a_fault_annotation_set_with_kubectl_reaches_the_machine_and_removing_it_heals(lab):
    await kubectl(lab, "annotate", "slot", "worker-02", f"{ANNOTATION}=never-boots,flaps=3")
    await eventually(lambda: lab.machine("worker-02").faults.never_boots, what="never_boots on worker-02")
    assert lab.machine("worker-02").faults.flap_seconds == 3
    assert "never-boots" in lab.machine_summary()["worker-02"]
    # the knob does what it says: powered on, the machine never joins
    lab.machine("worker-02").power_on()
    await asyncio.sleep(1.0)
    assert lab.api.get("nodes", "worker-02") is None
    await kubectl(lab, "annotate", "slot", "worker-02", f"{ANNOTATION}-")
    await eventually(lambda: not lab.machine("worker-02").faults.never_boots, what="worker-02 healed")
    await eventually(lambda: lab.api.get("nodes", "worker-02"), timeout=10, what="worker-02 to join once healed")


async def test_the_provider_answers_over_grpc_without_the_operator(lab):
    from homecluster.provider.proto import externalgrpc_pb2 as pb
    from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc

    async with grpc.aio.insecure_channel(lab.provider_address) as channel:
        stub = pb_grpc.CloudProviderStub(channel)
        groups = await stub.NodeGroups(pb.NodeGroupsRequest(), timeout=5)
        assert [(g.id, g.minSize, g.maxSize) for g in groups.nodeGroups] == [("workers", 0, 3)]
        await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=5)
    claims = await eventually(lab.claims, what="the claim the provider created")
    assert len(claims) == 1 and claims[0]["spec"]["slotRef"] in lab.slot_names
    assert claims[0]["spec"].get("deadlineAt")  # the provider stamps the budget


async def test_a_lifecycle_startup_job_powers_a_machine_on_through_its_bmc(lab):
    """The lab's wiring end to end: Secret mounted, collection found, playbook run by ansible-runner, IPMI."""
    from homecluster.jobs import job_outcome, startup_job
    from homecluster.model.settings import Settings

    slot = next(s for s in lab.slots() if s["metadata"]["name"] == "worker-01")
    group = lab.api.get("groups.infra.homecluster.dev", "workers")
    claim = await lab.api.create(objects.claim("worker-01-test", "worker-01", labelled=True,
                                               spec={"requestedBy": "a test"}))
    job = startup_job(claim, slot, group, Settings(),
                      namespace="homecluster-system", image="lab-ignores-images")
    await lab.api.create(job)
    assert lab.machine("worker-01").power_state() == "off"

    def finished():
        current = lab.api.get("jobs", job["metadata"]["name"], "homecluster-system")
        return current if current and job_outcome(current) != "running" else None

    current = await eventually(finished, timeout=90, what="the startup Job to finish")
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in (lab.workdir / "pods").rglob("container.log"))
    assert job_outcome(current) == "succeeded", f"startup Job ended {job_outcome(current)}\n{logs}"
    assert lab.machine("worker-01").power_state() == "on"
    assert any(e.source == "ipmi" and e.action == "on" for e in lab.machine("worker-01").events)


async def test_the_demo_says_what_it_cannot_show_without_the_operator(lab):
    from homecluster_lab.demo import Demo, DemoFailed
    said: list[str] = []
    with pytest.raises(DemoFailed, match="cannot show machines powering on"):
        await Demo(lab, said.append).run()
    assert lab.claims() == []  # it asked for nothing


async def test_a_foreign_kubeconfig_is_never_overwritten(tmp_path):
    mine = tmp_path / "config"
    mine.write_text(json.dumps({"current-context": "production"}))
    with pytest.raises(LabError, match="not a lab kubeconfig"):
        async with LabCluster(LabConfig(slots=1, operator=False, kubeconfig=mine, provider_address="127.0.0.1:0",
                                        workdir=tmp_path / "lab")):
            pass
    assert json.loads(mine.read_text()) == {"current-context": "production"}


async def test_a_requested_kubeconfig_is_written_and_removed_on_exit(tmp_path):
    wanted = tmp_path / "lab.kubeconfig"
    async with LabCluster(LabConfig(slots=1, operator=False, kubeconfig=wanted, provider_address="127.0.0.1:0",
                                    workdir=tmp_path / "lab")) as lab:
        assert lab.kubeconfig_path == wanted.resolve()
        assert "homecluster-lab" in wanted.read_text()
        assert (await kubectl(lab, "get", "slots", "-o", "name")).split() == ["node.infra.homecluster.dev/worker-01"]
    assert not wanted.exists()


@pytest.fixture
async def lab_with_operator(tmp_path: Path):
    from homecluster_lab.operator_proc import unavailable_reason
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs the operator: {reason}")
    config = LabConfig(slots=2, provider_address="127.0.0.1:0", workdir=tmp_path / "lab", boot_seconds=0.5,
                       ready_taints_clear_seconds=0.2, require_operator=True,
                       settings={"job_poll_interval": "2s", "registration_wait": "20s", "readiness_gate": "20s"})
    async with LabCluster(config) as cluster:
        yield cluster


def claim_manifest(name: str, slot: str) -> str:
    return json.dumps(objects.claim(name, slot, spec={"requestedBy": "a test"}))


async def kubectl_rc(lab: LabCluster, *args: str, input: str | None = None) -> tuple[int, str, str]:
    home = lab.workdir / "kubectl-home"
    home.mkdir(exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(lab.kubeconfig_path), "--cache-dir", str(home / "cache"), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(input.encode() if input else None), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_the_operator_webhook_is_registered_and_refuses_a_second_live_claim(lab_with_operator):
    lab = lab_with_operator
    assert lab.webhook_url and lab.webhook_url.startswith("https://127.0.0.1:")
    rc, _, err = await kubectl_rc(lab, "create", "-f", "-", input=claim_manifest("first", "worker-01"))
    assert rc == 0, err
    rc, _, err = await kubectl_rc(lab, "create", "-f", "-", input=claim_manifest("second", "worker-01"))
    assert rc != 0
    assert 'admission webhook "nodeclaim-v2alpha1.kb.io" denied the request' in err
    assert 'slot "worker-01" already has the live NodeClaim "first"' in err


async def test_the_operator_can_be_killed_and_restarted_and_carries_on(lab_with_operator):
    """The hook crash tests use: lab.restart_operator(kill=True) is a SIGKILL, then a fresh `homecluster run`."""
    lab = lab_with_operator
    first_pid = lab.operator.pid
    await lab.restart_operator(kill=True)
    assert lab.operator.pid != first_pid and lab.operator.exited() is None
    rc, _, err = await kubectl_rc(lab, "create", "-f", "-", input=claim_manifest("after-restart", "worker-02"))
    assert rc == 0, err

    def ready():
        claim = lab.api.get("nodeclaims.infra.homecluster.dev", "after-restart")
        return claim if (claim.get("status") or {}).get("phase") == "ready" else None
    await eventually(ready, timeout=60, what="the claim made after the restart to become ready")
    assert lab.machine("worker-02").power_state() == "on"
