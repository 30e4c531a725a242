"""Shared by the install proofs on the real control plane (test_k8s_helm_lab, test_k8s_dist_lab): running
the installer's program, the bound of their waits (support.waits.until), and the claim that boots the machine.
(Imported by name: `conftest` is ambiguous across test folders.)"""
from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

BOUND = 400.0  # generous: 2 shared cores (and stretched by their load); the waits end when the thing happens


async def run_program(*argv: str, env: dict[str, str]) -> str:
    """Run an installer (helm, kubectl); its output, or a failure that shows it."""
    proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, f"{' '.join(argv)}:\n{out.decode()}"
    return out.decode()


def boot_claim(name: str, slot: str) -> dict[str, Any]:
    """A NodeClaim for `slot`, requested now, with a deadline far enough for a loaded machine."""
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    stamp = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim", "metadata": {"name": name},
            "spec": {"slotRef": slot, "requestedAt": stamp(now), "deadlineAt": stamp(now + dt.timedelta(minutes=20))}}
