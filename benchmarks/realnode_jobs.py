"""A startup Job in a container on the real node against the lab's process executor, and the operator as a pod
against the operator as a process: Job latency, the operator's RSS and start time (issue 24).

    sudo .venv/bin/python benchmarks/realnode_jobs.py --jobs 5        # as root: the real node needs it

Needs `make k8s`, `make realnode` and `make images` (it says which is missing). Two labs on the real control
plane, one after the other, each booting `--jobs` IPMI machines one claim at a time (the next claim is made once
the previous one is ready, so no two Jobs share the cores):
- process: the lab's runner node runs each startup Job's pod as ansible-runner processes (executor/runnernode.py);
  the operator is the lab's `homecluster run`;
- container: the real node runs each Job's pod in the runner image (containerd, runc, the CNI bridge; the image
  imported before the kubelet starts, so present); the operator is dist/install-self-signed.yaml's pod on the real
  node (OperatorPodLab of tests/k8s/test_k8s_realnode_operator.py, the set-up that test proves).
Per Job, seen by polling the API server and the pod's log every 0.1 s: pod created (first seen) -> playbook
started (the log's first `PLAY [`) -> Job complete (the pod Succeeded, or gone once the claim is ready). Per lab:
the operator's RSS (VmRSS of its `homecluster run` process once the boots are done) and its start time (process:
the lab's operator step, start to serving; pod: its container started -> Ready, in the kubelet's whole seconds).
Prints p50 (and the spread) of each phase for both executors and their ratios, from the same run.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "k8s"), str(REPO / "tests")]

from homecluster_lab.config import LabConfig  # noqa: E402
from homecluster_lab.k8s import nodeconfig, nodeimages, realnode  # noqa: E402
from homecluster_lab.k8s.labcluster import RealLabCluster  # noqa: E402

NS = "homecluster-system"
BOUND = 600.0  # the give-up of one boot on 2 loaded cores; a Job ends when it ends
PHASES = ("created_to_started", "started_to_complete", "created_to_complete")


@dataclass
class JobClock:
    """When the benchmark saw one startup Job's pod: created, its playbook started, complete (monotonic s)."""

    created: float | None = None
    started: float | None = None
    complete: float | None = None

    def phases(self) -> dict[str, float]:
        assert self.created is not None and self.started is not None and self.complete is not None, self
        return {"created_to_started": self.started - self.created,
                "started_to_complete": self.complete - self.started,
                "created_to_complete": self.complete - self.created}


def summary(clocks: list[JobClock]) -> dict[str, dict[str, float]]:
    """p50, min and max of each phase over the Jobs."""
    out = {}
    for phase in PHASES:
        values = [c.phases()[phase] for c in clocks]
        out[phase] = {"p50": round(statistics.median(values), 2), "min": round(min(values), 2),
                      "max": round(max(values), 2)}
    return out


