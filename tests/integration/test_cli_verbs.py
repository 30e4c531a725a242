"""The everyday verbs against the real operator in the lab: `homecluster claim --wait`, `status`, `release`.

Each verb runs as the user runs it (a subprocess of `python -m homecluster` with the lab's kubeconfig), makes
real requests to the lab API server, and the test asserts what the user reads: the progress lines while it
waits, the tables of `status`, and that the claim really is ready, then really gone.
"""
from __future__ import annotations

import asyncio
import os
import sys

import pytest
from integration_pool import CLAIMS

pytestmark = [pytest.mark.lab]


async def homecluster(pool, *args: str, timeout: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", *args, "--kubeconfig", str(pool.lab.kubeconfig_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ})
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode, out.decode(), err.decode()


def row(text: str, first: str) -> list[str]:
    """The cells of the table row whose first cell is `first`."""
    return next(line.split() for line in text.splitlines() if line.split()[:1] == [first])


async def test_claim_wait_status_release(pool):
    rc, out, err = await homecluster(pool, "claim", "worker-01", "--wait", "--requested-by", "alice")
    assert rc == 0, err + out
    lines = out.splitlines()
    name = lines[0].split('"')[1]
    assert lines[0].startswith(f'nodeclaim "{name}" created for slot "worker-01"')
    # one line per change, each with the time waited: it was seen booting, then ready
    progress = [line for line in lines if line.startswith("[")]
    assert any(f"nodeclaim {name}: booting, attempt 1" in line for line in progress), out
    assert f"nodeclaim {name}: ready, attempt 1" in progress[-1], out
    assert lines[-1] == 'slot "worker-01" is ready'
    assert pool.status(name)["phase"] == "ready"

    rc, out, err = await homecluster(pool, "status")
    assert rc == 0, err
    assert out.startswith("slots (2, 1 on)")
    name_, group, power, phase, claim, attempt, _age = row(out, "worker-01")
    assert (power, phase, claim, attempt) == ("on", "ready", name, "1")
    assert row(out, "worker-02")[2:5] == ["off", "off", "-"]
    assert row(out, name)[1:4] == ["worker-01", "ready", "1"]
    assert "\njobs running (" in out

    rc, out, err = await homecluster(pool, "release", "worker-01", "--timeout", "90")
    assert rc == 0, err + out + pool.lab.operator.log_tail(60)
    lines = out.splitlines()
    assert lines[0] == f'nodeclaim "{name}" of slot "worker-01" deleted; the operator reverses it'
    assert any(f"nodeclaim {name}: ready, attempt 1 (deleting)" in line for line in lines), out
    assert lines[-2].endswith(f"nodeclaim {name}: gone") and lines[-1] == 'slot "worker-01" released'
    assert pool.claim_obj(name) is None
    assert pool.lab.machine("worker-01").power_state() == "off"

    rc, out, _ = await homecluster(pool, "release", "worker-01")
    assert (rc, out) == (0, 'slot "worker-01" has no live claim: nothing to release\n')


async def test_status_shows_a_running_startup_job(pool):
    await pool.claim("c-job")
    await pool.phase("c-job", "booting")
    rc, out, err = await homecluster(pool, "status")
    assert rc == 0, err
    kind, slot, state = row(out, "c-job-startup")[1:4]
    assert (kind, slot) == ("startup", "worker-01") and state in ("starting", "running")
    await pool.api.delete(CLAIMS, "c-job")
    await pool.gone("c-job", timeout=60)
