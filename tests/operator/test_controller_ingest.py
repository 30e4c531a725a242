"""operator.controller.Controller.ingest and stop: what a watch event does to the store and the queue, and what
stop ends (pinned by the mutation sample of operator/controller.py, issue 23).

- a DELETED event drops the object from the store and queues the slot it concerned;
- a Job outside the Jobs' namespace (a Job of someone else's that carries our labels) is not taken in;
- stop ends the sweep as well as the workers: no task of the controller outlives it;
- a failed pass is logged whole: the slot, the error, when it is retried.
"""
from __future__ import annotations

import asyncio
import copy
import logging

import pytest

from homecluster.kube import client as kube
from homecluster.operator import controller as controller_module

pytestmark = pytest.mark.lab


async def test_a_deleted_event_drops_the_object_and_queues_its_slot(pool):
    env = pool
    await env.claim()
    await env.refill()
    held = env.ctx.store.claim("c1")
    assert held is not None
    await env.drain_queue()
    env.controller.ingest(kube.CLAIMS, held, deleted=True)
    assert env.ctx.store.claim("c1") is None, "a DELETED event left the claim in the store"
    assert await asyncio.wait_for(env.controller.queue.get(), 5) == "worker-01"


async def test_a_job_of_another_namespace_is_not_taken_in(pool):
    env = pool
    await env.claim()
    await env.step()  # booting: its startup Job runs in the Jobs' namespace
    await env.refill()
    ours = env.ctx.store.jobs_of_slot("worker-01")
    assert [j["metadata"]["name"] for j in ours] == ["c1-startup"]
    stranger = copy.deepcopy(ours[0])
    stranger["metadata"].update(namespace="someone-elses", name="c1-startup-copy", uid="uid-of-a-stranger",
                                resourceVersion="999999")
    await env.drain_queue()
    env.controller.ingest(kube.JOBS, stranger)
    assert [j["metadata"]["name"] for j in env.ctx.store.jobs_of_slot("worker-01")] == ["c1-startup"]
    assert len(env.controller.queue) == 0, "a Job of another namespace queued the slot"
    stranger["metadata"]["namespace"] = env.ctx.jobs_namespace
    env.controller.ingest(kube.JOBS, stranger)
    # the same Job in the Jobs' namespace is taken in: the check is the namespace
    assert sorted(j["metadata"]["name"] for j in env.ctx.store.jobs_of_slot("worker-01")) == [
        "c1-startup", "c1-startup-copy"]


async def test_stop_ends_the_sweep_too(env):
    env.controller.start_sweeping()
    assert [t for t in asyncio.all_tasks() if t.get_name() == "homecluster-sweep" and not t.done()]
    await env.controller.stop()
    await asyncio.sleep(0)
    left = [t for t in asyncio.all_tasks() if t.get_name() == "homecluster-sweep" and not t.done()]
    assert left == [], "the sweep outlived stop()"


@pytest.mark.parametrize("raised, level, said", [
    (kube.Conflict(409, "Conflict", "the object has been modified", "patch nodeclaims c1"), logging.INFO,
     'slot "worker-01": patch nodeclaims c1: HTTP 409 Conflict: the object has been modified; re-running the pass '
     "in {delay}s"),
    (RuntimeError("a bug"), logging.ERROR, 'slot "worker-01": pass raised RuntimeError; retrying in {delay}s'),
])
async def test_a_failed_pass_is_logged_whole_with_the_error_and_the_retry(env, monkeypatch, logged, raised, level,
                                                                             said):
    async def failing(ctx, slot):
        raise raised

    monkeypatch.setattr(controller_module, "run_pass", failing)
    with logged(env.ctx.log, logging.INFO) as records:
        await env.controller.process("worker-01")
    (record,) = [r for r in records if r.getMessage().startswith('slot "worker-01"')]
    delay = record.getMessage().rsplit(" in ", 1)[1].removesuffix("s")
    assert (record.levelno, record.getMessage()) == (level, said.format(delay=delay))
    assert 0 < float(delay) <= 60
    assert (record.exc_info is not None) == (level == logging.ERROR)  # a bug's traceback goes with it


async def test_leases_it_may_not_list_are_said_once_with_the_fix_and_ready_is_believed(env, logged):
    env.lab.faults.fail_next("leases", count=1, code=403, verbs=["list"])
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.controller.fill()
    said = [r.getMessage() for r in records]
    assert len(said) == 1 and said[0].startswith("cannot list Leases in kube-node-lease (") and said[0].endswith(
        "): a Node's Ready is believed without its kubelet's Lease; grant list and watch on coordination.k8s.io "
        "leases there (config/rbac/node_lease_role.yaml)"), said
    assert "403" in said[0], said
    env.lab.faults.fail_next("leases", count=1, code=500, verbs=["list"])
    with pytest.raises(kube.ApiError):  # anything but a refusal or a missing API is no reason to go on blind
        await env.controller.fill()
