"""The campaign's `group-add` action: a second Group with its own slot and machine appears, is used, and is
removed from "Git" while its slot and claims still exist.

    spare = SpareGroup(lab, stub, report)
    await spare.add(via="autoscaler")   # machine (once), Secret, Group, slot; then IncreaseSize or a hand claim
    await spare.remove()                 # the Group goes first, then its slot once nothing needs it

The specification says nothing of its own about a Group deleted under its slots; what must still hold is the
model's rule (a machine is on only while a live claim names its slot) and the campaign's invariants 1, 5 and 6:
a pending claim ends GroupNotFound, a committed one ends through its reversal (docs/controller.md), and no
claim stays Terminating. The slot itself is removed only once no claim names it and its machine is off, as the
`slot-remove` kind does: a slot removed under a running machine leaves a machine nobody can power off, which
is Git's mistake, not the operator's.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
from support.waits import poll

from homecluster import names
from homecluster.model.timestamps import format_time
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster_lab import topology
from homecluster_lab.machines.fleet import MachineSpec
from homecluster_lab.machines.machine import Taint

SLOTS = f"{names.SLOT_PLURAL}.{names.API_GROUP}"
CLAIMS = f"{names.CLAIM_PLURAL}.{names.API_GROUP}"
GROUPS = f"groups.{names.API_GROUP}"
SPARE_GROUP = "spares"
SPARE_SLOT = "spare-01"


@dataclass
class GroupAdd:
    """What one `group-add` got done: its Group created, its slot created, its machine asked for (IncreaseSize
    answered, or the hand claim created)."""

    via: str
    group: bool = False
    slot: bool = False
    asked: bool = False


class SpareGroup:
    def __init__(self, lab: Any, stub: Any, report: Any, boot_window: float) -> None:
        self.lab, self.stub, self.report, self.boot_window = lab, stub, report, boot_window
        self.present = False  # the Group is in "Git"
        self.claims = 0
        # one GroupAdd per add() begun, its steps marked as they succeed (report.group_adds): the campaign's
        # test asserts the machine was really asked for, not only that the action was spawned
        self.adds: list[GroupAdd] = report.group_adds

    def _group(self) -> dict[str, Any]:
        return topology.group(SPARE_GROUP, 1, self.lab.config.capacity)

    async def _machine(self) -> Any:
        """The spare machine, started the first time (the fleet adds machines at run time)."""
        fleet = self.lab.fleet
        if SPARE_SLOT not in fleet.machines:
            labels = dict(self._group()["spec"]["template"]["labels"])
            await fleet.add(MachineSpec(name=SPARE_SLOT, method="ipmi", boot_seconds=self.lab.config.boot_seconds,
                                        ready_taints_clear_seconds=self.lab.config.ready_taints_clear_seconds,
                                        labels={**labels, topology.LAB_LABEL: SPARE_SLOT},
                                        capacity=dict(self.lab.config.capacity),
                                        readiness_taints=(Taint(topology.READINESS_TAINT),)))
        return fleet.endpoints[SPARE_SLOT]

    def can_add(self) -> bool:
        """False while the Group is there, or its slot still waits for its machine to go off."""
        return not self.present and self.lab.api.get(SLOTS, SPARE_SLOT) is None

    async def add(self, via: str) -> None:
        """Create the Group and its slot, then ask for the machine (the autoscaler's IncreaseSize or a hand claim)."""
        api, ns = self.lab.api, self.lab.config.namespace
        done = GroupAdd(via)
        self.adds.append(done)
        endpoints = await self._machine()
        secret = topology.secret_name(SPARE_SLOT, endpoints.method)
        if api.get("secrets", secret, ns) is None:
            body = topology.secret(secret, ns, {})
            del body["stringData"]
            body["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in endpoints.secret_data().items()}
            await api.create(body)
        self.present = True
        await api.create(self._group())  # the Group webhook may refuse it (down): the run's caller errors count it
        done.group = True
        await api.create(topology.slot(SPARE_SLOT, SPARE_GROUP, endpoints.power_spec(secret, ns),
                                       endpoints.boot_check))
        done.slot = True
        if via == "autoscaler":
            await self._until_listed()
            await self._increase()
            done.asked = True
        else:
            self.claims += 1
            now = datetime.now(timezone.utc)
            await api.create({"apiVersion": f"{names.API_GROUP}/v2alpha1", "kind": "NodeClaim",
                              "metadata": {"name": f"spare-{self.report.seed}-{self.claims}"},
                              "spec": {"slotRef": SPARE_SLOT, "requestedAt": format_time(now),
                                       "deadlineAt": format_time(now + timedelta(seconds=self.boot_window))}})
            done.asked = True

    async def _until_listed(self, bound: float = 10.0) -> None:
        """Wait (at most `bound` s) until the provider's NodeGroups lists the Group: the autoscaler scales only
        the groups it has seen there, and the provider's cache learns a new Group from its watch."""
        async def listed() -> bool:
            groups = await self.stub.NodeGroups(pb.NodeGroupsRequest(), timeout=5)
            return any(g.id == SPARE_GROUP for g in groups.nodeGroups)

        await poll(listed, bound, interval=0.25)  # not listed in time: the step goes on, as before

    async def _increase(self, bound: float = 10.0) -> None:
        """IncreaseSize(1) for the Group, asked again while the answer is RESOURCE_EXHAUSTED, for at most `bound` s
        (scaled to the load, as every wait of the suite is: support.waits.poll).

        The provider's cache learns the Group and its slot from two watch events, which may come apart: listed,
        the Group may still have no slot the provider knows, and the answer is then that no slot is free (seen
        in a clean-clone run, seed 18). The autoscaler would ask again at its next scan; so does this. Any other
        answer at once, or the last refusal after `bound`, is the run's caller error as before."""
        request = pb.NodeGroupIncreaseSizeRequest(id=SPARE_GROUP, delta=1)
        refused: list[grpc.aio.AioRpcError] = []

        async def asked() -> bool:
            try:
                await self.stub.NodeGroupIncreaseSize(request, timeout=5)
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise
                refused[:] = [exc]
                return False
            return True

        if not await poll(asked, bound, interval=0.25):
            raise refused[-1]

    async def remove(self, gap: float = 2.0) -> None:
        """The Group goes from Git while its slot and claims exist; `gap` seconds later a person deletes the
        claims left on its slot (the autoscaler no longer knows the group), and the slot goes once its
        machine is off (cancelled with the faults: the calm then leaves the slot for the operator)."""
        await self.delete_group()
        await asyncio.sleep(gap)
        await self.delete_claims()
        while not await self.remove_slot_when_free():
            await asyncio.sleep(0.5)

    async def delete_group(self) -> None:
        self.present = False
        with contextlib.suppress(Exception):
            await self.lab.api.delete(GROUPS, SPARE_GROUP)

    async def delete_claims(self) -> None:
        api = self.lab.api
        for claim in api.list(CLAIMS):
            if (claim.get("spec") or {}).get("slotRef") == SPARE_SLOT and not claim["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(Exception):
                    await api.delete(CLAIMS, claim["metadata"]["name"])

    async def remove_slot_when_free(self) -> bool:
        """Remove the spare slot once no claim names it and its machine is off; True when it is gone."""
        api = self.lab.api
        if self.present or api.get(SLOTS, SPARE_SLOT) is None:
            return not self.present
        busy = any((c.get("spec") or {}).get("slotRef") == SPARE_SLOT for c in api.list(CLAIMS))
        if busy or self.lab.machine(SPARE_SLOT).power_state() == "on":
            return False
        with contextlib.suppress(Exception):
            await api.delete(SLOTS, SPARE_SLOT)
        return api.get(SLOTS, SPARE_SLOT) is None
