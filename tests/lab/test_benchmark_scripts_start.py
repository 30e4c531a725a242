"""Every script in benchmarks/ starts: `--help` answers with its usage and exit status 0; the helper modules
there (no `__main__`) import.

The scripts are run by hand (docs/reliability.md, docs/testing.md), never by the suite, so an import they lost
went unseen: benchmarks/chaos.py could not import tests/support after the tests became a package, and the
campaign of 2026-12-04 failed at its first line. Run from another folder, as a user might.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FILES = sorted((REPO / "benchmarks").glob("*.py"))
SCRIPTS = [p for p in FILES if '__name__ == "__main__"' in p.read_text()]
HELPERS = [p for p in FILES if p not in SCRIPTS]


def test_there_are_benchmark_scripts() -> None:
    assert len(SCRIPTS) >= 8 and HELPERS, [p.name for p in FILES]


@pytest.mark.parametrize("helper", HELPERS, ids=lambda p: p.name)
def test_the_helper_module_imports(helper: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(helper.parent)!r}); "
                           f"import {helper.stem}"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{helper.name}: exit {done.returncode}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_script_starts_and_says_its_usage(script: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{script.name} --help: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert "usage:" in done.stdout, done.stdout[-1000:]
