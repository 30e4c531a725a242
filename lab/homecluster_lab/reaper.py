"""The lab's safety net for processes: nothing it started may outlive it.

Every part stops its own processes (the executor kills each Job's process tree, the fleet stops its
sshd's, the VM fronts their qemu and ipmi_sim). This module catches what slips through: many of those
children run in sessions of their own (so a Ctrl-C in the terminal reaches only the lab, which then
stops them in order), and some of them fork (ansible-runner, sshd's per-connection children). The
`homecluster lab` process therefore makes itself a child subreaper (Linux prctl): an orphaned
descendant is re-parented to the lab rather than to init, so walking the lab's descendants finds it,
and `reap_descendants` ends them after everything else has been stopped.

Only the CLI does this: a library user (a test running LabCluster in pytest) has descendants of its
own that the lab must not touch.
"""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import time

from homecluster_lab.executor.process import alive, process_tree

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process. False where the kernel does not offer it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of `pid` (default: this process), not `pid` itself."""
    root = os.getpid() if pid is None else pid
    return [p for p in process_tree(root) if p != root]


def _reap_zombies() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def reap_descendants(grace: float = 3.0) -> list[int]:
    """SIGTERM every remaining descendant, SIGKILL those alive after `grace` s; returns the pids found.

    Called when the lab has stopped everything it knows of, so anything found here is a leak; it is
    logged, since a part that leaks should be fixed rather than rely on this net.
    """
    found = descendants()
    if not found:
        return []
    log.warning("lab: %d process(es) outlived their owners, ending them: %s", len(found), found)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in descendants():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 2.0)
        while time.monotonic() < deadline:
            _reap_zombies()
            if not [p for p in descendants() if alive(p) and not _zombie(p)]:
                return found
            time.sleep(0.05)
    _reap_zombies()
    return found


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return stat[stat.rfind(b")") + 2:].split()[0] == b"Z"
    except OSError:
        return True
