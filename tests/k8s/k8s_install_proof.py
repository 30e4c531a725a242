"""Shared by the install proofs on the real control plane (test_k8s_helm_lab, test_k8s_dist_lab): running
the installer's program, waiting for what the install leads to, and the claim that boots the machine.
(Imported by name: `conftest` is ambiguous across test folders.)"""
from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import time
from typing import Any, Callable

BOUND = 400.0  # generous: 2 shared, loaded cores; the waits end when the thing happens


async def run_program(*argv: str, env: dict[str, str]) -> str:
    """Run an installer (helm, kubectl); its output, or a failure that shows it."""
    proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, f"{' '.join(argv)}:\n{out.decode()}"
    return out.decode()


async def until(what: str, check: Callable[[], Any], timeout: float = BOUND, tail: Callable[[], str] = lambda: "") -> Any:
    """Until `check()` (sync or async) returns something truthy; `tail()` (the operator's log) in the failure."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{tail()}"
        await asyncio.sleep(0.2)


def boot_claim(name: str, slot: str) -> dict[str, Any]:
    """A NodeClaim for `slot`, requested now, with a deadline far enough for a loaded machine."""
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    stamp = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim", "metadata": {"name": name},
            "spec": {"slotRef": slot, "requestedAt": stamp(now), "deadlineAt": stamp(now + dt.timedelta(minutes=20))}}
