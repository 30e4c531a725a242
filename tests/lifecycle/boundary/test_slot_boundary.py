"""Which corev1 Node a slot may claim as its machine (issue 15 item 7, model.boundary): the attacks, performed
through a real pass against the lab API server.

A slot author chooses spec.providerID and spec.nodeName. Before this boundary, a slot declaring the control
plane's providerID adopted its Node, read it as powered on and -- with no claim (decision table row 2) --
had an unwanted-machine shutdown Job cordon and drain it.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import threading

import pytest

from homecluster.jobs import JOB_VARS_ANNOTATION
from homecluster.model.timestamps import format_time
from homecluster.operator import main as operator_main
from homecluster.model.boundary import NodeSelector

pytestmark = pytest.mark.lab

SLOTS = "nodes.infra.homecluster.dev"


async def ready_node(env, name: str, provider_id: str, labels: dict | None = None) -> None:
    """Play the kubelet of a machine that is up: a Ready Node with a providerID."""
    await env.lab.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
                          "spec": {"providerID": provider_id}})
    stamp = format_time(env.clock.now)
    await env.lab.patch("nodes", name, {"status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": stamp,
        "lastHeartbeatTime": stamp}]}}, subresource="status")


async def slot_declaring(env, name: str, provider_id: str, node_name: str) -> None:
    await env.slot(name)
    await env.lab.patch(SLOTS, name, {"spec": {"providerID": provider_id, "nodeName": node_name}})


def accepted(env, slot: str = "worker-01") -> dict | None:
    return next((c for c in env.slot_status(slot).get("conditions") or [] if c["type"] == "NodeAccepted"), None)


def jobs_of(env, slot: str) -> list[dict]:
    return [j for j in env.jobs() if j["metadata"]["labels"].get("infra.homecluster.dev/slot") == slot]


@pytest.mark.parametrize("role", ["node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"])
async def test_a_slot_declaring_the_control_planes_provider_id_gets_it_neither_observed_nor_drained(env, role):
    await ready_node(env, "cp-1", "k3s://cp-1", {role: "true"})
    await env.group()
    await slot_declaring(env, "evil", "k3s://cp-1", "cp-1")
    await env.step("evil", times=4)
    assert env.jobs() == []  # no shutdown Job of "the unwanted machine": nothing cordons or drains cp-1
    status = env.slot_status("evil")
    assert status["powerState"] == "off" and "nodeName" not in status, status
    condition = accepted(env, "evil")
    assert condition["status"] == "False" and condition["reason"] == "ControlPlaneNode", condition
    assert role in condition["message"] and "spec.providerID" in condition["message"]
    assert not env.get("nodes", "cp-1")["spec"].get("unschedulable")


async def test_a_forced_shutdown_of_a_refused_slot_names_no_node_to_drain(env):
    # The claim's deadline passes while the machine is "booting": the forced shutdown powers off what the
    # slot names (its author's BMC), but its Job is never given the control plane's Node to act on.
    await ready_node(env, "cp-1", "k3s://cp-1", {"node-role.kubernetes.io/control-plane": ""})
    await env.group()
    await slot_declaring(env, "worker-01", "k3s://cp-1", "cp-1")
    await env.claim()
    await env.step(times=3)
    await env.job_done("c1-startup")
    env.clock.advance(minutes=10)
    await env.step(times=6)
    shutdowns = [j for j in env.jobs() if j["metadata"]["labels"]["infra.homecluster.dev/job-kind"] == "shutdown"]
    assert shutdowns, [j["metadata"]["name"] for j in env.jobs()]
    for job in shutdowns:
        pod = job["spec"]["template"]["spec"]
        assert "initContainers" not in pod, job["metadata"]["name"]  # no cordon/drain step, no token
        extra_vars = json.loads(job["spec"]["template"]["metadata"]["annotations"][JOB_VARS_ANNOTATION])
        assert extra_vars["node_name"] == "", extra_vars  # the declared name alone is never a Node to act on
    assert not env.get("nodes", "cp-1")["spec"].get("unschedulable")


async def test_the_second_slot_declaring_a_machine_is_refused(env):
    await ready_node(env, "worker-01", "homecluster://worker-01")
    await env.group()
    await env.slot("worker-01")
    await env.step("worker-01", times=4)  # the first slot is accepted (and shuts its unwanted machine down)
    await slot_declaring(env, "worker-02", "homecluster://worker-01", "worker-01")
    await env.step("worker-02", times=4)
    assert jobs_of(env, "worker-02") == []
    condition = accepted(env, "worker-02")
    assert condition["reason"] == "DuplicateProviderID" and '"worker-01"' in condition["message"], condition
    assert env.slot_status("worker-02")["powerState"] == "off"
    assert accepted(env, "worker-01") is None and env.slot_status("worker-01")["powerState"] == "on"
    # a different providerID but the same node name: refused too
    await slot_declaring(env, "worker-03", "homecluster://other", "worker-01")
    await env.step("worker-03", times=4)
    assert accepted(env, "worker-03")["reason"] == "DuplicateNodeName" and jobs_of(env, "worker-03") == []
    # a declared duplicate is said by its condition alone: the NodeConflict Events are for two slots that find one
    # Node (lifecycle.slotconflict), and the declaration's refusal comes before any Node is looked for
    assert [e["involvedObject"]["name"] for e in env.lab.list("events", "default")
            if e["reason"] == "NodeConflict"] == []


async def test_the_managed_node_selector_is_required_before_the_operator_acts(env):
    env.ctx.store.managed_node_selector = NodeSelector.parse("homecluster.dev/pool=workers")
    await ready_node(env, "worker-01", "homecluster://worker-01")
    await env.group()
    await env.slot("worker-01")
    await env.step(times=4)
    assert env.jobs() == [] and accepted(env)["reason"] == "NodeNotManaged", env.slot_status()
    assert "homecluster.dev/pool=workers" in accepted(env)["message"]
    # labelled at join time (k3s --node-label): the Node is the slot's, and the machine nobody asked for is shut down
    await env.lab.patch("nodes", "worker-01", {"metadata": {"labels": {"homecluster.dev/pool": "workers"}}})
    await env.step(times=4)
    assert accepted(env) is None and env.slot_status()["powerState"] == "on"
    [job] = env.jobs()
    assert job["metadata"]["labels"]["infra.homecluster.dev/job-kind"] == "shutdown"


@pytest.mark.parametrize("text,labels,match", [
    ("", {}, True),
    ("a=b", {"a": "b"}, True), ("a==b", {"a": "c"}, False), ("a!=b", {}, True), ("a!=b", {"a": "b"}, False),
    ("a", {"a": ""}, True), ("!a", {"a": ""}, False), ("a in (x, y),!b", {"a": "y"}, True),
    ("a notin (x,y)", {"a": "x"}, False), ("homecluster.dev/pool=workers,tier", {"homecluster.dev/pool": "workers"}, False),
])
def test_selector_reads_kubernetes_label_selectors(text, labels, match):
    assert NodeSelector.parse(text).matches({"metadata": {"labels": labels}}) is match


@pytest.mark.parametrize("text", ["a=b,,c", "a=(b", "in (x)", "a b"])
def test_selector_refuses_what_it_cannot_read_naming_the_flag(text):
    with pytest.raises(ValueError, match="--managed-node-selector"):
        NodeSelector.parse(text)


def operator_args(lab, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    operator_main.add_arguments(parser)
    return parser.parse_args(["--kubeconfig", str(lab.kubeconfig_path), "--namespace", "homecluster-system",
                              "--no-webhook", "--no-provider", *extra])


async def test_the_real_operator_takes_the_selector_from_its_flag(lab):
    # The real operator process (kopf and all) with --managed-node-selector: an unlabelled Node that is up and
    # that no claim asked for is neither observed nor shut down; the slot says why.
    args = operator_args(lab, "--managed-node-selector", "homecluster.dev/pool=workers")
    stop = threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(operator_main.main(args, stop)), daemon=True)
    thread.start()
    try:
        await lab.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-01"},
                          "spec": {"providerID": "homecluster://worker-01"}})
        await lab.patch("nodes", "worker-01", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}, subresource="status")
        await lab.create({"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group",
                          "metadata": {"name": "workers"}, "spec": {"maxSize": 3, "template": {
                              "capacity": {"cpu": "4", "memory": "8Gi", "pods": 110}}}})
        await lab.create({"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node",
                          "metadata": {"name": "worker-01"}, "spec": {"groupRef": "workers", "power": {
                              "method": "ipmi", "ipmi": {"address": "127.0.0.1",
                                                         "credentialsSecretRef": {"name": "worker-01-bmc"}}}}})

        def condition():
            status = (lab.get(SLOTS, "worker-01") or {}).get("status") or {}
            return next((c for c in status.get("conditions") or [] if c["type"] == "NodeAccepted"), None)

        async with asyncio.timeout(30):
            while condition() is None:
                await asyncio.sleep(0.05)
        assert condition()["reason"] == "NodeNotManaged"
        assert lab.list("jobs.batch", "homecluster-system") == []
    finally:
        stop.set()
        await asyncio.to_thread(thread.join, 15)


async def test_an_unreadable_selector_stops_the_operator_naming_the_flag(lab):
    with pytest.raises(SystemExit, match="--managed-node-selector 'pool=\\(workers'"):
        await operator_main.main(operator_args(lab, "--managed-node-selector", "pool=(workers"))
