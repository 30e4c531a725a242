"""A Job deleted while no watch covered it is not held in the store for good (issue 23, chaos seed 7000).

Seed 7000 left a claim Terminating for the whole 240 s of calm. The operator had just restarted: it filled its
store by its own list, then, before kopf's watch had made its first list, its first pass deleted the claim's
running startup Job (Foreground, as the reversal does) and the Job went. The DELETED event fell between the
two lists, so no watch ever brought it: the store kept the Job as running, and every pass sent a DELETE that
was answered 404 (said nowhere) and waited for that Job to end. The forced shutdown was never fired and the
finalizer never released. The same gap opens whenever kopf lists again (a watch answered 410 Gone).

Here no watch runs at all, so no event reaches the store: the real controller (its workers and its timers)
over the lab API server must see the Job gone by itself. The Job monitor poll lists the lifecycle Jobs every
job_poll_interval and drops from the store every Job that the list shows gone.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from support.pool import NS, SHORT, Clock, Env
from homecluster.kube.client import KubeClient
from homecluster.kube.connection import Connection
from homecluster.kube.store import Store
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.jobio import delete_job
from homecluster.model.objects import marked_for_deletion
from homecluster.operator.controller import Controller
from support.waits import until

pytestmark = pytest.mark.lab

CLAIMS = "nodeclaims.infra.homecluster.dev"
POLL = dataclasses.replace(SHORT, job_poll_interval=timedelta(seconds=1))


@pytest.fixture
async def polled(lab):
    """The conftest's Env with a 1 s job_poll_interval, so the controller's own timers run the poll."""
    client = KubeClient(Connection(server=lab.url))
    ctx = Context(client=client, store=Store(), settings=POLL, namespace=NS, job_image="runner:test", clock=Clock())
    yield Env(lab, ctx, Controller(ctx, workers=1), ctx.clock)
    await client.close()


def _job(env: Env, name: str) -> dict | None:
    return env.get("jobs.batch", name, NS)


def _deletes(env: Env) -> str:
    codes = [e.code for e in env.lab.audit.select("jobs", verbs=["delete"], user_agent="homecluster-operator")
             if e.name == "c1-startup"]
    return f"{len(codes)} DELETE of c1-startup answered {sorted(set(codes))}"


def _held(env: Env) -> list[str]:
    return sorted(j["metadata"]["name"] for j in env.ctx.store.jobs_of_slot("worker-01"))


async def test_a_startup_job_deleted_unseen_does_not_hold_the_reversal_for_good(polled):
    env = polled
    await env.booting()
    assert _job(env, "c1-startup") is not None
    await env.lab.delete(CLAIMS, "c1")  # seed 7000's claim-delete, while the operator was down
    await env.refill()  # the restarted operator's own list: the claim marked for deletion, its Job running
    await env.controller.start()
    try:
        await until(lambda: _job(env, "c1-startup") is None, "the reversal to delete the running startup Job")
        await until(lambda: _job(env, "c1-shutdown-1"), "the forced shutdown Job of c1, fired once the startup "
                    "Job is gone", timeout=15, detail=lambda: f"{_deletes(env)}; the store holds {_held(env)}")
        await until(lambda: env.claim_status().get("shutdownAttempts") == 1, "the shutdown counted on c1")
        assert _deletes(env) == "1 DELETE of c1-startup answered [200]"  # its answer stored: no second one
        await env.job_done("c1-shutdown-1")  # the machine was never on: the forced power-off succeeds
        await until(lambda: env.get(CLAIMS, "c1") is None, "c1 released once its shutdown Job has ended")
        assert env.slot_status()["lastClaim"]["reason"] == "Released"
    finally:
        await env.controller.stop()


async def test_a_delete_s_answer_is_in_the_store_at_once(env):
    """Marked for deletion (Foreground), gone (Background), already gone (404): no watch event is needed."""
    await env.booting()
    await env.refill()
    await delete_job(env.ctx, "c1-startup", propagation="Foreground")
    assert marked_for_deletion(env.ctx.store.job("c1-startup"))
    env.lab.collector.run_once()  # the garbage collector ends the Foreground delete; no event reaches the store
    assert _job(env, "c1-startup") is None and env.ctx.store.job("c1-startup") is not None
    await delete_job(env.ctx, "c1-startup")  # answered 404
    assert env.ctx.store.job("c1-startup") is None
    await env.lab.delete(CLAIMS, "c1")
    await env.step()  # the reversal fires the forced shutdown
    await env.refill()
    await delete_job(env.ctx, "c1-shutdown-1")  # Background: gone at once
    assert _job(env, "c1-shutdown-1") is None and env.ctx.store.job("c1-shutdown-1") is None

