"""Keep the lab's Job pods from starving the lab's control plane on a small machine.

In a cluster a Job's pod runs in a cgroup of its own, usually on another machine than the API server
and the operator. In the lab it is a process tree on the same cores. Linux groups processes by session
for CPU shares (autogroups, kernel.sched_autogroup_enabled=1): every session gets an equal share
whatever its processes' nice values, and ansible-runner starts ansible-playbook in a session of its own.
So 50 playbooks outweighed the operator 50 to 1, and its event loop woke tens of milliseconds late
while it used 2% of a core (benchmarks/controller_latency.py measured it).

`PodPriority` lowers the priority of every process in the pods' trees -- the process's nice value, and
the nice value of its autogroup -- to `nice`, once per process, on a sweep every `interval` seconds
while pods run. Best effort: on a system without /proc/<pid>/autogroup only the nice value changes, and
a process that is gone or not ours is skipped. Lowering is always allowed to the owner; nothing is
ever raised.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os

from homecluster_lab.executor.process import children_map, descendants

log = logging.getLogger("homecluster_lab.executor")


def parse_autogroup(text: str) -> int | None:
    """The nice value in /proc/<pid>/autogroup's text ("/autogroup-123 nice 0"), or None when empty.

    It is empty for a process still in the kernel's default autogroup (no setsid in its ancestry, as
    under some CI runners and containers), whose nice value cannot be set.
    """
    fields = text.split()
    return int(fields[-1]) if fields else None


def autogroup_nice(pid: int) -> int | None:
    """`pid`'s autogroup nice value (None: the default autogroup); OSError if gone or no autogroups."""
    with open(f"/proc/{pid}/autogroup") as fh:
        return parse_autogroup(fh.read())


def lower(pid: int, nice: int) -> None:
    """Lower `pid`'s nice value and its autogroup's to `nice` (never raise either)."""
    with contextlib.suppress(OSError):
        if os.getpriority(os.PRIO_PROCESS, pid) < nice:
            os.setpriority(os.PRIO_PROCESS, pid, nice)
    with contextlib.suppress(OSError, ValueError):
        current = autogroup_nice(pid)
        if current is not None and current < nice:
            with open(f"/proc/{pid}/autogroup", "w") as fh:
                fh.write(str(nice))


def _sweep(roots: frozenset[int], done: frozenset[int], nice: int) -> tuple[frozenset[int], int]:
    """(every process of the trees under `roots`, how many were lowered now); runs in a thread."""
    tree = children_map()
    alive = frozenset(p for root in roots for p in descendants(root, tree))
    fresh = alive - done
    for pid in fresh:
        lower(pid, nice)
    return alive, len(fresh)


class PodPriority:
    def __init__(self, nice: int, interval: float = 0.5) -> None:
        self.nice = nice
        self.interval = interval
        self._roots: set[int] = set()
        self._done: set[int] = set()
        self._task: asyncio.Task | None = None

    def add(self, pid: int) -> None:
        """A pod's process started: lower it now, and its descendants on every sweep until `discard`."""
        lower(pid, self.nice)
        self._done.add(pid)
        self._roots.add(pid)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._sweep_while_running())

    def discard(self, pid: int) -> None:
        self._roots.discard(pid)

    def sweep(self) -> int:
        """Lower every process of every pod tree not lowered yet; returns how many were lowered."""
        alive, fresh = _sweep(frozenset(self._roots), frozenset(self._done), self.nice)
        self._remember(alive)
        return fresh

    def _remember(self, alive: frozenset[int]) -> None:
        # forget the gone, so a reused pid is lowered again; keep roots added while a sweep ran
        self._done = set(alive) | (self._done & self._roots)

    async def _sweep_while_running(self) -> None:
        while self._roots:
            try:
                alive, _ = await asyncio.to_thread(_sweep, frozenset(self._roots), frozenset(self._done), self.nice)
                self._remember(alive)
            except Exception:  # never let a /proc oddity stop the executor
                log.exception("could not lower the pods' CPU priority")
            await asyncio.sleep(self.interval)

    async def close(self) -> None:
        self._roots.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
