"""scripts/build-k8s.sh and homecluster_lab.k8s.binaries must agree on where the programs are: the script
builds into the folder the launcher looks in (both key it by sha256 of go.mod + go.sum)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from homecluster_lab.k8s import binaries

REPO = Path(__file__).resolve().parents[2]


def _module(tmp_path: Path, pin: str) -> Path:
    module = tmp_path / pin
    module.mkdir()
    (module / "go.mod").write_text(f"module example.dev/{pin}\n\ngo 1.25.0\n")
    (module / "go.sum").write_text("")
    (module / "binaries").write_text("# nothing to build: the script only says where its folder is\n")
    return module


def _script_folder(module: Path, cache: Path) -> str:
    done = subprocess.run([str(REPO / "scripts" / "build-k8s.sh"), str(module)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "HOMECLUSTER_K8S_CACHE": str(cache)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("build-k8s: all binaries present in "), done.stdout
    return done.stdout.strip().rsplit(" ", 1)[1]


def test_script_and_launcher_use_the_same_folder(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HOMECLUSTER_K8S_CACHE", str(cache))
    monkeypatch.delenv("HOMECLUSTER_K8S_BIN", raising=False)
    one, two = _module(tmp_path, "one"), _module(tmp_path, "two")
    assert _script_folder(one, cache) == str(binaries.bin_dir(one))
    # another pin, another folder
    assert _script_folder(two, cache) == str(binaries.bin_dir(two)) != str(binaries.bin_dir(one))

