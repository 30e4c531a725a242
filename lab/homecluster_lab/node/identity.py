"""Who a simulated node is to Kubernetes and to the network, and the readiness taints it registers with."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str = "NoSchedule"
    value: str | None = None

    def to_api(self) -> dict:
        out = {"key": self.key, "effect": self.effect}
        if self.value is not None:
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class Identity:
    """Who the machine is to Kubernetes and to the network."""

    name: str
    slot: str
    mac: str
    node_name: str
    provider_id: str
    labels: dict = field(default_factory=dict)
    capacity: dict = field(default_factory=lambda: {"cpu": "4", "memory": "8Gi", "pods": "110"})
    allocatable: dict | None = None
    readiness_taints: tuple[Taint, ...] = ()
