"""The lab's Job pods yield the CPU to its control plane: every process of a pod's tree, in whatever
session it starts, runs at the executor's pod_nice -- its own nice value and its session's autogroup."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from homecluster_lab.executor.priority import PodPriority, autogroup_nice, lower, parse_autogroup

pytestmark = pytest.mark.lab
AUTOGROUPS = Path("/proc/self/autogroup").exists()


def tree_in_two_sessions(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """A root in a session of its own that starts a grandchild in another new session (as
    ansible-runner starts ansible-playbook under a pty): (the root, the grandchild's pid)."""
    pidfile = tmp_path / "grandchild.pid"
    code = ("import os, subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
            f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
            "time.sleep(60)\n")
    root = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text():
            return root, int(pidfile.read_text())
        time.sleep(0.02)
    root.kill()
    raise AssertionError("the grandchild never started")


async def test_every_process_of_the_tree_is_lowered_in_its_own_session_too(tmp_path):
    root, grandchild = tree_in_two_sessions(tmp_path)
    priority = PodPriority(nice=7, interval=0.05)
    try:
        assert os.getpriority(os.PRIO_PROCESS, grandchild) == os.getpriority(os.PRIO_PROCESS, 0)
        priority.add(root.pid)
        assert os.getpriority(os.PRIO_PROCESS, root.pid) == 7  # at once, before any sweep
        for _ in range(100):
            if os.getpriority(os.PRIO_PROCESS, grandchild) == 7:
                break
            await asyncio.sleep(0.02)
        assert os.getpriority(os.PRIO_PROCESS, grandchild) == 7
        if AUTOGROUPS:
            assert autogroup_nice(root.pid) == 7 and autogroup_nice(grandchild) == 7
            assert os.getsid(grandchild) != os.getsid(root.pid), "the grandchild has a session (autogroup) of its own"
            # None: the test runs in the kernel's default autogroup (CI does), which has no nice of its own
            assert autogroup_nice(os.getpid()) != 7, "the executor's own session is untouched"
        assert priority.sweep() == 0, "each process is lowered once"
    finally:
        await priority.close()
        os.kill(grandchild, 9)
        root.kill()
        root.wait()


def test_lower_never_raises_a_priority_and_skips_the_gone():
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        lower(proc.pid, 12)
        lower(proc.pid, 3)  # asking for a higher priority changes nothing
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == 12
    finally:
        proc.kill()
        proc.wait()
    lower(proc.pid, 5)  # gone: no error


def test_a_process_in_the_default_autogroup_reads_as_having_none():
    """CI runs the tests in the kernel's default autogroup, whose /proc file is empty: not an error."""
    assert parse_autogroup("/autogroup-48511 nice 10\n") == 10
    assert parse_autogroup("") is None
