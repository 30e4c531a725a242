"""One program of the real control plane as a child process: started, waited on until ready, stopped.

Each runs in a session of its own (a Ctrl-C in the terminal reaches the lab only, which stops them in
order) and under `setpriv --pdeathsig TERM` where setpriv exists, so a lab or a test run that is
killed outright does not leave an API server behind. Readiness is an HTTP(S) probe that answers 200
(`/readyz`, `/healthz`), never a sleep; a program that exits first fails the wait with its log's tail.
"""
from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from homecluster_lab.config import LabError
from homecluster_lab.sessionproc import stop_session, with_pdeathsig


class StartStop:
    """An `async with` for a set of processes: start() on entry, and stop() on exit -- and also when start()
    fails half-way, so what did start is not left running (Flux's controllers, the real node)."""

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self):  # noqa: ANN204 - the subclass's own type
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class Component:
    def __init__(self, name: str, argv: Sequence[str], log_path: Path):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = with_pdeathsig(self.argv)
        with open(self.log_path, "ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def exited(self) -> int | None:
        return self.proc.returncode if self.proc else None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    async def wait_ready(self, url: str, timeout: float, ssl_context: ssl.SSLContext | bool = True) -> None:
        """Until GET `url` answers 200; LabError (with the log's tail) on exit or after `timeout` s."""
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while True:
                rc = self.exited()
                if rc is not None:
                    raise LabError(f"{self.name} exited with code {rc} before it was ready; "
                                   f"its last lines ({self.log_path}):\n{self.log_tail()}")
                try:
                    async with session.get(url, ssl=ssl_context) as answer:
                        if answer.status == 200:
                            return
                        last = f"HTTP {answer.status}: {(await answer.text())[-500:]}"
                except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
                    last = f"{type(exc).__name__}: {exc}"
                if time.monotonic() > deadline:
                    raise LabError(f"{self.name} was not ready at {url} within {timeout:g}s (last: {last}); "
                                   f"its last lines ({self.log_path}):\n{self.log_tail()}")
                await asyncio.sleep(0.1)

    async def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL to its whole process group after `grace` s."""
        await stop_session(self.proc, grace)

    async def stop_keeping_log(self, keep_log_as: str | None) -> None:
        """stop(); with `keep_log_as`, its log moved aside (<name>.<keep_log_as>.log) for a next try to start anew."""
        await self.stop()
        if keep_log_as and self.log_path.exists():
            self.log_path.rename(self.log_path.with_suffix(f".{keep_log_as}.log"))
