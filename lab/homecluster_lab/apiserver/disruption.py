"""PodDisruptionBudget arithmetic, as the disruption controller and the eviction subresource do it. Pure.

A pod is healthy when it is Running, Ready=True and not being deleted. expectedPods is, as in the real
disruption controller, the sum of the scale (spec.replicas, or spec.parallelism for Jobs) of the controllers
owning the selected pods; a pod without such a controller counts as one. So an evicted pod that no controller
has replaced yet still counts as expected, and the budget stays closed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from .selectors import selector_object_matches

MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."


def pod_healthy(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def selects(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    if pdb["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    # policy/v1: an empty selector selects every pod in the namespace; a missing one selects none
    selector = (pdb.get("spec") or {}).get("selector")
    return selector is not None and selector_object_matches(selector, pod["metadata"].get("labels") or {})


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


@dataclass(frozen=True)
class Budget:
    expected: int
    current_healthy: int
    desired_healthy: int

    @property
    def disruptions_allowed(self) -> int:
        return max(0, self.current_healthy - self.desired_healthy)

    def status(self, generation: int) -> dict[str, Any]:
        return {"currentHealthy": self.current_healthy, "desiredHealthy": self.desired_healthy,
                "disruptionsAllowed": self.disruptions_allowed, "expectedPods": self.expected,
                "observedGeneration": generation}


ScaleOf = Callable[[str], "int | None"]  # controller uid -> its scale, None when unknown


def _controller_uid(pod: dict[str, Any]) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


def expected_pods(selected: list[dict[str, Any]], scale_of: ScaleOf) -> int:
    total, seen = 0, set()
    for p in selected:
        uid = _controller_uid(p)
        scale = scale_of(uid) if uid else None
        if scale is None:
            total += 1
        elif uid not in seen:
            seen.add(uid)
            total += scale
    return total


def budget(pdb: dict[str, Any], pods: list[dict[str, Any]], scale_of: ScaleOf = lambda uid: None) -> Budget:
    selected = [p for p in pods if selects(pdb, p)]
    expected = expected_pods(selected, scale_of)
    healthy = sum(1 for p in selected if pod_healthy(p))
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, round_up=True))
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    else:
        desired = expected  # neither set: no voluntary disruption
    return Budget(expected, healthy, desired)


def eviction_verdict(pod: dict[str, Any], pdbs: list[dict[str, Any]], pods: list[dict[str, Any]],
                     scale_of: ScaleOf = lambda uid: None) -> tuple[str, str, str]:
    """("allow" | "deny" | "error", cause message, pdb name) for evicting `pod` under these budgets."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):
        return "allow", "", ""
    matching = [b for b in pdbs if selects(b, pod)]
    if not matching:
        return "allow", "", ""
    if len(matching) > 1:
        return "error", ("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                         "does not support."), ""
    pdb = matching[0]
    b = budget(pdb, pods, scale_of)
    if not pod_healthy(pod) and b.current_healthy >= b.desired_healthy:
        return "allow", "", pdb["metadata"]["name"]
    if b.disruptions_allowed > 0:
        return "allow", "", pdb["metadata"]["name"]
    name = pdb["metadata"]["name"]
    return "deny", (f"The disruption budget {name} needs {b.desired_healthy} healthy pods and has "
                    f"{b.current_healthy} currently"), name
