"""A slot being removed whose shutdown Job cannot be built (homecluster.jobs.JobSpecError: a Secret in a namespace
no Job pod can mount, a Job image the operator does not run; edited in Git after the boot) says so on the slot,
once per distinct error, and waits on a wake rather than a hot loop or a failed pass (lifecycle.jobspec; issue
25); a failed boot whose forced shutdown cannot be built is recorded failed without it. The real pass against
the lab API server, the fake clock.
"""
from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from homecluster.lifecycle.jobspec import REASON
from homecluster.lifecycle.slotpass import run_pass

pytestmark = pytest.mark.lab
SLOTS = "nodes.infra.homecluster.dev"
CLAIMS = "nodeclaims.infra.homecluster.dev"
NS = "homecluster-system"
ELSEWHERE = ('slot "worker-01": spec.power.ipmi.credentialsSecretRef.namespace is "vault", but lifecycle Jobs run '
             f'in namespace "{NS}" and a pod can only mount a Secret of its own namespace; put the Secret '
             f'"worker-01-bmc" in "{NS}" and set spec.power.ipmi.credentialsSecretRef.namespace to "{NS}" or leave it '
             "empty")


def said(env) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["reason"] == REASON and e["involvedObject"]["name"] == "worker-01"]


async def secret_in(env, namespace: str | None) -> None:
    """The slot's BMC Secret reference edited (Git, a person): in another namespace, no Job pod can mount it."""
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"power": {"ipmi": {"credentialsSecretRef": {
        "namespace": namespace}}}}})


async def settled(env):
    """Two passes on unchanged objects: the second must write nothing and ask for a wake, never a hot loop."""
    await env.step()
    await env.refill()
    again = await run_pass(env.ctx, "worker-01")
    assert not again.wrote, "a pass that meets the same error wrote again (it would be re-run at once, forever)"
    assert again.wake is not None and again.wake <= env.clock.now + env.ctx.settings.job_poll_interval, again
    return again


async def test_a_removed_slot_whose_claims_shutdown_cannot_be_built_says_so_once_and_waits(pool, caplog):
    env = pool
    await env.ready_claim()
    await secret_in(env, "vault")
    await env.lab.delete(SLOTS, "worker-01")
    with caplog.at_level(logging.WARNING, logger="homecluster"):
        await settled(env)
    [warned] = said(env)
    # the log says it too, once, on a line that names the slot (its JSON field, and the text's prefix)
    [logged] = [r for r in caplog.records if "cannot build the shutdown Job of claim" in r.getMessage()]
    assert getattr(logged, "slot", None) == "worker-01", vars(logged)
    poll = int(env.ctx.settings.job_poll_interval.total_seconds())
    assert warned["type"] == "Warning"
    assert warned["message"] == (
        f'slot "worker-01": cannot build the shutdown Job of claim "c1": {ELSEWHERE}. The machine is not powered off '
        f"until this is fixed (the operator tries again every {poll} s); the slot's removal waits for it. To let "
        "the slot go with its machine possibly on, remove the finalizer infra.homecluster.dev/slot-release from it "
        "by hand")
    assert env.claim_status()["message"] == f"the shutdown waits: cannot build the shutdown Job: {ELSEWHERE}"
    assert env.get(SLOTS, "worker-01") is not None
    assert not [j for j in env.jobs() if "shutdown" in j["metadata"]["name"]]
    env.clock.advance(seconds=poll)
    await settled(env)  # the wake came: tried again, the same error, nothing said again
    assert len(said(env)) == 1
    await secret_in(env, None)  # fixed: the removal goes on
    await env.step()
    assert env.lab.get("jobs.batch", "c1-shutdown-1", NS) is not None
    await env.node(ready=False)
    await env.job_done("c1-shutdown-1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None and env.get(SLOTS, "worker-01") is None


async def test_an_unwanted_machine_of_a_removed_slot_says_each_distinct_error_once(pool):
    env = pool
    await secret_in(env, "vault")
    await env.node()  # on, no claim: its shutdown is the slot's own (rows 2 and 11), and it cannot be built
    await settled(env)
    [before] = [e["message"] for e in said(env)]
    assert before.startswith(f'slot "worker-01": cannot build the shutdown Job of the unwanted machine: {ELSEWHERE}.')
    assert "removal" not in before
    await env.lab.delete(SLOTS, "worker-01")
    await settled(env)  # the same error, now holding a removal: said again, saying so
    assert len(said(env)) == 2
    await secret_in(env, None)
    await env.lab.patch("groups.infra.homecluster.dev", "workers", {"spec": {"jobs": {"image": "evil:1"}}})
    await settled(env)  # another error: said too, once
    texts = [e["message"] for e in said(env)]
    assert len(texts) == 3 and sum('spec.jobs.image: image "evil:1" is not one the operator runs' in t
                                   for t in texts) == 1, texts
    assert env.get(SLOTS, "worker-01") is not None and env.jobs() == []
    await env.lab.patch("groups.infra.homecluster.dev", "workers", {"spec": {"jobs": None}})
    await env.step()
    [job] = [j["metadata"]["name"] for j in env.jobs()]  # fixed: the shutdown fires, the removal goes on
    await env.node(ready=False)
    await env.job_done(job)
    env.clock.advance(seconds=6)
    await env.step()
    assert env.get(SLOTS, "worker-01") is None


async def test_a_failed_boot_whose_forced_shutdown_cannot_be_built_is_recorded_failed_without_it(pool):
    """lifecycle.deadlines.fail_boot: as with a foreign Job at the shutdown's name, the failure lands and says why."""
    env = pool
    await env.claim("c1", deadline=timedelta(seconds=30))
    await env.step()
    await secret_in(env, "vault")
    env.clock.advance(seconds=31)
    await env.step()
    await env.refill()
    assert not (await run_pass(env.ctx, "worker-01")).wrote
    status = env.claim_status()
    assert (status["phase"], status["reason"], status["message"]) == (
        "failed", "DeadlineExceeded", "spec.deadlineAt passed before the machine was ready; no forced shutdown was "
        f"fired: cannot build the shutdown Job: {ELSEWHERE}")
    [warned] = [e["message"] for e in said(env)]
    assert warned.startswith(f'slot "worker-01": cannot build the shutdown Job of claim "c1": {ELSEWHERE}.'), warned
    assert not [j for j in env.jobs() if "shutdown" in j["metadata"]["name"]]
