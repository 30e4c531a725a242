#!/usr/bin/env python3
"""The path of one claim through the product's code, measured by running it (issue 27).

Runs one test of the lifecycle under a profile hook and reports the product code (controller/homecluster)
that ran during the test's body: the files crossed, the functions, the file-to-file calls, and, in the order
a reader meets the functions (first call first), how often that reading comes back to a file it had left.
Only the test's call phase counts (not its fixtures' setup), and only files under controller/homecluster.

The default test is one claim's whole life in the pool of tests/support/pool: created, booted, ready, deleted,
cordoned, shut down, released. Another commit's figures: run this file from a worktree of that commit (with
PYTHONPATH naming its controller/ and lab/, so its code is the one imported) and give its path of the test.

    .venv/bin/python scripts/claim_path.py [TEST_ID] [--files]
"""
from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PRODUCT = str(REPO / "controller" / "homecluster") + "/"
DEFAULT_TEST = "tests/lifecycle/reversal/test_reversal_and_shutdowns.py::" \
               "test_delete_of_ready_claim_cordons_shuts_down_completes"


@dataclass
class Trail:
    """What ran: functions in the order first called, and the file-to-file calls."""
    functions: dict[tuple[str, str, int], str] = field(default_factory=dict)  # key -> file, first call first
    edges: set[tuple[str, str]] = field(default_factory=set)

    def see(self, frame) -> None:
        code = frame.f_code
        if not code.co_filename.startswith(PRODUCT):
            return
        here = code.co_filename[len(PRODUCT):]
        self.functions.setdefault((here, code.co_qualname, code.co_firstlineno), here)
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(PRODUCT):
            caller = caller.f_back
        if caller is not None:
            there = caller.f_code.co_filename[len(PRODUCT):]
            if there != here:
                self.edges.add((there, here))

    def files(self) -> list[str]:
        return sorted(set(self.functions.values()))

    def returns(self) -> int:
        """Reading the functions in first-call order: how many times the reader enters a file already left."""
        stays: list[str] = []
        for file in self.functions.values():
            if not stays or stays[-1] != file:
                stays.append(file)
        return len(stays) - len(set(stays))


class Recorder:
    """A pytest plugin: the profile hook on while the test's body runs."""

    def __init__(self):
        self.path = Trail()
        self.outcome = None

    def _hook(self, frame, event, arg):
        if event == "call":
            self.path.see(frame)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        sys.setprofile(self._hook)
        threading.setprofile(self._hook)
        try:
            yield
        finally:
            sys.setprofile(None)
            threading.setprofile(None)

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            self.outcome = report.outcome


def report(path: Trail, show_files: bool) -> str:
    files = path.files()
    lines = ["files crossed: %d" % len(files),
             "functions run: %d" % len(path.functions),
             "file-to-file calls (distinct pairs): %d" % len(path.edges),
             "returns to a file already left (functions read in first-call order): %d" % path.returns()]
    if show_files:
        lines += ["  " + f for f in files]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("test", nargs="?", default=DEFAULT_TEST)
    parser.add_argument("--files", action="store_true", help="list the files crossed")
    args = parser.parse_args(argv)
    recorder = Recorder()
    code = pytest.main([args.test, "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts="],
                       plugins=[recorder])
    if code != 0 or recorder.outcome != "passed":
        print("claim_path: the test did not pass (exit %s): no figures" % code, file=sys.stderr)
        return 1
    print(report(recorder.path, args.files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
