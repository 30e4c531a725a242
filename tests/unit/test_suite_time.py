"""The suite's work units and their order (tests/suite_time.py), and that `make test`'s xdist run uses them."""
from __future__ import annotations

import json
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


def test_the_real_node_files_are_one_unit_kept_together_by_the_order() -> None:
    """Units of their own, they took several workers at once, all but one waiting for the node's lock."""
    ids = ["tests/k8s/test_k8s_realnode_helm.py::t[secrets]", "tests/k8s/test_k8s_other.py::t",
           "tests/k8s/test_k8s_realnode_service.py::t", "tests/k8s/test_k8s_realnode_ports.py::t"]
    assert {suite_time.unit(n) for n in ids if "realnode" in n} == {"tests/k8s/test_k8s_realnode_*.py"}
    assert suite_time.unit("tests/lab/test_realnode_bench.py::t") == "tests/lab/test_realnode_bench.py"
    ordered = [i.nodeid for i in suite_time.order([SimpleNamespace(nodeid=n) for n in ids])]
    assert ordered == [ids[0], ids[2], ids[3], ids[1]]  # the measured merged unit first, its files as collected


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


def test_the_cpu_clock_counts_laps_of_self_and_reaped_children() -> None:
    readings = iter([SimpleNamespace(user=1.0, system=0.5, children_user=2.0, children_system=0.5),
                     SimpleNamespace(user=1.5, system=0.5, children_user=4.0, children_system=1.0),
                     SimpleNamespace(user=1.5, system=0.5, children_user=4.0, children_system=1.0)])
    clock = suite_time.CpuClock(times=lambda: next(readings))
    assert clock.lap() == pytest.approx(3.0)  # 0.5 own + 2.5 children
    rep = SimpleNamespace(user_properties=[("other", 1)])
    suite_time.record_cpu(clock, rep)
    assert rep.user_properties == [("other", 1), (suite_time.CPU_PROPERTY, 0.0)]


def test_the_unit_report_shows_the_cpu_a_child_process_burned(tmp_path: Path) -> None:
    """A real `pytest -n 1` run: one file's test runs a child that spins for 0.4 s of CPU, the other sleeps. The
    report's cpu column travels from the worker (a user property) and tells the two apart."""
    (tmp_path / "tests/x").mkdir(parents=True)
    for name in ("conftest.py", "suite_time.py"):
        shutil.copy(TESTS / name, tmp_path / "tests" / name)
    (tmp_path / "tests/x/test_burn.py").write_text(textwrap.dedent("""
        import subprocess, sys
        def test_burn():
            subprocess.run([sys.executable, "-c", "import time; t = time.process_time(); "
                            "[0 for _ in iter(lambda: time.process_time() - t < 0.4, False)]"], check=True)
        """))
    (tmp_path / "tests/x/test_sleep.py").write_text("import time\ndef test_sleep():\n    time.sleep(0.4)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env[suite_time.TIMES_FILE_VARIABLE] = str(tmp_path / "times.json")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "-p", "no:hypothesispytest", "-n", "1", "--rootdir", str(tmp_path), "-c", os.devnull,
                           "tests"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {line.split()[-1]: line.split() for line in done.stdout.splitlines() if "cpu" in line and "tests " in line}
    burn, sleep = rows["tests/x/test_burn.py"], rows["tests/x/test_sleep.py"]
    assert float(burn[1].rstrip("s")) >= 0.35, done.stdout
    assert float(sleep[1].rstrip("s")) < 0.2, done.stdout
    assert "cpu (workers and the processes they reaped):" in done.stdout
    times = json.loads((tmp_path / "times.json").read_text())
    assert times["tests/x/test_burn.py"]["cpu"] >= 0.35 and times["tests/x/test_sleep.py"]["cpu"] < 0.2
    assert times["tests/x/test_sleep.py"]["seconds"] >= 0.4 and times["tests/x/test_burn.py"]["tests"] == 1
