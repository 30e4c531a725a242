"""scripts/under-load.sh (make test-under-load): competing CPU workers exactly while the command runs."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "under-load.sh"
pytestmark = pytest.mark.skipif(not shutil.which("stress-ng"), reason="needs stress-ng (scripts/system-deps.sh)")

# Printed by the command under load: the stress-ng CPU workers it competes with (this run's: children of the
# stress-ng the script started, not those of a `make test-under-load` around this test), as "pid nice" lines.
SHOW_WORKERS = """
until [ "$(pgrep -c -P "$UNDER_LOAD_PID" -x stress-ng-cpu)" -ge "$LOAD_CPUS" ]; do sleep 0.05; done
for pid in $(pgrep -P "$UNDER_LOAD_PID" -x stress-ng-cpu); do echo "$pid $(ps -o ni= -p "$pid")"; done
echo "declared ${HOMECLUSTER_TEST_BUSY_CPUS:-none}"
exit 3
"""


def alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def test_the_command_runs_beside_two_normal_priority_workers_that_end_with_it():
    env = dict(os.environ, LOAD_CPUS="2")
    result = subprocess.run([str(SCRIPT), "sh", "-c", SHOW_WORKERS], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 3, result.stderr  # the command's own exit status
    workers = [line.split() for line in result.stdout.splitlines() if line and line[0].isdigit()]
    assert len(workers) >= 2, result.stdout
    ours = str(os.nice(0))  # the test's own priority (0 unless pytest itself runs under nice)
    assert all(nice == ours for _, nice in workers), workers  # they compete with the command, not yield to it
    # the tests' load factor is told of them (tests/load_factor.py): labs built before the average rose
    assert "declared 2" in result.stdout.splitlines(), result.stdout
    deadline = time.monotonic() + 30  # a bound on the wait only, not on speed
    while any(alive(int(pid)) for pid, _ in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(int(pid)) for pid, _ in workers), "stress-ng outlived the command"
