"""Waiting for the control plane to act: until a check holds, or fail naming what never happened."""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable


async def until(check: Callable[[], Awaitable[Any]], what: str, timeout: float = 60.0) -> Any:
    """Until `await check()` returns something truthy (returned); fails after `timeout` naming `what`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = await check()
        if found:
            return found
        assert loop.time() < deadline, f"timed out after {timeout:g}s waiting for {what}"
        await asyncio.sleep(0.1)
