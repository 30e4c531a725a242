"""What a node's kubelet reads from the thing it runs on (a simulated machine, a VM, the runner).

A kubelet (node/kubelet.py) asks its node `view()`: a NodeView says what the Node should report now and when
that changes by itself. A SimMachine derives it from its pure boot model (machines/boot.py), a VM from what the
host sees of the guest (vm/node_watch.py); the runner is always up (`AlwaysUp`).
"""
from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from homecluster_lab.node.identity import Identity


class KubeletPhase(enum.Enum):
    ABSENT = "absent"  # the kubelet has never run since the lab started: nothing to report
    UP = "up"  # the kubelet runs and posts status
    NOT_READY = "not-ready"  # the kubelet stopped; the Node reads NotReady
    UNKNOWN = "unknown"  # stopped for longer than unknown_after_seconds


@dataclass(frozen=True)
class NodeView:
    """What the Node should say now, and when that will next change by itself."""

    phase: KubeletPhase
    ready: str | None  # "True" | "False" | "Unknown" | None (nothing to say)
    readiness_taints: bool  # the pool's readiness taints are still on
    os_up: bool  # the operating system runs (SSH answers)
    boot_count: int
    next_change: float | None  # monotonic time of the next change without outside action


class NodeFaults(Protocol):
    """The one fault knob a kubelet reads (machines/boot.Faults has it)."""

    flaps: bool


class NodeSource(Protocol):
    """What a Kubelet reads from its node: a SimMachine, a vm.node_watch.VmNode or an AlwaysUp."""

    identity: Identity
    faults: NodeFaults

    def view(self) -> NodeView: ...

    def now(self) -> float: ...

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]: ...


@dataclass(frozen=True)
class _NoFaults:
    flaps: bool = False


class AlwaysUp:
    """A node that is always up and Ready, with no readiness taints: the runner (executor/runnernode.py)."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.faults: NodeFaults = _NoFaults()

    def view(self) -> NodeView:
        return NodeView(phase=KubeletPhase.UP, ready="True", readiness_taints=False, os_up=True, boot_count=1,
                        next_change=None)

    def now(self) -> float:
        return time.monotonic()

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        return lambda: None  # nothing ever changes by itself
