"""A store held behind the server (an event that never came): a refused conditional write brings it up to date.

The operator writes claims and slots conditional on the resourceVersion it holds. When the watch event of a
change is lost, every retry used to send the same stale resourceVersion and get 409 again, for good (a claim
that was never released, on the real control plane). Now the refusal makes the operator read the object and
store it, and the next pass writes.
"""
from __future__ import annotations

import pytest

from homecluster.kube.client import Conflict
from homecluster.lifecycle.slotpass import run_pass

CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"


def _rv(env, resource: str, name: str) -> str:
    return env.get(resource, name)["metadata"]["resourceVersion"]


async def test_a_claim_write_refused_for_a_stale_copy_is_retried_from_the_servers_copy(pool):
    env = pool
    await env.claim()
    await env.refill()
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"labels": {"changed": "by-someone"}}})  # no event reaches the store
    with pytest.raises(Conflict):
        await run_pass(env.ctx, "worker-01")
    assert env.ctx.store.claim("c1")["metadata"]["resourceVersion"] == _rv(env, CLAIMS, "c1")
    assert env.ctx.store.claim("c1")["metadata"]["labels"]["changed"] == "by-someone"
    await run_pass(env.ctx, "worker-01")  # no refill: what the refusal taught the store is enough
    assert env.claim_status()["attempt"] == 1 and env.claim_status()["phase"] == "pending"


async def test_a_slot_write_refused_for_a_stale_copy_is_retried_from_the_servers_copy(pool):
    env = pool
    await env.refill()
    await env.lab.patch(SLOTS, "worker-01", {"metadata": {"labels": {"changed": "by-gitops"}}})
    with pytest.raises(Conflict):
        await run_pass(env.ctx, "worker-01")
    assert env.ctx.store.slot("worker-01")["metadata"]["resourceVersion"] == _rv(env, SLOTS, "worker-01")
    await run_pass(env.ctx, "worker-01")
    assert env.slot_status()  # the pass's status write landed
