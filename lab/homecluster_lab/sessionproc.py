"""Start and stop a lab process that runs in a session of its own (the operator, the real control plane's
programs): under a parent-death signal, so a lab or test run that is killed leaves nothing behind, and
stopped as a whole process group, so what it forked goes with it."""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import Sequence


def with_pdeathsig(argv: Sequence[str]) -> list[str]:
    """argv run under `setpriv --pdeathsig TERM` where setpriv exists (util-linux, Linux), else unchanged.
    (setpriv rather than preexec_fn: the lab has threads.)"""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else list(argv)


async def stop_session(proc: asyncio.subprocess.Process | None, grace: float) -> None:
    """SIGTERM the process, then after `grace` s SIGKILL its whole process group -- also when the leader has
    already exited, since a child it forked may still be in the group -- and reap it."""
    if proc is None:
        return
    if proc.returncode is None:
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except asyncio.TimeoutError:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    await proc.wait()
