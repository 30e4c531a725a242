"""`homecluster lab --control-plane kubernetes --autoscaler PATH --demo`: a real cluster-autoscaler at work.

Unlike demo.py (which plays the autoscaler's side of the protocol itself), nothing here calls the provider:
the demo only makes work and takes it away, and narrates what follows. It creates a Deployment of two pods
that each need a machine of their own (most of a machine's CPU, the Group's instance type, never two on one
host); the real scheduler marks them unschedulable, the real autoscaler asks the provider for machines,
the operator boots them, the pods run. Then it scales the Deployment to zero: the nodes are empty, the
autoscaler waits its unneeded time, deletes them through the provider, and the operator powers them off.
Each step is stamped; the autoscaler's own decisions are quoted from its log.
"""
from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

from homecluster_lab.demo import DemoFailed, Watcher

APP = "homecluster-demo"
NS = "default"
INSTANCE_TYPE = "homecluster-lab"  # the lab Group's template label node.kubernetes.io/instance-type
# the autoscaler's log lines worth quoting (1.34-1.36 word them so)
DECISIONS = re.compile(r"Final scale-up plan|Scale-up: setting group|Scale-down: removing empty node|"
                       r"Scale-down: removing node|node had untolerated taints|Failed adding|backoff", re.I)


def workload(replicas: int, cpu: str, instance_type: str, *, name: str = APP,
             tolerate: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Deployment in `default` whose pods each need a machine of their own: `cpu` each (most of a machine),
    the Group's instance type, never two on one host; tolerating the taint keys in `tolerate`."""
    spec: dict[str, Any] = {
        "nodeSelector": {"node.kubernetes.io/instance-type": instance_type},
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": "kubernetes.io/hostname"}]}},
        "terminationGracePeriodSeconds": 5,
        "containers": [{"name": "app", "image": "registry.invalid/demo:1",
                        "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}]}
    if tolerate:
        spec["tolerations"] = [{"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in tolerate]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def most_of(cpu_capacity: str) -> str:
    """Three quarters of a machine's CPU, in millicores: one such pod per machine."""
    return f"{int(float(cpu_capacity) * 750)}m"


def pod_state(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    if status.get("phase") == "Running":
        return f"Running on {pod['spec'].get('nodeName')}"
    if pod["spec"].get("nodeName"):
        return f"bound to {pod['spec']['nodeName']}"
    scheduled = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    return f"Pending ({scheduled.get('reason') or 'not yet looked at'})"


class AutoscalerDemo:
    def __init__(self, lab: Any, ca: Any, say: Callable[[str], None], *, timeout: float = 900.0, poll: float = 0.5):
        self.lab, self.ca, self.say, self.timeout, self.poll = lab, ca, say, timeout, poll
        self.watcher = Watcher(say)
        self.pods: dict[str, str] = {}
        self._log_offset = 0

    def _stamp(self) -> str:
        return f"  [{time.monotonic() - self.watcher.started:6.1f}s]"

    async def _observe(self) -> list[dict[str, Any]]:
        self.watcher.claims(self.lab.claims())
        self.watcher.machines({s: self.lab.machine(s).power_state() for s in self.lab.slot_names})
        found = (await self.lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods", {"labelSelector": f"app={APP}"}))
        current = {p["metadata"]["name"]: pod_state(p) for p in found["items"]}
        for name, state in current.items():
            if self.pods.get(name) != state:
                self.say(f"{self._stamp()} pod {name}: {state}")
        for name in set(self.pods) - set(current):
            self.say(f"{self._stamp()} pod {name}: gone")
        self.pods = current
        self._quote_log()
        return found["items"]

    def _quote_log(self) -> None:
        try:
            with open(self.ca.log_path, "rb") as log:
                log.seek(self._log_offset)
                chunk = log.read()
        except OSError:
            return
        complete = chunk[:chunk.rfind(b"\n") + 1]
        self._log_offset += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            if DECISIONS.search(line) and "Event(v1.ObjectReference" not in line:  # its events repeat the line
                self.say(f"{self._stamp()} cluster-autoscaler: {line.split('] ', 1)[-1][:200]}")

    async def _until(self, what: str, check: Callable[[list[dict[str, Any]]], bool]) -> float:
        started = time.monotonic()
        while True:
            if check(await self._observe()):
                return time.monotonic() - started
            for part, rc in (("cluster-autoscaler", self.ca.exited()),
                             ("the operator", self.lab.operator.exited() if self.lab.operator else None)):
                if rc is not None:
                    raise DemoFailed(f"{part} exited (code {rc}) while waiting for {what}")
            if time.monotonic() - started > self.timeout:
                raise DemoFailed(f"gave up after {self.timeout:.0f}s waiting for {what}; read {self.ca.log_path} "
                                 f"and {self.lab.workdir / 'operator.log'}")
            await asyncio.sleep(self.poll)

    async def run(self) -> dict[str, float]:
        """Narrate a scale-up of two machines and their scale-down; returns each step's seconds. DemoFailed."""
        lab, group = self.lab, self.lab.config.group
        existing = {c["metadata"]["name"] for c in lab.claims()}
        self.say(f"1. cluster-autoscaler {self.ca.build.release} watches the cluster (its log: {self.ca.log_path})")
        self.say(f"2. a Deployment of 2 pods, each needing a {group!r} machine of its own, is created in {NS!r}:")
        await lab.api.kube.create(f"/apis/apps/v1/namespaces/{NS}/deployments", workload(
            2, most_of(lab.config.capacity.get("cpu", "4")), INSTANCE_TYPE))
        took = {"scale-up": await self._until("both pods Running", lambda pods: len(pods) == 2 and all(
            p.get("status", {}).get("phase") == "Running" for p in pods))}
        bought = [c for c in lab.claims() if c["metadata"]["name"] not in existing]
        on = sorted({c["spec"]["slotRef"] for c in bought})
        self.say(f"   both pods Running after {took['scale-up']:.1f}s on {', '.join(on)}: "
                 f"{len(bought)} machine(s) bought for 2 pods")
        self.say("3. the Deployment is scaled to 0: the nodes are empty, and once unneeded long enough the "
                 "autoscaler deletes them (NodeGroupDeleteNodes); the operator drains and powers each off")
        await lab.api.kube.merge_patch(f"/apis/apps/v1/namespaces/{NS}/deployments/{APP}", {"spec": {"replicas": 0}})
        mine = {c["metadata"]["name"] for c in bought}

        def all_off(_pods: list[dict[str, Any]]) -> bool:
            live = {c["metadata"]["name"] for c in lab.claims()}
            return not (live & mine) and all(lab.machine(s).power_state() == "off" for s in on)
        took["scale-down"] = await self._until("the machines off and their claims gone", all_off)
        await lab.api.kube.delete(f"/apis/apps/v1/namespaces/{NS}/deployments/{APP}")
        self.say("")
        self.say("summary:")
        self.say(f"  2 pending pods -> {len(bought)} NodeClaims -> machines on -> pods Running in "
                 f"{took['scale-up']:.1f}s (the autoscaler's scan, the boot, the readiness taint)")
        self.say(f"  pods gone -> unneeded -> DeleteNodes -> machines off in {took['scale-down']:.1f}s")
        return took
