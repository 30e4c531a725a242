"""Collect the suite once, split over the cores, before `make test` starts its workers.

Each pytest-xdist worker collects every test file, and pytest rewrites a file's asserts before it imports it.
In a fresh clone nothing is rewritten yet, so all five workers of `make test` rewrite all ~340 files at
once: measured on 2 cores, 47 s from a fresh clone until five workers had collected, against 15 s when the
rewritten files were already in __pycache__. This collects the test folders in one pytest per core
(`--collect-only`, nothing runs), which leaves the rewritten files and the compiled project modules in
__pycache__ for the workers. It prints what it did and how long it took; it fails only where a collection
fails, with pytest's own words (the run that follows would fail the same way).

  usage: scripts/warm-test-cache.py [PYTHON]   (default: this interpreter; the Makefile passes .venv's)
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


def groups(folders: list[tuple[str, int]], count: int) -> list[list[str]]:
    """The folders (name, number of test files) in `count` groups of about equal files, largest first."""
    out: list[list[str]] = [[] for _ in range(max(1, count))]
    sizes = [0] * len(out)
    for name, files in sorted(folders, key=lambda f: (-f[1], f[0])):
        i = sizes.index(min(sizes))
        out[i].append(name)
        sizes[i] += files
    return [g for g in out if g]


def test_folders() -> list[tuple[str, int]]:
    """Each folder of tests/ that holds a test file, with how many it holds."""
    counts = [(f"tests/{d.name}", sum(1 for _ in d.rglob("test_*.py"))) for d in sorted(TESTS.iterdir()) if d.is_dir()]
    return [(name, files) for name, files in counts if files]


def main(argv: list[str]) -> int:
    python = argv[1] if len(argv) > 1 else sys.executable
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # the point is to write them
    runs = [subprocess.Popen([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *group],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for group in groups(test_folders(), os.cpu_count() or 1)]
    failed = 0
    for run in runs:
        out, _ = run.communicate()
        if run.returncode not in (0, 5):  # 5: nothing collected
            failed += 1
            sys.stdout.write(out)
    print(f"warm-test-cache: collected the suite in {len(runs)} parts in {time.monotonic() - started:.1f} s "
          f"(asserts rewritten, modules compiled into __pycache__ for the workers)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
