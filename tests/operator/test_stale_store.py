"""A store held behind the server (an event that never came): a refused conditional write brings it up to date.

The operator writes claims and slots conditional on the resourceVersion it holds. When the watch event of a
change is lost, every retry used to send the same stale resourceVersion and get 409 again, for good (a claim
that was never released, on the real control plane). Now the refusal makes the operator read the object and
store it, and the next pass writes. The read is a list of that one name: the operator's role grants list
and watch on our kinds, not get, so a GET would be refused on a real cluster (config/rbac/role.yaml).
"""
from __future__ import annotations

import pytest

from homecluster.kube.client import Conflict, NotFound
from homecluster.lifecycle.slotpass import run_pass

CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"


def _rv(env, resource: str, name: str) -> str:
    return env.get(resource, name)["metadata"]["resourceVersion"]


def _reads(env, plural: str) -> list:
    """The operator's reads of one kind after the conflict: only what its role grants (list, watch)."""
    reads = [e for e in env.lab.audit.select(plural, user_agent="homecluster-operator") if not e.is_write]
    assert all(e.verb in ("list", "watch") for e in reads), [(e.verb, e.name) for e in reads]
    return reads


async def test_a_claim_write_refused_for_a_stale_copy_is_retried_from_the_servers_copy(pool):
    env = pool
    await env.claim()
    await env.refill()
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"labels": {"changed": "by-someone"}}})  # no event reaches the store
    with pytest.raises(Conflict):
        await run_pass(env.ctx, "worker-01")
    assert env.ctx.store.claim("c1")["metadata"]["resourceVersion"] == _rv(env, CLAIMS, "c1")
    assert env.ctx.store.claim("c1")["metadata"]["labels"]["changed"] == "by-someone"
    assert any(e.field_selector == "metadata.name=c1" for e in _reads(env, "nodeclaims"))
    await run_pass(env.ctx, "worker-01")  # no refill: what the refusal taught the store is enough
    assert env.claim_status()["attempt"] == 1 and env.claim_status()["phase"] == "pending"


async def test_a_slot_write_refused_for_a_stale_copy_is_retried_from_the_servers_copy(pool):
    env = pool
    await env.refill()
    await env.lab.patch(SLOTS, "worker-01", {"metadata": {"labels": {"changed": "by-gitops"}}})
    with pytest.raises(Conflict):
        await run_pass(env.ctx, "worker-01")
    assert env.ctx.store.slot("worker-01")["metadata"]["resourceVersion"] == _rv(env, SLOTS, "worker-01")
    assert any(e.field_selector == "metadata.name=worker-01" for e in _reads(env, "nodes"))
    await run_pass(env.ctx, "worker-01")
    assert env.slot_status()  # the pass's status write landed


async def test_a_failed_re_read_is_logged_and_the_conflict_still_reaches_the_worker(pool, caplog):
    env = pool
    await env.claim()
    await env.refill()
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"labels": {"changed": "by-someone"}}})
    env.lab.faults.fail_next("nodeclaims.infra.homecluster.dev", 1, 500, verbs=("list",))
    with pytest.raises(Conflict):
        await run_pass(env.ctx, "worker-01")
    assert "could not read nodeclaims c1 afresh after a conflict" in caplog.text
    assert env.ctx.store.claim("c1")["metadata"]["resourceVersion"] != _rv(env, CLAIMS, "c1")  # nothing learnt


async def test_a_re_read_whose_connection_drops_is_logged_and_the_conflict_still_reaches_the_worker(pool, caplog):
    # a dropped connection is aiohttp's ServerDisconnectedError: a ClientError that is no OSError, so a re-read
    # that caught only OSError raised it in place of the Conflict. aiohttp sends an idempotent request (GET, PUT,
    # DELETE) again once when the connection drops: two drops reach the caller
    env = pool
    await env.claim()
    await env.refill()
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"labels": {"changed": "by-someone"}}})
    env.lab.faults.fail_next("nodeclaims.infra.homecluster.dev", 2, "disconnect", verbs=("list",))
    with pytest.raises(Conflict):
        await run_pass(env.ctx, "worker-01")
    said = [r.getMessage() for r in caplog.records if "afresh" in r.getMessage()]
    assert said == ["could not read nodeclaims c1 afresh after a conflict (Server disconnected); the watch will "
                    "bring it"], said
    assert env.ctx.store.claim("c1")["metadata"]["resourceVersion"] != _rv(env, CLAIMS, "c1")  # nothing learnt


async def test_a_re_read_after_a_404_that_fails_says_so_and_the_404_still_reaches_the_worker(pool, caplog):
    # the claim was deleted and no event said so: the pass's write is answered 404, the re-read of its name fails
    env = pool
    await env.claim()
    await env.refill()
    await env.lab.delete(CLAIMS, "c1")  # no finalizer of ours yet: gone at once, unseen by the store
    env.lab.faults.fail_next("nodeclaims.infra.homecluster.dev", 1, 500, verbs=("list",))
    with pytest.raises(NotFound):
        await run_pass(env.ctx, "worker-01")
    said = [r.getMessage() for r in caplog.records if "afresh" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("could not read nodeclaims c1 afresh after a 404 (") \
        and said[0].endswith("); the watch will bring it"), said
