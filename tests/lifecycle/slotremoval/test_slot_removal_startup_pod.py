"""A slot removed while its claim boots: the startup Job is deleted Foreground and the forced power-off waits until
its pod is gone (lifecycle.reversal; issue 25). A pod being killed may still send its power-on: with Background
propagation the Job left at once, the forced shutdown fired beside the dying pod, and once it ended the slot let
go of a machine that the pod could then power on. The real pass against the lab API server, whose garbage
collector models Foreground deletion (a Job marked foregroundDeletion stays until its pods are gone); the tests
play the kubelet (a pod still being killed: a finalizer of its own keeps it Terminating).
"""
from __future__ import annotations

import json

import pytest
from support.waits import until

pytestmark = pytest.mark.lab
SLOTS = "nodes.infra.homecluster.dev"
CLAIMS = "nodeclaims.infra.homecluster.dev"
NS = "homecluster-system"
OPERATOR = "homecluster-operator"
KILLING = "lab.test/kubelet-killing"  # the kubelet has not finished killing the pod


async def startup_pod(env, job: dict) -> str:
    """The startup Job's pod, running (the Job controller's and the kubelet's part, played by hand)."""
    name = f"{job['metadata']['name']}-x7k2p"
    await env.lab.create({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "finalizers": [KILLING],
                     "labels": {"job-name": job["metadata"]["name"]},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                                          "uid": job["metadata"]["uid"], "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"containers": [{"name": "ansible-runner", "image": "runner:test"}]}})
    await env.lab.patch("pods", name, {"status": {"phase": "Running"}}, namespace=NS, subresource="status")
    return name


async def test_a_removed_slots_booting_claim_powers_off_only_once_the_startup_pod_is_gone(pool):
    env = pool
    await env.claim()
    await env.step()
    assert env.claim_status()["phase"] == "booting"
    pod = await startup_pod(env, env.get("jobs.batch", "c1-startup", NS))
    await env.lab.delete(SLOTS, "worker-01")
    await env.step()
    [delete] = [e for e in env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR)
                if e.name == "c1-startup"]
    await until(lambda: (env.get("pods", pod, NS) or {}).get("metadata", {}).get("deletionTimestamp"),
                "the lab's garbage collector (every 0.2 s) to mark the pod deleted", 10)
    startup = env.get("jobs.batch", "c1-startup", NS)
    assert startup is not None and startup["metadata"].get("deletionTimestamp"), \
        "the startup Job left before its pod (Background propagation): its pod may still power the machine on"
    assert env.get("jobs.batch", "c1-shutdown-1", NS) is None  # no power-off while the power-on may still land
    env.clock.advance(seconds=6)
    again = await env.step()
    assert env.get("jobs.batch", "c1-shutdown-1", NS) is None and env.get(SLOTS, "worker-01") is not None
    assert not again.wrote and again.wake is not None  # waits on a wake, deletes nothing twice
    assert len([e for e in env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR)
                if e.name == "c1-startup"]) == 1, delete

    await env.lab.patch("pods", pod, {"metadata": {"finalizers": None}}, namespace=NS)  # the kubelet is done
    await until(lambda: env.get("jobs.batch", "c1-startup", NS) is None,
                "the lab's garbage collector to let the Job go after its pod", 10)
    await env.step()
    shutdown = env.get("jobs.batch", "c1-shutdown-1", NS)
    assert shutdown is not None, [j["metadata"]["name"] for j in env.jobs()]
    assert json.loads(shutdown["spec"]["template"]["metadata"]["annotations"]["infra.homecluster.dev/job-vars"])[
        "force"] is True  # the machine may be on without having joined
    assert env.get(SLOTS, "worker-01") is not None
    await env.job_done("c1-shutdown-1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None and env.get(SLOTS, "worker-01") is None
