"""A deduplicating work queue of slot names, with delayed adds, for a few async workers.

The rules that make the per-slot pass safe to run from many triggers at once:
- a key is queued at most once, however many events name it before a worker takes it;
- a key is never processed by two workers at once: an add while it runs marks it dirty, and it is
  queued again when the running pass ends (so no event is lost, and no pass races another);
- `add_after(key, delay)` keeps only the earliest pending timer per key: timers are how deadlines,
  MachineGone expiries, hold-offs and TTLs come back to a slot without polling.

`on_wait(seconds)` is told, each time a worker takes a key, how long the key waited since it was
first asked for (an add that found it already queued or running does not restart the clock): the
time a slot's news spends in our queue before any pass reads it, the part of the controller-added
latency that more workers shorten.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class WorkQueue:
    def __init__(self, on_wait: Callable[[float], None] | None = None) -> None:
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._asked: dict[str, float] = {}  # key -> when it was first asked for (monotonic)
        self._on_wait = on_wait
        self._queued: set[str] = set()
        self._running: set[str] = set()
        self._dirty: set[str] = set()
        self._timers: dict[str, tuple[float, asyncio.TimerHandle]] = {}
        self._closed = False

    def add(self, key: str) -> None:
        if self._closed or not key:
            return
        self._asked.setdefault(key, time.monotonic())
        if key in self._running:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        """Add `key` after `delay` seconds, unless an earlier timer for it is already pending."""
        if self._closed:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending[0] <= when:
                return
            pending[1].cancel()
        self._timers[key] = (when, loop.call_at(when, self._fire, key))

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def next_timer(self, key: str) -> float | None:
        """Seconds until the pending timer of `key` fires (None: none), for tests and logs."""
        pending = self._timers.get(key)
        return None if pending is None else pending[0] - asyncio.get_running_loop().time()

    async def get(self) -> str:
        """The next key to process; the caller must call done(key) when its pass ends."""
        key = await self._queue.get()
        self._queued.discard(key)
        self._running.add(key)
        asked = self._asked.pop(key, None)
        if asked is not None and self._on_wait is not None:
            self._on_wait(time.monotonic() - asked)
        return key

    def done(self, key: str) -> None:
        self._running.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def __len__(self) -> int:
        return len(self._queued)

    @property
    def idle(self) -> bool:
        return not self._queued and not self._running

    def close(self) -> None:
        self._closed = True
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
