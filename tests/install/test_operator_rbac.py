"""The real operator, run against the lab, makes only requests config/default's RBAC allows.

The lab's API server authorises everything but logs every request; `homecluster run` is started as a
subprocess (as the cluster would run it), a claim goes from pending to booting (its startup Job is
created), and the operator's requests are compared with the rules bound to homecluster-controller.
The fuller comparison belongs to the integration suite, through the same hook
(rbac_audit.check_manager_rbac_against_audit).
"""
from __future__ import annotations

import asyncio
import signal
import sys

import pytest
import yaml
from support import objects
from support.waits import until

from install_helpers import CONFIG
from rbac_audit import check_manager_rbac_against_audit

NS = "homecluster-system"


def _operator_available() -> str | None:
    try:
        import homecluster.operator.main  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means it cannot run
        return f"homecluster run is not available: {exc}"
    return None


@pytest.mark.lab
@pytest.mark.slow
@pytest.mark.skipif(_operator_available() is not None, reason=str(_operator_available()))
async def test_operator_requests_in_the_lab_are_allowed(lab_api, tmp_path):
    await lab_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for name in ("infra_v2alpha1_group.yaml", "infra_v2alpha1_node_ipmi.yaml"):
        for doc in yaml.safe_load_all((CONFIG / "samples" / name).read_text()):
            await lab_api.create(doc)
    log_path = tmp_path / "operator.log"
    with open(log_path, "wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "homecluster", "run", "--kubeconfig", str(lab_api.kubeconfig_path),
            "--namespace", NS, "--no-webhook", "--provider-insecure", "--provider-address", "127.0.0.1:0",
            stdout=log, stderr=log)
    try:
        await lab_api.create(objects.claim("worker-01-rbac", "worker-01"))

        def booting() -> bool:
            assert proc.returncode is None, log_path.read_text()[-3000:]  # the operator died: its log
            claim = lab_api.get("nodeclaims.infra.homecluster.dev", "worker-01-rbac") or {}
            return (claim.get("status") or {}).get("phase") == "booting"

        # scaled by the load (a fixed 30 s ran out once at load 12: the operator's start is its imports)
        await until(booting, "the claim to reach booting", 30, detail=lambda: log_path.read_text()[-3000:])
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
    assert lab_api.get("jobs.batch", "worker-01-rbac-startup", NS) is not None
    refused = check_manager_rbac_against_audit(lab_api.audit.entries)
    assert [str(r) for r in refused] == []
