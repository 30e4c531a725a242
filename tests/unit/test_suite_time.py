"""The suite's work units and their order (tests/suite_time.py), and that `make test`'s xdist run uses them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import suite_time

TESTS = Path(suite_time.__file__).parent
CA = "tests/k8s/test_k8s_autoscaler.py"


def test_the_autoscaler_file_is_one_unit_per_version_and_every_other_file_one_unit() -> None:
    assert suite_time.unit(f"{CA}::test_exact[1.36.1]") == f"{CA}[1.36.1]"
    assert suite_time.unit(f"{CA}::test_exact[1.34.5-tolerating]") == f"{CA}[1.34.5]"
    assert suite_time.unit(f"{CA}::test_skipped[no-autoscaler]") == CA
    assert suite_time.unit("tests/k8s/test_k8s_autoscaler_drain.py::t[1.35.2]") == \
        "tests/k8s/test_k8s_autoscaler_drain.py[1.35.2]"
    assert suite_time.unit("tests/unit/test_x.py::test_a[1.36.1]") == "tests/unit/test_x.py"
    assert suite_time.unit("tests/unit/test_x.py::Class::test_b") == "tests/unit/test_x.py"


def test_units_stay_whole_and_go_longest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = ["tests/unit/test_a.py::t1", "tests/k8s/test_b.py::t1", "tests/unit/test_a.py::t2",
           f"{CA}::t[1.34.5]", f"{CA}::u[1.34.5]", f"{CA}::t[1.36.1]", "tests/vm/test_c.py::t", "tests/x/test_d.py::t"]
    monkeypatch.setattr(suite_time, "SECONDS", {f"{CA}[1.36.1]": 300.0, "tests/x/test_d.py": 200.0})
    ordered = [i.nodeid for i in suite_time.order([SimpleNamespace(nodeid=n) for n in ids])]
    assert ordered == [f"{CA}::t[1.36.1]", "tests/x/test_d.py::t",  # measured, longest first
                       "tests/k8s/test_b.py::t1", f"{CA}::t[1.34.5]", f"{CA}::u[1.34.5]",  # then by directory
                       "tests/vm/test_c.py::t", "tests/unit/test_a.py::t1", "tests/unit/test_a.py::t2"]


def test_two_workers_share_the_autoscaler_file_one_version_each(tmp_path: Path) -> None:
    """A real `pytest -n 2 --dist loadfile` (as `make test` runs it) over a stand-in autoscaler file with three
    versions: each version runs whole on one worker, and both workers get one (plain loadfile: one worker)."""
    (tmp_path / "tests/k8s").mkdir(parents=True)
    for name in ("conftest.py", "suite_time.py"):
        shutil.copy(TESTS / name, tmp_path / "tests" / name)
    (tmp_path / CA).write_text(textwrap.dedent("""
        import os
        import pytest

        @pytest.fixture(scope="module", params=["1.34.5", "1.35.2", "1.36.1"])
        def release(request):
            return request.param

        @pytest.mark.parametrize("step", [1, 2])
        def test_step(release, step):
            with open(os.environ["RAN"], "a") as out:
                out.write(f"{release} {os.environ['PYTEST_XDIST_WORKER']}\\n")
        """))
    ran = tmp_path / "ran.txt"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}, "RAN": str(ran)}  # not ours
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder", "--rootdir", str(tmp_path),
                           "-c", os.devnull, "tests"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    pairs = [line.split() for line in ran.read_text().splitlines()]
    workers = {release: {w for r, w in pairs if r == release} for release, _ in pairs}
    assert len(pairs) == 6 and all(len(w) == 1 for w in workers.values()), pairs
    assert len(set().union(*workers.values())) == 2, f"one worker ran every version: {pairs}"
    assert f"{CA}[1.36.1]" in done.stdout, "the per-unit report names each version's unit"
