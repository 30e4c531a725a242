"""One machine, one slot (issue 23 item 1), with the real operator (`homecluster run`, its webhook and its gRPC
provider), the lab API server, simulated machines over real IPMI and the real playbooks.

The lab's slot worker-01 declares nothing: it finds its machine's Node by the name worker-01. That Node
carries k3s's providerID `k3s://worker-01` (played here). A second slot declaring that providerID finds the
same Node. Written while the Node exists, it is refused at admission (CREATE, and an UPDATE that would turn
an admitted slot into one); written before the Node registers, it is refused by the controller once the
Node appears: it fires no Job while the first slot's claim boots and runs on the machine.
"""
from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest
from integration_pool import lab_settings
from support import objects
from support.waits import until
from provider_client import ProviderClient, node

from homecluster.model.timestamps import format_time
from homecluster_lab.cluster import LabCluster, LabConfig

pytestmark = [pytest.mark.lab, pytest.mark.slow]
SLOTS = "nodes.infra.homecluster.dev"
HOOK = 'admission webhook "node-v2alpha1.kb.io" denied the request'


@pytest.fixture
async def lab(tmp_path):
    cfg = LabConfig(slots=1, driver="ipmi", boot_seconds=1.0, provider_address="127.0.0.1:0",
                    workdir=tmp_path / "lab", require_operator=True,
                    # the boot runs the real playbook: its Job timeouts stretched to the machine's load
                    settings=lab_settings())
    async with LabCluster(cfg) as lab:
        yield lab


async def kubectl(lab, tmp_path, *args: str, obj: dict) -> tuple[int, str]:
    manifest = tmp_path / "obj.json"
    manifest.write_text(json.dumps(obj))
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(lab.kubeconfig_path), *args, "-f", str(manifest),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    return proc.returncode, err.decode()


def slot(name: str, **spec: str) -> dict:
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "metadata": {"name": name},
            "spec": {"groupRef": "workers", "power": {"method": "ipmi", "ipmi": {
                "address": "127.0.0.1", "credentialsSecretRef": {"name": f"{name}-bmc"}}}, **spec}}


async def test_a_slot_finding_another_slots_node_is_refused_at_create_and_update(lab, tmp_path):
    # the machine's Node as k3s registers it, off (NotReady): nothing is shut down, the Node is simply there
    await lab.api.create(objects.node("worker-01", "k3s://worker-01"))
    await lab.api.patch("nodes", "worker-01", {"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "KubeletNotReady",
        "lastHeartbeatTime": format_time(datetime.now(timezone.utc))}]}}, subresource="status")
    rogue = slot("a-later", providerID="k3s://worker-01")

    async def refused_on_a_dry_run() -> bool:  # the operator's cache has seen the Node once this is refused
        code, err = await kubectl(lab, tmp_path, "create", "--dry-run=server", obj=rogue)
        return code != 0 and HOOK in err

    await until(refused_on_a_dry_run, "the slot webhook to refuse a slot finding worker-01's Node", 30)
    code, err = await kubectl(lab, tmp_path, "create", obj=rogue)
    assert code != 0 and f"{HOOK}: spec.providerID: Forbidden: " in err, err
    assert 'Node "worker-01"' in err and 'slot "worker-01"' in err, err
    assert lab.api.get(SLOTS, "a-later") is None
    # the same providerID as the existing slot declares: refused by declaration, no Node needed
    code, err = await kubectl(lab, tmp_path, "create", obj=slot("copy", providerID="homecluster://worker-01"))
    assert code != 0 and HOOK in err and "already declared by" in err, err
    # an admitted slot cannot be turned into a second one afterwards; an update that keeps its machine is fine
    code, err = await kubectl(lab, tmp_path, "create", obj=slot("fine", providerID="k3s://fine"))
    assert code == 0, err
    code, err = await kubectl(lab, tmp_path, "apply", obj=slot("fine", providerID="k3s://worker-01"))
    assert code != 0 and HOOK in err, err
    assert lab.api.get(SLOTS, "fine")["spec"]["providerID"] == "k3s://fine"
    code, err = await kubectl(lab, tmp_path, "apply", obj={**slot("fine", providerID="k3s://fine"),
                                                            "metadata": {"name": "fine", "labels": {"x": "y"}}})
    assert code == 0, err


async def test_a_slot_written_before_the_node_registered_never_acts_on_the_first_slots_machine(lab, tmp_path):
    # B is admitted (no Node finds it yet), in a Group of its own so the provider's answer names the winner
    await lab.api.create({"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group",
                          "metadata": {"name": "other"}, "spec": {"maxSize": 1, "template": {
                              "capacity": {"cpu": "1", "memory": "1Gi", "pods": 10}}}})
    code, err = await kubectl(lab, tmp_path, "create", obj={**slot("a-later", providerID="k3s://worker-01"),
                                                            "spec": {**slot("a-later")["spec"], "groupRef": "other",
                                                                     "providerID": "k3s://worker-01"}})
    assert code == 0, err
    # k3s registered worker-01 once (off now); the lab's kubelet keeps that providerID when the machine boots
    await lab.api.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-01"},
                          "spec": {"providerID": "k3s://worker-01"}})
    now = datetime.now(timezone.utc)
    await lab.api.create(objects.claim("c1", requested_at=format_time(now), labelled=True,
                                       deadline_at=format_time(now + timedelta(minutes=5))))

    def claim_phase() -> str:
        return ((lab.api.get("nodeclaims.infra.homecluster.dev", "c1") or {}).get("status") or {}).get("phase", "")

    await until(lambda: claim_phase() == "ready",
                lambda: f"c1 ready (now {lab.api.get('nodeclaims.infra.homecluster.dev', 'c1').get('status')})", 180)
    assert lab.api.get("nodes", "worker-01")["spec"]["providerID"] == "k3s://worker-01"

    def conflict() -> dict | None:
        status = (lab.api.get(SLOTS, "a-later") or {}).get("status") or {}
        return next((c for c in status.get("conditions") or [] if c["reason"] == "Conflict"), None)

    def jobs_of_b() -> list[str]:
        return [j["metadata"]["name"] for j in lab.api.list("jobs.batch", lab.config.namespace)
                if j["metadata"]["name"].startswith("a-later")]

    await until(lambda: conflict() or jobs_of_b(), "a-later's Conflict condition (or a Job of a-later)", 30)
    assert jobs_of_b() == [] and conflict() is not None  # before the fix: ['a-later-shutdown-1']
    async with ProviderClient(lab.provider_address) as ca:
        assert await ca.group_for(node("k3s://worker-01", "worker-01")) == "workers"
    # the machine stays the first slot's: on, its claim ready, the Node never cordoned; B fired nothing
    assert claim_phase() == "ready" and lab.machine("worker-01").power_state() == "on"
    assert not lab.api.get("nodes", "worker-01")["spec"].get("unschedulable")
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in lab.api.list("events", "default")}
    assert {("a-later", "NodeConflict"), ("worker-01", "NodeConflict")} <= reasons
