"""A foreign Job holding the name a shutdown needs is met on every look until someone deletes it: the pass that
meets it again must write nothing -- no create answered AlreadyExists, no Event answered AlreadyExists -- or the
controller, which re-runs a pass that wrote at once, loops on POSTs (lifecycle.jobio.create_job reads the cache
first; Context.posted keeps an Event name posted once). The real pass against the lab API server.
"""
from __future__ import annotations

import logging

import pytest

from homecluster.lifecycle.slotpass import run_pass

pytestmark = pytest.mark.lab
NS = "homecluster-system"
OPERATOR = "homecluster-operator"


async def foreign_job(env, name: str) -> None:
    """A Job under the name a shutdown needs, owned by nothing of ours (a leftover, or planted)."""
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
                          "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                         "containers": [{"name": "x", "image": "evil:1"}]}}}})


async def quiet(env):
    """Passes on unchanged objects after the first meeting: none writes, each asks for a wake."""
    env.lab.audit.clear()
    for _ in range(3):
        await env.refill()
        result = await run_pass(env.ctx, "worker-01")
        assert not result.wrote and result.wake is not None, (result, [
            (e.verb, e.resource, e.subresource, e.name, e.code) for e in env.lab.audit.writes()])
    assert [(e.verb, e.resource, e.code) for e in env.lab.audit.writes() if OPERATOR in e.user_agent] == []


async def test_a_reversal_that_meets_a_foreign_job_waits_without_writing(pool, caplog):
    env = pool
    await env.ready_claim()
    await foreign_job(env, "c1-shutdown-1")
    await env.lab.delete("nodeclaims.infra.homecluster.dev", "c1")
    with caplog.at_level(logging.WARNING, logger="homecluster"):
        await env.step()
        assert "the shutdown waits: Job homecluster-system/c1-shutdown-1 already exists" in env.claim_status()["message"]
        await quiet(env)
    # said once, in the claim's status and in the log; the passes that look again say nothing more
    said = [r for r in caplog.records if "the shutdown waits" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]


async def test_an_unwanted_machine_that_meets_a_foreign_job_waits_without_writing(pool):
    env = pool
    await foreign_job(env, "worker-01-unwanted-1")
    await env.node()
    await env.step()
    assert [e["reason"] for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == "worker-01" and e["type"] == "Warning"] == ["ForeignJob"]
    await quiet(env)
