"""One container's process: started in its own session, output to a log file, killed with its whole tree.

ansible-runner starts ansible-playbook under a pseudo-terminal in a session of its own, so killing the
process group is not enough: the tree is walked through /proc and every descendant is signalled.
"""
from __future__ import annotations

import asyncio
import os
import signal
from collections import deque
from pathlib import Path


def children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name is in parentheses and may contain spaces: parse after the last ")"
        fields = stat[stat.rfind(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants alive now."""
    return descendants(pid, children_map())


def descendants(pid: int, children: dict[int, list[int]]) -> list[int]:
    """pid and all its descendants in `children` (a children_map())."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _signal_all(pids: list[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class ContainerProcess:
    """A started container command. `wait()` returns its exit code the way a kubelet reports it."""

    def __init__(self, proc: asyncio.subprocess.Process, log_file: Path):
        self.proc, self.log_file = proc, log_file
        self.pid = proc.pid

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str], cwd: Path, log_file: Path) -> "ContainerProcess":
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as log:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=asyncio.subprocess.STDOUT,
                env=env, cwd=str(cwd), start_new_session=True,
            )
        return cls(proc, log_file)

    async def wait(self) -> int:
        """The exit code; a death by signal N is 128 + N, as container runtimes report it."""
        rc = await self.proc.wait()
        return 128 - rc if rc < 0 else rc

    async def kill(self, grace: float) -> None:
        """SIGTERM the whole tree, then SIGKILL whatever is left after `grace` seconds."""
        tree = process_tree(self.pid) if self.proc.returncode is None else []
        _signal_all(tree, signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), timeout=grace)
        except asyncio.TimeoutError:
            pass
        leftovers = set(tree)
        if self.proc.returncode is None:
            leftovers.update(process_tree(self.pid))
        for p in list(leftovers):
            if alive(p):
                leftovers.update(process_tree(p))
        _signal_all([p for p in leftovers if alive(p)], signal.SIGKILL)
        if self.proc.returncode is None:
            await self.proc.wait()

    def tail(self, lines: int = 20, max_bytes: int = 4096) -> str:
        """The last lines of the output, at most max_bytes (the kubelet's termination message cap is 4096)."""
        try:
            with open(self.log_file, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 64 * 1024))
                data = fh.read()
        except OSError:
            return ""
        last = deque(data.decode(errors="replace").splitlines(), maxlen=lines)
        return "\n".join(last)[-max_bytes:]
