"""The product's layers and the imports it must never make, as .importlinter states them.

`lint-imports` builds the import graph of the installed package and checks each contract: a module that
imports from a layer above its own, a product module that imports the lab or a second Kubernetes client,
or a new top-level module no layer names (the layers contract is exhaustive) fails this test.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_are_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert lint, "lint-imports is not installed: pip install -e '.[test]'"
    done = subprocess.run([lint, "--config", str(ROOT / ".importlinter"), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout, done.stdout
