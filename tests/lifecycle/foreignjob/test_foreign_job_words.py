"""foreignjob.report_on_slot and jobio's owner texts: the words a refused unwanted-machine shutdown says.

A Job under the shutdown's name, controlled by something else (a ConfigMap here: a real object, so
the garbage collector keeps the Job), is never adopted; the slot gets one Warning Event naming the
Job, its controlling owner (not a mere non-controller reference) and the slot's own uid, and the
operator logs the same words.
"""
from __future__ import annotations

import logging

import pytest

from homecluster.lifecycle import slotevents

pytestmark = pytest.mark.lab
NS = "homecluster-system"
SLOTS = "nodes.infra.homecluster.dev"


async def configmap(env, name: str) -> dict:
    return await env.lab.create({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": name, "namespace": NS}, "data": {}})


async def test_a_foreign_controlled_job_is_named_with_its_controller_on_the_slot(pool, logged):
    env = pool
    bystander, keeper = await configmap(env, "bystander"), await configmap(env, "keeper")
    ref = lambda o, controller: {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],  # noqa: E731
                                 "uid": o["metadata"]["uid"], "controller": controller}
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "worker-01-unwanted-1", "namespace": NS,
        "ownerReferences": [ref(bystander, False), ref(keeper, True)]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "x", "image": "other:1"}]}}}})
    await env.node()  # on, and no claim wants it: its shutdown would take that name
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.step()
    slot = env.get(SLOTS, "worker-01")
    text = (f'Job {NS}/worker-01-unwanted-1 already exists and belongs to ConfigMap "keeper" '
            f'(uid {keeper["metadata"]["uid"]}), not to this step\'s owner (uid {slot["metadata"]["uid"]}); it was '
            f"not adopted. Delete that Job if it is a leftover")
    said = [e for e in env.lab.list("events", "default") if e["reason"] == "ForeignJob"]
    assert len(said) == 1
    assert said[0]["message"] == f'slot "worker-01": the unwanted machine\'s shutdown was not fired: {text}'
    assert (said[0]["type"], said[0]["involvedObject"]["name"]) == ("Warning", "worker-01")
    # said once per Job name: the Event's deterministic name is keyed on the Job
    assert said[0]["metadata"]["name"] == slotevents.event_body(
        slot, "ForeignJob", "", "worker-01-unwanted-1", "", warning=True)["metadata"]["name"]
    assert {r.getMessage() for r in records if "not adopted" in r.getMessage()} == {f'slot "worker-01": {text}'}
    [job] = env.jobs()
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "other:1"  # not adopted, not deleted
    env.clock.advance(seconds=env.ctx.settings.shutdown_holdoff.total_seconds() + 1)
    await env.step()  # looked at again after the hold-off: still refused, still one Event
    assert len([e for e in env.lab.list("events", "default") if e["reason"] == "ForeignJob"]) == 1
