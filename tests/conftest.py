"""The suite's order: the slowest directories' files first, so that `make test`'s two workers end together.

`make test` runs `pytest -n 2 --dist loadfile --no-loadscope-reorder`: a worker takes a whole file at a
time, in the order the files were collected (xdist's default, `--loadscope-reorder`, hands out the files
with the most tests first and would undo this order). Left so, the real control plane's files (tests/k8s,
minutes each, few tests) came last, and one worker ran them alone for the last minutes while the other sat
idle. Handing out the
long files first (longest-processing-time-first) lets the many short ones fill in at the end. The order
within a directory stays as collected; the order is the same on every worker, as xdist requires.
"""
from __future__ import annotations

from pathlib import Path

# the directories whose files take longest, longest first (each starts real processes: control planes,
# VMs, the operator with ansible-runner Jobs); every other directory follows in collection order
LONG_FIRST = ("k8s", "vm", "integration", "chaos", "install", "ansible")
TESTS = Path(__file__).resolve().parent


def _rank(item) -> int:
    try:
        top = Path(item.fspath).resolve().relative_to(TESTS).parts[0]
    except ValueError:
        return len(LONG_FIRST)
    return LONG_FIRST.index(top) if top in LONG_FIRST else len(LONG_FIRST)


def pytest_collection_modifyitems(session, config, items):
    items[:] = sorted(items, key=_rank)  # sorted() is stable: within a directory, as collected


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Which cluster-autoscaler versions the real-autoscaler tests ran (tests/k8s/k8s_autoscaler.py records
    each test's release as the `cluster_autoscaler` property), or why none did."""
    ran: dict[str, int] = {}
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        if getattr(report, "when", "call") != "call":
            continue
        for name, value in getattr(report, "user_properties", ()):
            if name == "cluster_autoscaler":
                ran[value] = ran.get(value, 0) + 1
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "autoscaler" in getattr(r, "nodeid", "")]
    if ran:
        terminalreporter.write_line("cluster-autoscaler versions that ran: " + ", ".join(
            f"{release} ({count} tests)" for release, count in sorted(ran.items())))
    elif skipped:
        from homecluster_lab.k8s.autoscaler_builds import discover, missing_reason
        found = ", ".join(b.release for b in discover())
        why = str(skipped[0].longrepr[-1]) if isinstance(skipped[0].longrepr, tuple) else ""
        terminalreporter.write_line(f"cluster-autoscaler: no version ran ({why or missing_reason()}); "
                                    f"found: {found or 'none'}")
