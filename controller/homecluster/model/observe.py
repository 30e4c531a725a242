"""Two of the three facts of every decision, read from a corev1 Node: observed power and usability.

Observed power is an observation of the machine, not an intent: `on` exactly when the corev1 Node
reports NodeReady=True. Usability is stricter: the Node exists, is Ready, carries none of the
pool's readiness taints and is not cordoned -- a machine that can take the pool's work. Both are
answered with a reason when negative, so messages and events can say why.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from homecluster.model.objects import conditions_of, dig, name_of, taints_of, unschedulable
from homecluster.model.phases import PowerState

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Usability:
    """Whether the machine can take the pool's work; `why` says what is missing when it cannot."""

    usable: bool
    why: str | None = None

    def __bool__(self) -> bool:
        return self.usable


@dataclass(frozen=True)
class Observation:
    """Observed power and usability of one slot's corev1 Node."""

    power: PowerState
    usability: Usability

    @property
    def usable(self) -> bool:
        return self.usability.usable


def ready_status(node: Obj | None) -> str | None:
    """The status string of the Node's Ready condition ("True", "False", "Unknown"), None if absent."""
    for condition in conditions_of(node):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status")
    return None


def observed_power(node: Obj | None) -> PowerState:
    """on exactly when the Node reports Ready=True; no Node, NotReady or Unknown are off."""
    return PowerState.ON if node is not None and ready_status(node) == "True" else PowerState.OFF


def readiness_taint_on(node: Obj | None, group: Obj | None) -> dict | None:
    """The first of the Group's spec.nodeReadinessTaints the Node carries, or None.

    A readiness taint matches a Node taint by key, and by effect too when the readiness taint
    names one (no effect: any effect matches).
    """
    wanted = dig(group, "spec", "nodeReadinessTaints", default=[]) or []
    present = taints_of(node)
    for rule in wanted:
        for taint in present:
            if taint.get("key") == rule.get("key") and (not rule.get("effect") or taint.get("effect") == rule.get("effect")):
                return dict(taint)
    return None


def usability(node: Obj | None, group: Obj | None) -> Usability:
    """Usable: the Node exists, is Ready, has no readiness taint of the pool, is not cordoned.

    The checks run in that order and the first failure is the `why`. A missing Group (None) has
    no readiness taints.
    """
    if node is None:
        return Usability(False, "no corev1 Node has registered")
    name = name_of(node) or "<unnamed>"
    status = ready_status(node)
    if status != "True":
        shown = "absent" if status is None else status
        return Usability(False, f'corev1 Node "{name}" is not Ready (condition Ready is {shown})')
    taint = readiness_taint_on(node, group)
    if taint is not None:
        effect = f":{taint.get('effect')}" if taint.get("effect") else ""
        return Usability(False, f'corev1 Node "{name}" carries the readiness taint {taint.get("key")}{effect}')
    if unschedulable(node):
        return Usability(False, f'corev1 Node "{name}" is cordoned (spec.unschedulable)')
    return Usability(True)


def observe(node: Obj | None, group: Obj | None, silent: str | None = None) -> Observation:
    """Observed power and usability together, the two machine facts of a decision.

    `silent` (model.liveness: a Node reading Ready whose kubelet has stopped renewing its Lease) says why a
    Ready Node is nevertheless off: power off, not usable, for that reason."""
    if silent is not None:
        return Observation(PowerState.OFF, Usability(False, silent))
    return Observation(observed_power(node), usability(node, group))
