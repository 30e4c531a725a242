"""Waiting in the lab tests (imported by name, like lab_objects)."""
from __future__ import annotations

import asyncio
from collections.abc import Callable

from load_factor import scaled


async def until(predicate: Callable[[], object], timeout: float = 5.0) -> bool:
    """True once predicate() holds, False after `timeout` seconds stretched by the machine's measured load
    (load_factor): a wait, never a speed target."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + scaled(timeout)
    while not predicate():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True
