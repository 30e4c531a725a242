"""Where the suite's time goes and how `make test` hands it to its workers (tests/conftest.py hooks this in).

`make test` runs `pytest -n 5 --dist loadfile --no-loadscope-reorder`: a worker takes one work unit at a time
and runs it whole, so module fixtures (a lab, a real control plane) start once per unit. A unit is a test
file, except in SPLIT_BY_VERSION: tests/k8s/test_k8s_autoscaler.py starts one lab and one autoscaler per
cluster-autoscaler version (its module-scoped `pool` fixture is parametrized by release), so each version is
a unit of its own and two workers share the file instead of one running it for minutes alone; and in
ONE_AT_A_TIME: the files that start the machine's one real node (tests/k8s/test_k8s_realnode_*.py) are one
unit, run back to back by one worker. As separate units they were handed to several workers at once, and all
but one sat waiting for the node's machine-wide lock (RealNode.lock_wait): 555 s of worker time in a run
for 280 s of work run alone.

Units are handed out longest first (longest-processing-time-first), so the last minutes are filled by the
many short ones instead of one long file started last: by the seconds each took when last measured
(SECONDS, from the per-unit report every run prints at its end), then by directory (LONG_FIRST), then as
collected. The order is a function of the test ids alone, the same on every worker, as xdist requires.
"""
from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
# the directories whose files take longest, longest first; every other directory follows in collection order
LONG_FIRST = ("k8s", "vm", "integration", "chaos", "install", "ansible")
SPLIT_BY_VERSION = ("tests/k8s/test_k8s_autoscaler",)  # file name prefixes
# file name prefix -> the one unit of every file it starts (files that take a machine-wide lock)
ONE_AT_A_TIME = {"tests/k8s/test_k8s_realnode_": "tests/k8s/test_k8s_realnode_*.py"}
VERSION = re.compile(r"\[(?:[^\]]*-)?(\d+\.\d+\.\d+)(?:-[^\]]*)?\]$")
# seconds per unit (setup + call + teardown summed) as the end-of-run report printed them (docs/testing.md,
# "Where the time goes"); only units of a minute or more matter for the order, the rest fill in.
SECONDS: dict[str, float] = {
    # every unit of 30 s or more in q12 (2026-12-05, a clean clone, five workers), rounded: `make test` writes
    # them with HOMECLUSTER_SUITE_TIMES=<file>; refresh them when the order starts to leave one worker last
    # (the end-of-run report's "per worker" line)
    "tests/k8s/test_k8s_realnode_*.py": 449.0,
    "tests/integration/test_boot_check.py": 362.0,
    "tests/k8s/test_k8s_autoscaler.py[1.36.1]": 256.0,
    "tests/integration/test_machinegone_and_shutdowns.py": 225.0,
    "tests/k8s/test_k8s_gitops.py": 220.0,
    "tests/k8s/test_k8s_autoscaler_drain.py": 197.0,
    "tests/integration/test_attempts.py": 188.0,
    "tests/k8s/test_k8s_self_signed.py": 183.0,
    "tests/k8s/test_k8s_autoscaler_pools.py": 172.0,
    "tests/ansible/test_ansible_core_lines.py": 159.0,
    "tests/k8s/test_k8s_autoscaler_spent.py": 149.0,
    "tests/k8s/test_k8s_integration.py": 140.0,
    "tests/ansible/test_collection_checks.py": 120.0,
    "tests/k8s/test_k8s_dist_lab.py": 113.0,
    "tests/integration/test_vm_system.py": 107.0,
    "tests/k8s/test_k8s_autoscaler_mtls.py": 105.0,
    "tests/k8s/test_k8s_stale_ready.py": 94.0,
    "tests/ansible/test_machine_power_module.py": 94.0,
    "tests/ansible/test_molecule.py": 89.0,
    "tests/integration/test_crash_and_churn.py": 88.0,
    "tests/k8s/test_k8s_autoscaler_tolerate.py[1.35.2]": 86.0,
    "tests/integration/test_metrics_and_rbac.py": 73.0,
    "tests/k8s/test_k8s_lab_boot.py": 72.0,
    "tests/chaos/test_chaos_campaign.py": 69.0,
    "tests/vm/test_vm_molecule.py": 69.0,
    "tests/k8s/test_k8s_autoscaler_tolerate.py[1.36.1]": 69.0,
    "tests/ansible/test_playbooks.py": 68.0,
    "tests/lab/test_executor.py": 59.0,
    "tests/integration/test_lifecycle.py": 58.0,
    "tests/k8s/test_k8s_autoscaler_crash.py": 56.0,
    "tests/k8s/test_k8s_slot_removal.py": 50.0,
    "tests/k8s/test_k8s_autoscaler.py[1.35.2]": 49.0,
    "tests/integration/test_shutdown_race.py": 47.0,
    "tests/integration/test_provider_e2e.py": 47.0,
    "tests/integration/test_table_rows.py": 46.0,
    "tests/lab/test_lab_cli.py": 45.0,
    "tests/ansible/test_node_modules.py": 38.0,
    "tests/integration/test_two_operators.py": 37.0,
    "tests/k8s/test_k8s_pool_nodes.py": 35.0,
    "tests/k8s/test_k8s_helm.py": 35.0,
    "tests/k8s/test_k8s_helm_lab.py": 34.0,
    "tests/lab/test_port_race.py": 32.0,
}
SLOWEST = 25
# where the report also writes every unit's seconds, CPU and test count as JSON (for comparing two runs)
TIMES_FILE_VARIABLE = "HOMECLUSTER_SUITE_TIMES"


