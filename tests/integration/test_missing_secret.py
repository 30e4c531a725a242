"""A slot whose credentials Secret is missing fails its attempt at once, with the kubelet's words on the claim.

The whole lab: the real operator process, the Job executor whose kubelet reports a missing Secret volume as
a real one does (the container waits in ContainerCreating, a Warning FailedMount Event on the pod says
why). Before the fix the claim stayed booting with no hint until StartupJobTimedOut (20 s here, 5 minutes
by default), then forced-shutdown Jobs hung the same way.
"""
from __future__ import annotations

import time

import pytest
from support.waits import until

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"


async def test_a_missing_secret_fails_the_attempt_fast_and_says_so(pool):
    slot = pool.api.get(SLOTS, "worker-01")
    secret = slot["spec"]["power"]["ipmi"]["credentialsSecretRef"]["name"]
    namespace = pool.lab.config.namespace
    await pool.api.delete("secrets", secret, namespace=namespace)
    started = time.monotonic()
    await pool.claim("c1")
    status = await pool.phase("c1", "failed", timeout=40)
    took = time.monotonic() - started
    assert status["reason"] == "StartupPodBlocked", status
    assert f'secret "{secret}" not found' in status["message"] and "FailedMount" in status["message"], status
    assert took < 15, f"failed after {took:.1f}s; the startup Job timeout is {pool.lab.config.settings['startup_job_timeout']}"
    (condition,) = [c for c in status["conditions"] if c["type"] == "Ready"]
    assert (condition["status"], condition["reason"]) == ("False", "StartupPodBlocked")
    assert secret in condition["message"]
    await until(lambda: [e for e in pool.api.list("events", "default")
                         if e["involvedObject"]["name"] == "c1" and e["reason"] == "StartupPodBlocked"
                         and secret in e["message"]], "the claim's StartupPodBlocked Event", 10)
    # the startup Job is gone, and no forced shutdown mounts the same missing Secret
    await until(lambda: not [j for j in pool.jobs() if j["metadata"]["name"] == "c1-startup"],
                "the blocked startup Job deleted", 10)
    assert "shutdownAttempts" not in status, status
