"""The suite's order and work units (tests/suite_time.py: longest first, so that `make test`'s workers end
together, and the real-autoscaler file shared by version) and its end-of-run summaries.

`make test` runs `pytest -n 5 --dist loadfile --no-loadscope-reorder`: a worker takes a whole unit at a time
in the order the files were collected (xdist's default, `--loadscope-reorder`, hands out the units with the
most tests first and would undo this order).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import suite_time

# pytest puts tests/ and the folder of every collected test file on sys.path (rootdir import mode, no
# __init__.py). These folders hold helper modules other folders import by bare name, so they are put there
# once, here, whichever folders a run collects (tests/README.md: "Imports").
_TESTS = Path(__file__).resolve().parent
SHARED_HELPERS = (_TESTS / "install", _TESTS / "integration", _TESTS / "lab", _TESTS / "ansible",
                  _TESTS.parent / "benchmarks")
for _folder in SHARED_HELPERS:
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

_CPU = suite_time.CpuClock()


def pytest_collection_modifyitems(session, config, items):
    items[:] = suite_time.order(items)
    _CPU.lap()  # collection's CPU is no test's


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each report carries the CPU its phase used (suite_time.record_cpu), for the per-unit report."""
    outcome = yield
    suite_time.record_cpu(_CPU, outcome.get_result())


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadfile":
        return suite_time.scheduler(config, log)
    return None


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The slowest work units and each worker's share (suite_time.report); which cluster-autoscaler versions
    the real-autoscaler tests ran (tests/k8s/k8s_autoscaler.py records each test's release as the
    `cluster_autoscaler` property), or why none did."""
    suite_time.report(terminalreporter)
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
