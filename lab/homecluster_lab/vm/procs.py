"""Process facts from /proc, for processes we did not start as children (daemonized qemu, ipmi_sim).

A daemonized process is re-parented to PID 1, which may never reap it (it does not on the lab's
hosts): a dead VM can linger as a zombie, so "alive" means present and not a zombie.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def state(pid: int) -> str | None:
    """The one-letter state from /proc/<pid>/stat (R, S, Z, ...), or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def alive(pid: int) -> bool:
    """True if the process exists and has not exited (zombies and dead entries count as exited)."""
    return state(pid) not in (None, "Z", "X")


def cmdline(pid: int) -> list[str]:
    """The argv of a process, empty if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def read_pid(pid_file: Path) -> int | None:
    """The pid in a pid file, or None if the file is missing or not a number."""
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def kill_and_wait(pid: int, sig: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
    """Send sig and wait until the process is no longer alive; True if it is gone in time."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def find(predicate) -> list[int]:
    """Pids of live processes whose argv satisfies predicate(argv)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and alive(int(entry.name)) and predicate(cmdline(int(entry.name))):
            pids.append(int(entry.name))
    return pids


def session_of(pid: int) -> int | None:
    """The session id of a process (field 6 of /proc/<pid>/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[3])


def reap(pid: int, patience: float = 0.5) -> bool:
    """Collect the exit status of `pid` if it is a finished child of ours; True once nothing is left to do.

    Daemonized qemu processes (and the soft-off helper of ipmi_sim's chassis program) are orphans:
    they are re-parented to the nearest child subreaper, which is `homecluster lab` itself (see
    homecluster_lab.reaper), and would linger there as zombies until the lab exits. Only pids the
    lab never spawns directly are passed here, so no owner's own wait() is ever raced. A pid that is
    not our child (re-parented to init instead) returns True at once; a child still running, False.
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if done == pid:
            return True
        # Still running: try again later. Exiting (a zombie /proc already shows, not yet waitable): shortly.
        if alive(pid) or time.monotonic() > deadline:
            return False
        time.sleep(0.01)