def unit(nodeid: str) -> str:
    """The work unit of a test id: its file, its file and autoscaler version in SPLIT_BY_VERSION, or the one
    unit of its files in ONE_AT_A_TIME."""
    path = nodeid.split("::", 1)[0]
    for prefix, merged in ONE_AT_A_TIME.items():
        if path.startswith(prefix):
            return merged
    if path.startswith(SPLIT_BY_VERSION):
        found = VERSION.search(nodeid)
        if found:
            return f"{path}[{found.group(1)}]"
    return path


def _rank(path: str) -> int:
    parts = Path(path).parts
    top = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return LONG_FIRST.index(top) if top in LONG_FIRST else len(LONG_FIRST)


def order(items: list[Any]) -> list[Any]:
    """The items grouped by unit, the units longest first; a unit's own items keep their collected order."""
    groups: dict[str, list[Any]] = {}
    for item in items:
        groups.setdefault(unit(item.nodeid), []).append(item)
    first = {name: index for index, name in enumerate(groups)}
    ranked = sorted(groups, key=lambda name: (-SECONDS.get(name, 0.0), _rank(name), first[name]))
    return [item for name in ranked for item in groups[name]]


def scheduler(config: Any, log: Any) -> Any:
    """xdist's loadfile scheduler with this module's units (its --no-loadscope-reorder keeps our order)."""
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

    return UnitScheduling(config, log)


CPU_PROPERTY = "cpu_seconds"


class CpuClock:
    """The CPU time (user + system) this process and its reaped children used since the last `lap()`.

    A process the tests start (a lab's API server, ansible-playbook, etcd) counts once this worker has waited
    for it, which every fixture does at its teardown; a grandchild counts when its own parent reaped it. What is
    never reaped by this worker's tree (a process reparented to init, such as containerd's shims) is not
    counted, so the figure is a floor."""

    def __init__(self, times: Any = None):
        self._times = times or os.times
        self._last = self._now()

    def _now(self) -> float:
        t = self._times()
        return t.user + t.system + t.children_user + t.children_system

    def lap(self) -> float:
        now = self._now()
        spent, self._last = now - self._last, now
        return max(0.0, spent)


def record_cpu(clock: CpuClock, report: Any) -> None:
    """Attach the CPU used since the previous report of this worker to `report` (a user property, which xdist
    carries to the controller): setup, call and teardown each get their own share, so a module fixture's start
    lands in its unit's first setup and its end in the unit's last teardown."""
    report.user_properties.append((CPU_PROPERTY, round(clock.lap(), 3)))


def _cpu_of(rep: Any) -> float:
    return sum(v for k, v in getattr(rep, "user_properties", ()) if k == CPU_PROPERTY)


def report(terminalreporter: Any) -> None:
    """The SLOWEST slowest units (setup, call and teardown summed, with the CPU they used) and each worker's
    share of the run, and the CPU of the whole run against its wall time: how much of the cores it kept busy."""
    seconds: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)
    tests: dict[str, set[str]] = defaultdict(set)
    workers: dict[str, float] = defaultdict(float)
    for reports in terminalreporter.stats.values():
        for rep in reports:
            if not hasattr(rep, "duration") or not getattr(rep, "nodeid", ""):
                continue
            name = unit(rep.nodeid)
            seconds[name] += rep.duration
            cpu[name] += _cpu_of(rep)
            tests[name].add(rep.nodeid)
            node = getattr(rep, "node", None)
            workers[getattr(getattr(node, "gateway", None), "id", "main")] += rep.duration
    if not seconds:
        return
    write = terminalreporter.write_line
    terminalreporter.section(f"slowest {min(SLOWEST, len(seconds))} work units (files; setup+call+teardown)")
    for name in sorted(seconds, key=seconds.get, reverse=True)[:SLOWEST]:
        write(f"{seconds[name]:8.1f}s {cpu[name]:8.1f}s cpu {len(tests[name]):5d} tests  {name}")
    write("per worker: " + ", ".join(f"{w} {s:.0f}s" for w, s in sorted(workers.items()))
          + f"; {sum(seconds.values()):.0f}s in {len(seconds)} units")
    write(f"cpu (workers and the processes they reaped): {sum(cpu.values()):.0f}s; most cpu: " + ", ".join(
        f"{name} {cpu[name]:.0f}s" for name in sorted(cpu, key=cpu.get, reverse=True)[:8]))
    target = os.environ.get(TIMES_FILE_VARIABLE)
    if target:
        Path(target).write_text(json.dumps({name: {"seconds": round(seconds[name], 1), "cpu": round(cpu[name], 1),
                                                   "tests": len(tests[name])}
                                            for name in sorted(seconds, key=seconds.get, reverse=True)}, indent=1))
        write(f"every unit's seconds and cpu: {target}")
