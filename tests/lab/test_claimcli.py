"""`homecluster claim`: a hand-made claim with its boot budget stamped, against the lab API server."""
from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta

import pytest
import yaml

from homecluster.model.timestamps import parse_time

GROUP = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group", "metadata": {"name": "workers"},
         "spec": {"maxSize": 3, "maxNodeProvisionTime": "20m",
                  "template": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}}
SLOT = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "metadata": {"name": "worker-01"},
        "spec": {"groupRef": "workers", "power": {"method": "wol", "wol": {"macAddress": "52:54:00:00:00:01"},
                 "ssh": {"host": "127.0.0.1", "credentialsSecretRef": {"name": "worker-01-ssh"}}}}}


def deployment(args: list[str], env: list[dict]) -> dict:
    """The operator's Deployment as config/manager/manager.yaml writes it, with these setting flags and env."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "homecluster-controller", "namespace": "homecluster-system"},
            "spec": {"selector": {"matchLabels": {"app": "homecluster"}},
                     "template": {"metadata": {"labels": {"app": "homecluster"}},
                                  "spec": {"containers": [
                                      {"name": "sidecar", "image": "x", "args": ["--slack=9h"]},
                                      {"name": "manager", "image": "homecluster-controller",
                                       "args": ["--metrics-address=:8080", *args], "env": env}]}}}}


async def _homecluster(*args: str, kubeconfig, verb: str = "claim") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", verb, *args, "--kubeconfig", str(kubeconfig),
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
    # no operator Deployment in this cluster: the user is told the defaults are used, and why
    assert 'deployment "homecluster-controller" in namespace "homecluster-system" not found' in err
    assert "default settings are used" in err


async def test_settings_come_from_the_operators_deployment(lab_api):
    """The boot floor is computed from the flags and env the operator runs with, not repeated by the user."""
    await lab_api.create(GROUP)
    await lab_api.create(SLOT)
    await lab_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "homecluster-system"}})
    await lab_api.create(deployment(["--startup-job-timeout=15m", "--registration-wait", "2m"],
                                    [{"name": "HOMECLUSTER_SLACK", "value": "3m"},
                                     {"name": "HOMECLUSTER_READINESS_GATE", "valueFrom": {
                                         "configMapKeyRef": {"name": "cfg", "key": "gate"}}}]))
    rc, out, err = await _homecluster("worker-01", "--dry-run", kubeconfig=lab_api.kubeconfig_path)
    assert rc == 0, err
    body = yaml.safe_load(out)
    # 15m + 30s + 2m + 4m (the gate's default: its env is not literal) + 10s + 3m = 24m40s, above the Group's 20m
    budget = parse_time(body["spec"]["deadlineAt"]) - parse_time(body["spec"]["requestedAt"])
    assert budget == timedelta(minutes=24, seconds=40)
    assert 'settings from deployment "homecluster-controller" in namespace "homecluster-system"' in err
    assert "HOMECLUSTER_READINESS_GATE" in err and "valueFrom" in err
    # --setting still overrides what the Deployment says
    rc, out, err = await _homecluster("worker-01", "--dry-run", "--setting", "startup_job_timeout=5m",
                                      kubeconfig=lab_api.kubeconfig_path)
    budget = parse_time(yaml.safe_load(out)["spec"]["deadlineAt"]) - parse_time(yaml.safe_load(out)["spec"]["requestedAt"])
    assert budget == timedelta(minutes=20)  # floor 14m40s: the Group's 20m wins


async def test_a_bad_value_in_the_deployment_names_the_setting(lab_api):
    await lab_api.create(GROUP)
    await lab_api.create(SLOT)
    await lab_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "homecluster-system"}})
    await lab_api.create(deployment(["--slack=soon"], []))
    rc, out, err = await _homecluster("worker-01", "--dry-run", kubeconfig=lab_api.kubeconfig_path)
    assert rc == 2 and "setting slack" in err, err


async def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "homecluster", "--version",
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    assert proc.returncode == 0 and out.decode() == f"homecluster {version('homecluster')}\n"


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
    assert 'slot "nope" not found' in err and "homecluster status" in err


@pytest.mark.parametrize("verb", ["status", "release", "claim"])
async def test_an_unusable_kubeconfig_or_server_is_one_clear_line(verb, tmp_path):
    args = () if verb == "status" else ("worker-01",)
    rc, out, err = await _homecluster(*args, kubeconfig=tmp_path / "missing", verb=verb)
    assert rc == 2 and err == f"error: no usable kubeconfig: {tmp_path / 'missing'}: no such file: pass " \
                              "--kubeconfig or set KUBECONFIG\n", err
    dead = tmp_path / "dead"
    dead.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {}}]}))
    rc, out, err = await _homecluster(*args, kubeconfig=dead, verb=verb)
    assert rc == 4 and err.startswith("error: cannot reach the API server: ") and err.count("\n") == 1, err
