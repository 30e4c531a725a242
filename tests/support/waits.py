"""The one wait of the system tests (issues 27 and 28): until a check holds, or fail naming what never happened.

A wait ends as soon as its check holds; its timeout is only the give-up, multiplied by the machine's measured
load (load_factor) and by BOUND_SCALE, so a busy machine slows a test down instead of failing it.
"""
from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from load_factor import load_factor

# Every bound is multiplied by this too: 1 on the in-memory lab. The integration scenarios run on the real control
# plane (tests/k8s/k8s_pool.real_pool) raise it while they run, as kube-apiserver, etcd, its controllers and the
# scheduler share the same 2 cores. Bounds only: the waits end when the thing happens.
BOUND_SCALE = 1.0
INTERVAL = 0.1  # seconds between two checks


async def until(check: Callable[[], Any], what: str | Callable[[], str], timeout: float = 30.0, *,
                detail: Callable[[], str] | None = None, interval: float = INTERVAL) -> Any:
    """What `check()` (a function, or one returning an awaitable) returns, once that is true.

    After `timeout` seconds (times BOUND_SCALE and load_factor(), measured now) it fails with an AssertionError
    that names `what` and, on the lines below, `detail()`. Either may be a callable, called only then, so a
    status or a log tail in it is the one at the give-up, not at the start."""
    held, value, bound = await _poll(check, timeout, interval)
    if not held:
        raise AssertionError(timed_out(bound, what, detail))
    return value


async def poll(check: Callable[[], Any], timeout: float = 30.0, *, interval: float = INTERVAL) -> Any:
    """As `until`, but a give-up is not a failure: the check's last (false) value, for the caller to judge
    (`assert await poll(...)`, or a branch on whether a thing happened in time)."""
    return (await _poll(check, timeout, interval))[1]


async def _poll(check: Callable[[], Any], timeout: float, interval: float) -> tuple[bool, Any, float]:
    """(whether the check held, its last value, the bound in seconds) of checking every `interval` seconds."""
    bound = timeout * BOUND_SCALE * load_factor()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return True, value, bound
        if loop.time() > deadline:
            return False, value, bound
        await asyncio.sleep(interval)


def timed_out(bound: float, what: str | Callable[[], str], detail: Callable[[], str] | None = None) -> str:
    """The failure of a wait that gave up after `bound` seconds."""
    said = f"timed out after {bound:.1f}s waiting for {what() if callable(what) else what}"
    return f"{said}\n{detail()}" if detail is not None else said
