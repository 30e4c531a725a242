"""`homecluster claim`: a hand-made claim with its boot budget stamped, against the lab API server."""
from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta

import yaml

from homecluster.model.timestamps import parse_time

GROUP = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group", "metadata": {"name": "workers"},
         "spec": {"maxSize": 3, "maxNodeProvisionTime": "20m",
                  "template": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}}
SLOT = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "metadata": {"name": "worker-01"},
        "spec": {"groupRef": "workers", "power": {"method": "wol", "wol": {"macAddress": "52:54:00:00:00:01"},
                 "ssh": {"host": "127.0.0.1", "credentialsSecretRef": {"name": "worker-01-ssh"}}}}}


async def _homecluster(*args: str, kubeconfig) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", "claim", *args, "--kubeconfig", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out.decode(), err.decode()


async def test_claim_is_created_with_the_groups_budget(lab_api):
    await lab_api.create(GROUP)
    await lab_api.create(SLOT)
    rc, out, err = await _homecluster("worker-01", "--requested-by", "alice", kubeconfig=lab_api.kubeconfig_path)
    assert rc == 0, err
    name = out.split('"')[1]
    claim = lab_api.get("nodeclaims.infra.homecluster.dev", name)
    spec = claim["spec"]
    assert spec["slotRef"] == "worker-01" and spec["requestedBy"] == "alice"
    # the Group's 20m is above the 12m10s floor, so it is the budget
    assert parse_time(spec["deadlineAt"]) - parse_time(spec["requestedAt"]) == timedelta(minutes=20)
    assert "attempt" not in (claim.get("status") or {})


async def test_dry_run_prints_an_applicable_claim(lab_api):
    await lab_api.create(GROUP)
    await lab_api.create(SLOT)
    rc, out, err = await _homecluster("worker-01", "--dry-run", "--setting", "startup_job_timeout=15m",
                                      kubeconfig=lab_api.kubeconfig_path)
    assert rc == 0, err
    body = yaml.safe_load(out)
    # a longer startup timeout raises the floor above the Group's 20m: 15m + 30s + 90s + 4m + 10s + 1m
    budget = parse_time(body["spec"]["deadlineAt"]) - parse_time(body["spec"]["requestedAt"])
    assert budget == timedelta(minutes=22, seconds=10)
    assert lab_api.get("nodeclaims.infra.homecluster.dev", body["metadata"]["name"]) is None


async def test_unknown_slot_names_the_fix(lab_api):
    rc, out, err = await _homecluster("nope", kubeconfig=lab_api.kubeconfig_path)
    assert rc == 1
    assert 'slot "nope" not found' in err and "kubectl get slots" in err
