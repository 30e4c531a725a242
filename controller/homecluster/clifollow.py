"""Progress while a CLI verb waits: one line each time a claim's phase, attempt or reason changes.

`homecluster claim --wait` and `homecluster release` both follow one claim until it reaches what they
wait for. The lines are built by `describe` (pure: the claim, or None once it is gone, and the time
waited); `follow` reads the claim again every `interval` seconds and prints a line only on change.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TextIO

Claim = Mapping[str, Any] | None


def state(claim: Claim) -> tuple:
    """What a person watches for: gone, or phase, attempt, reason and whether it is being deleted."""
    if claim is None:
        return ("gone",)
    status = claim.get("status") or {}
    return (status.get("phase") or "pending", status.get("attempt"), status.get("reason"),
            bool((claim.get("metadata") or {}).get("deletionTimestamp")))


def describe(name: str, claim: Claim, waited: float) -> str:
    stamp = f"[{int(waited):>4}s]"
    if claim is None:
        return f"{stamp} nodeclaim {name}: gone"
    phase, attempt, reason, deleting = state(claim)
    parts = [phase]
    if attempt:
        parts.append(f"attempt {attempt}")
    if reason:
        parts.append(f"reason {reason}")
    message = (claim.get("status") or {}).get("message")
    line = f"{stamp} nodeclaim {name}: {', '.join(parts)}{' (deleting)' if deleting else ''}"
    return f"{line}: {message}" if message else line


async def follow(name: str, get: Callable[[], Awaitable[Claim]], done: Callable[[Claim], bool], out: TextIO,
                 timeout: float, interval: float = 1.0) -> tuple[bool, Claim]:
    """Print each change of the claim until `done(claim)`: (True, the claim, None once gone).

    (False, the last claim read) when `timeout` seconds pass first; the last line printed says where it stood.
    """
    start = time.monotonic()
    last: tuple | None = None
    while True:
        claim = await get()
        if state(claim) != last:
            out.write(describe(name, claim, time.monotonic() - start) + "\n")
            out.flush()
            last = state(claim)
        if done(claim):
            return True, claim
        if time.monotonic() - start > timeout:
            return False, claim
        await asyncio.sleep(interval)
