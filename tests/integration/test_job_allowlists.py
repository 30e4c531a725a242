"""A Group's author cannot choose the lifecycle Jobs' image or ServiceAccount (issue 15 item 2): the real operator
serves the Group webhook, the lab API server calls it, kubectl shows the refusal."""
from __future__ import annotations

import asyncio
import json

import pytest
from integration_pool import lab_settings

from homecluster_lab.cluster import LabCluster, LabConfig

pytestmark = [pytest.mark.lab, pytest.mark.slow]
ALLOWED = "registry.lan/homecluster-runner:1"


@pytest.fixture
async def lab(tmp_path):
    cfg = LabConfig(slots=1, driver="ipmi", boot_seconds=1.0, provider_address="127.0.0.1:0",
                    workdir=tmp_path / "lab", settings=lab_settings(), require_operator=True,
                    operator_args=(f"--job-images={ALLOWED}",))
    async with LabCluster(cfg) as lab:
        yield lab


async def kubectl(lab, tmp_path, verb, obj):
    manifest = tmp_path / "obj.json"
    manifest.write_text(json.dumps(obj))
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(lab.kubeconfig_path), verb, "-f", str(manifest),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    return proc.returncode, err.decode()


def group(name, **jobs):
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group", "metadata": {"name": name},
            "spec": {"maxSize": 1, "template": {"capacity": {"cpu": "1", "memory": "1Gi", "pods": 10}},
                     "jobs": jobs}}


@pytest.mark.parametrize("jobs,field,words", [
    ({"image": "evil.example/miner:latest"}, "spec.jobs.image", '"evil.example/miner:latest" is not one'),
    ({"serviceAccountName": "homecluster-controller"}, "spec.jobs.serviceAccountName", "operator's or the autoscaler's"),
    ({"serviceAccountName": "cluster-autoscaler"}, "spec.jobs.serviceAccountName", "operator's or the autoscaler's"),
    ({"serviceAccountName": "default"}, "spec.jobs.serviceAccountName", '"default" is not one'),
])
async def test_the_webhook_refuses_a_group_outside_the_allow_lists(lab, tmp_path, jobs, field, words):
    code, err = await kubectl(lab, tmp_path, "create", group("rogue", **jobs))
    assert code != 0
    assert f'admission webhook "group-v2alpha1.kb.io" denied the request: {field}: Forbidden: ' in err, err
    assert words in err, err
    assert lab.api.get("groups.infra.homecluster.dev", "rogue") is None
    # an UPDATE is checked too: an admitted Group cannot be turned into one afterwards
    code, err = await kubectl(lab, tmp_path, "create", group("fine", image=ALLOWED))
    assert code == 0, err
    code, err = await kubectl(lab, tmp_path, "apply", group("fine", **jobs))
    assert code != 0 and field in err, err
    assert lab.api.get("groups.infra.homecluster.dev", "fine")["spec"]["jobs"] == {"image": ALLOWED}