def compare(process: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    """The container's figures against the process executor's: ratio and difference of each phase's p50, and of
    the operator's RSS and start time."""
    out: dict[str, Any] = {}
    for phase in PHASES:
        p, c = process["jobs"][phase]["p50"], container["jobs"][phase]["p50"]
        out[phase] = {"ratio": round(c / p, 2) if p else None, "added_s": round(c - p, 2)}
    for key in ("operator_rss_mib", "operator_start_s"):
        p, c = process.get(key), container.get(key)
        out[key] = {"ratio": round(c / p, 2) if p and c else None}
    return out


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def operator_pids_on_the_node() -> list[int]:
    """The `homecluster run` processes in the real node's cgroup (the operator's container)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            cgroups = (proc / "cgroup").read_text()
        except OSError:
            continue
        names = [Path(a.decode(errors="replace")).name for a in argv]
        if nodeconfig.CGROUP_ROOT in cgroups and any(
                n == "homecluster" and i + 1 < len(names) and names[i + 1] == "run" for i, n in enumerate(names)):
            found.append(int(proc.name))
    return found


def _seconds_between(earlier: str, later: str) -> float:
    parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return (parse(later) - parse(earlier)).total_seconds()


async def boot_one(lab: RealLabCluster, claim: str, slot: str, log_of: Callable[[dict], str]) -> JobClock:
    from k8s_install_proof import boot_claim

    await lab.api.create(boot_claim(claim, slot))
    clock, seen = JobClock(), False
    deadline = time.monotonic() + BOUND
    while True:
        pods = (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods",
                                       {"labelSelector": f"job-name={claim}-startup"}))["items"]
        now = time.monotonic()
        if pods:
            pod, seen = pods[0], True
            clock.created = clock.created or now
            if clock.started is None and "PLAY [" in log_of(pod):
                clock.started = now
            if pod["status"].get("phase") == "Failed":
                raise RuntimeError(f"{claim}: the startup pod failed: {log_of(pod)[-3000:]}")
            if clock.complete is None and pod["status"].get("phase") == "Succeeded":
                clock.complete = now
        claim_obj = next((c for c in lab.claims() if c["metadata"]["name"] == claim), None)
        phase = ((claim_obj or {}).get("status") or {}).get("phase")
        if phase == "failed":
            raise RuntimeError(f"{claim} failed: {claim_obj}")
        if seen and not pods and clock.complete is None and clock.started is not None:
            clock.complete = now  # the operator removed the finished Job before a poll saw it Succeeded
        if phase == "ready" and clock.complete is not None:
            return clock
        if now > deadline:
            raise RuntimeError(f"{claim}: not ready within {BOUND:g}s: {clock}")
        await asyncio.sleep(0.1)


async def run_lab(kind: str, jobs: int, workdir: Path) -> dict[str, Any]:
    from test_k8s_realnode_operator import OperatorPodLab

    if kind == "container":
        class Lab(OperatorPodLab):
            node_images = (nodeimages.archive("controller"), nodeimages.archive("runner"))
            jobs_on_real_node = True
    else:
        Lab = RealLabCluster  # noqa: N806
    config = LabConfig(slots=jobs, driver="ipmi", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=workdir / kind, control_plane="kubernetes", real_node=kind == "container",
                       operator=kind == "process", require_operator=kind == "process",
                       settings={"job_poll_interval": "2s", "startup_job_timeout": "600s"})
    async with Lab(config) as lab:
        if kind == "container":
            varlog = lab.workdir / "realnode" / "varlog" / "pods"

            def log_of(pod: dict) -> str:
                m = pod["metadata"]
                return "".join(p.read_text(errors="replace")
                               for p in varlog.glob(f"{NS}_{m['name']}_{m['uid']}/*/*.log"))
        else:
            def log_of(pod: dict) -> str:
                path = lab.executor.log_file(NS, pod["metadata"]["name"])
                return path.read_text(errors="replace") if path.exists() else ""

        clocks = []
        for i, slot in enumerate(lab.slot_names):
            clocks.append(await boot_one(lab, f"bench-{kind}-{i}", slot, log_of))
            print(f"{kind} job {i + 1}/{jobs}: {json.dumps({k: round(v, 2) for k, v in clocks[-1].phases().items()})}",
                  flush=True)
        if kind == "container":
            pids = operator_pids_on_the_node()
            [pod] = [p for p in (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods"))["items"]
                     if p["metadata"]["name"].startswith("homecluster-controller-")]
            started = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
            ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")["lastTransitionTime"]
            start_s = _seconds_between(started, ready)
        else:
            assert lab.operator is not None and lab.operator.pid is not None
            pids = [lab.operator.pid]
            start_s = round(lab.timings["operator"], 2)
        rss = [r for r in map(rss_mib, pids) if r is not None]
        return {"jobs": summary(clocks), "each": [c.phases() for c in clocks],
                "operator_rss_mib": max(rss) if rss else None, "operator_start_s": start_s,
                "operator_pids": pids}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5, help="startup Jobs per executor (>= 5 for a p50)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--only", choices=("process", "container"), default=None,
                        help="one executor only (no ratios): the process one needs `make k8s` alone")
    args = parser.parse_args()
    kinds = (args.only,) if args.only else ("process", "container")
    missing = (None if kinds == ("process",) else
               realnode.missing_reason() or nodeimages.missing_reason("controller", "runner"))
    if missing:
        print(f"cannot run: {missing}", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hc-realnode-bench-"))
    started = time.monotonic()
    results = {}
    for kind in kinds:
        results[kind] = asyncio.run(run_lab(kind, args.jobs, workdir))
    if len(kinds) == 2:
        results["container_vs_process"] = compare(results["process"], results["container"])
    results["seconds"] = round(time.monotonic() - started, 1)
    with open("/proc/loadavg") as f:
        results["loadavg_after"] = f.read().split()[:3]
    for kind in kinds:
        r = results[kind]
        print(f"{kind:9}  " + "  ".join(f"{ph} p50 {r['jobs'][ph]['p50']:.2f}s [{r['jobs'][ph]['min']:.2f}-"
                                        f"{r['jobs'][ph]['max']:.2f}]" for ph in PHASES)
              + f"  operator RSS {r['operator_rss_mib']} MiB, start {r['operator_start_s']} s")
    if "container_vs_process" in results:
        print("container vs process: " + json.dumps(results["container_vs_process"]))
    print(f"{results['seconds']} s in all; load average after {' '.join(results['loadavg_after'])}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=asdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
