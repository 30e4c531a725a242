"""One machine, one slot, refused at admission (issue 23 item 1): the real operator serves the slot webhook
(node-v2alpha1.kb.io), the lab API server calls it, kubectl shows the refusal.

The lab's slot worker-01 declares nothing: it finds its machine's Node by the name worker-01. That Node
carries k3s's providerID `k3s://worker-01` (played here). A second slot declaring that providerID finds the
same Node: refused at CREATE, and an admitted slot cannot be turned into one by an UPDATE.
"""
from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest
from integration_pool import SETTINGS, wait_for

from homecluster.model.timestamps import format_time
from homecluster_lab.cluster import LabCluster, LabConfig

pytestmark = [pytest.mark.lab, pytest.mark.slow]
SLOTS = "nodes.infra.homecluster.dev"
HOOK = 'admission webhook "node-v2alpha1.kb.io" denied the request'


@pytest.fixture
async def lab(tmp_path):
    cfg = LabConfig(slots=1, driver="ipmi", boot_seconds=1.0, provider_address="127.0.0.1:0",
                    workdir=tmp_path / "lab", settings=dict(SETTINGS), require_operator=True)
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
    await lab.api.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-01"},
                          "spec": {"providerID": "k3s://worker-01"}})
    await lab.api.patch("nodes", "worker-01", {"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "KubeletNotReady",
        "lastHeartbeatTime": format_time(datetime.now(timezone.utc))}]}}, subresource="status")
    rogue = slot("a-later", providerID="k3s://worker-01")

    async def refused_on_a_dry_run() -> bool:  # the operator's cache has seen the Node once this is refused
        code, err = await kubectl(lab, tmp_path, "create", "--dry-run=server", obj=rogue)
        return code != 0 and HOOK in err

    await wait_for(refused_on_a_dry_run, 30, "the slot webhook to refuse a slot finding worker-01's Node")
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
