"""`homecluster lab --demo`: the NodeClaim model at work, narrated in plain words.

The demo is cluster-autoscaler's side of the conversation, through the autoscaler's real protocol
(a gRPC client of the externalgrpc provider): it asks for two machines (NodeGroupIncreaseSize),
watches both claims move to ready while the machines power on and join, gives one back
(NodeGroupDeleteNodes with that node), and watches that machine power off and its claim complete.
It only asks and watches; everything in between is the operator's doing.

Observation reads the lab's in-memory store and the simulated machines directly (no API calls), so
watching costs nothing; every step that changes something goes through the provider.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from homecluster import names
from homecluster.model.settings import Settings

TERMINAL = ("failed", "completed")


class DemoFailed(RuntimeError):
    """The demo could not show a step; the message says which and why."""


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def phase_of(claim: dict[str, Any]) -> str:
    return _get(claim, "status", "phase") or "pending"


@dataclass
class Watcher:
    """Remembers what it last saw and narrates the differences: claim phases and machine power."""

    say: Callable[[str], None]
    started: float = field(default_factory=time.monotonic)
    phases: dict[str, str] = field(default_factory=dict)
    power: dict[str, str] = field(default_factory=dict)
    reached: dict[str, set[str]] = field(default_factory=dict)  # claim -> every phase seen

    def _stamp(self) -> str:
        return f"  [{time.monotonic() - self.started:6.1f}s]"

    def claims(self, claims: list[dict[str, Any]]) -> None:
        for claim in claims:
            name = claim["metadata"]["name"]
            phase = phase_of(claim)
            self.reached.setdefault(name, set()).add(phase)
            if self.phases.get(name) == phase:
                continue
            before = self.phases.get(name)
            self.phases[name] = phase
            slot = _get(claim, "spec", "slotRef")
            extra = ""
            if phase in TERMINAL and _get(claim, "status", "reason"):
                extra = f" ({claim['status']['reason']}: {_get(claim, 'status', 'message') or ''})".replace(": )", ")")
            if before is None:
                self.say(f"{self._stamp()} claim {name} for slot {slot}: {phase}{extra}")
            else:
                self.say(f"{self._stamp()} claim {name} for slot {slot}: {before} -> {phase}{extra}")

    def machines(self, states: dict[str, str]) -> None:
        for slot, state in states.items():
            if self.power.setdefault(slot, state) != state:
                self.power[slot] = state
                self.say(f"{self._stamp()} machine {slot} is now powered {state}")


class Demo:
    def __init__(self, lab: Any, say: Callable[[str], None], *, timeout: float | None = None, poll: float = 0.2):
        self.lab = lab
        self.say = say
        self.poll = poll
        settings = Settings.from_mapping(lab.config.settings)
        # the boot budget of one claim, plus the time a scale-down may take, plus slack for a slow laptop
        self.timeout = timeout if timeout is not None else (
            settings.boot_floor + settings.shutdown_job_timeout).total_seconds() + 30
        self.watcher = Watcher(say)

    def _observe(self) -> list[dict[str, Any]]:
        claims = self.lab.claims()
        self.watcher.claims(claims)
        self.watcher.machines({s: self.lab.machine(s).power_state() for s in self.lab.slot_names})
        return claims

    async def _until(self, what: str, check: Callable[[list[dict[str, Any]]], bool]) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            claims = self._observe()
            if check(claims):
                return
            if self.lab.operator is not None and self.lab.operator.exited() is not None:
                raise DemoFailed(f"the operator exited (code {self.lab.operator.exited()}) while waiting for "
                                 f"{what}; its last lines:\n{self.lab.operator.log_tail()}")
            if time.monotonic() > deadline:
                raise DemoFailed(f"gave up after {self.timeout:.0f}s waiting for {what}; look at "
                                 f"`kubectl get homecluster` and {self.lab.workdir / 'operator.log'}")
            await asyncio.sleep(self.poll)

    async def run(self) -> dict[str, float]:
        """Run the narration; returns how long each step took. Raises DemoFailed."""
        if self.lab.operator is None:
            raise DemoFailed(
                f"the demo needs the operator, and it is not running ({self.lab.operator_note or 'disabled'}). "
                "Without it nothing moves a claim, so the demo cannot show machines powering on, claims "
                "becoming ready or a scale-down. `homecluster lab` without --demo still starts the rest")
        import grpc
        from homecluster.provider.proto import externalgrpc_pb2 as pb
        from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc

        group = self.lab.config.group
        took: dict[str, float] = {}
        async with grpc.aio.insecure_channel(self.lab.provider_address) as channel:
            provider = pb_grpc.CloudProviderStub(channel)
            try:
                await self._scale_up(provider, pb, group, took)
                await self._scale_down(provider, pb, group, took)
            except grpc.aio.AioRpcError as exc:
                raise DemoFailed(f"the provider at {self.lab.provider_address} answered {exc.code().name}: "
                                 f"{exc.details()}") from None
        self.say("")
        self.say("summary:")
        self.say(f"  two machines asked for and ready in {took['scale-up']:.1f}s: each request became a NodeClaim, "
                 "its startup Job powered the machine on through its BMC, the machine joined, and the "
                 "readiness gate saw it usable")
        self.say(f"  one machine given back in {took['scale-down']:.1f}s: deleting its claim ran the reversal "
                 "(cordon, drain, shutdown Job, power off) and the claim ended completed")
        self.say("  nothing was written to a slot's spec: the requests were objects, and the objects are gone "
                 "or finished when the machines are")
        return took

    async def _scale_up(self, provider: Any, pb: Any, group: str, took: dict[str, float]) -> None:
        groups = await provider.NodeGroups(pb.NodeGroupsRequest(), timeout=5)
        listed = ", ".join(f"{g.id} (min {g.minSize}, max {g.maxSize})" for g in groups.nodeGroups)
        self.say(f"1. cluster-autoscaler asks the provider for its node groups: {listed}")
        before = (await provider.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id=group), timeout=5)).targetSize
        self.say(f"   the target size of {group!r} is {before}: the count of its live claims")
        known = {c["metadata"]["name"] for c in self._observe()}
        self.say(f"2. pending pods need room: the autoscaler calls NodeGroupIncreaseSize(delta=2) on {group!r}")
        self.say("   the provider creates two NodeClaims; watch them move (pending -> booting -> ready):")
        started = time.monotonic()
        await provider.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id=group, delta=2), timeout=10)
        self.new: list[str] = []

        def both_ready(claims: list[dict[str, Any]]) -> bool:
            mine = [c for c in claims if c["metadata"]["name"] not in known
                    and _get(c, "metadata", "labels", names.LABEL_GROUP) in (group, None)]
            failed = [c for c in mine if phase_of(c) == "failed"]
            if failed:
                c = failed[0]
                raise DemoFailed(f"claim {c['metadata']['name']} failed: {_get(c, 'status', 'reason')}: "
                                 f"{_get(c, 'status', 'message')}")
            self.new = [c["metadata"]["name"] for c in mine]
            return len(mine) >= 2 and all(phase_of(c) == "ready" for c in mine)

        await self._until("both claims to become ready", both_ready)
        took["scale-up"] = time.monotonic() - started
        after = (await provider.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id=group), timeout=5)).targetSize
        self.say(f"   both claims are ready after {took['scale-up']:.1f}s; the target size is now {after}")

    async def _scale_down(self, provider: Any, pb: Any, group: str, took: dict[str, float]) -> None:
        claims = {c["metadata"]["name"]: c for c in self.lab.claims()}
        victim = claims[sorted(self.new)[-1]]
        claim_name, slot = victim["metadata"]["name"], victim["spec"]["slotRef"]
        slot_obj = next(s for s in self.lab.slots() if s["metadata"]["name"] == slot)
        node_name = _get(slot_obj, "status", "nodeName") or _get(slot_obj, "spec", "nodeName") or slot
        node = self.lab.api.get("nodes", node_name) or {}
        provider_id = _get(node, "spec", "providerID") or _get(slot_obj, "spec", "providerID") \
            or f"{names.PROVIDER_ID_SCHEME}{slot}"
        self.say(f"3. the load is gone and node {node_name} is unneeded: the autoscaler calls "
                 f"NodeGroupDeleteNodes on {group!r} with that node (providerID {provider_id})")
        self.say("   the provider deletes its claim; the claim's finalizer runs the reversal:")
        started = time.monotonic()
        await provider.NodeGroupDeleteNodes(pb.NodeGroupDeleteNodesRequest(
            id=group, nodes=[pb.ExternalGrpcNode(providerID=provider_id, name=node_name)]), timeout=10)

        def released(claims: list[dict[str, Any]]) -> bool:
            if self.lab.machine(slot).power_state() != "off":
                return False
            if "completed" in self.watcher.reached.get(claim_name, set()):
                return True
            slot_now = next(s for s in self.lab.slots() if s["metadata"]["name"] == slot)
            last = _get(slot_now, "status", "lastClaim") or {}
            if last.get("name") == claim_name and last.get("phase") == "failed":
                raise DemoFailed(f"claim {claim_name} ended failed ({last.get('reason')}), not completed")
            return last.get("name") == claim_name and last.get("phase") == "completed"

        await self._until(f"machine {slot} to power off and claim {claim_name} to complete", released)
        took["scale-down"] = time.monotonic() - started
        self.say(f"   machine {slot} is off and claim {claim_name} completed after {took['scale-down']:.1f}s")
