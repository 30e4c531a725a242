#!/usr/bin/env python3
"""Long fault campaigns (issue 14): N seeded runs of the whole lab under random faults, invariants checked.

    nice -n 5 .venv/bin/python benchmarks/chaos.py --runs 20 --minutes 1 --seed 1000
    nice -n 5 .venv/bin/python benchmarks/chaos.py --runs 100 --budget 60 --seed 1000  # as many as fit in 1 h
    nice -n 5 .venv/bin/python benchmarks/chaos.py --runs 1 --seed 1007      # replay one run

Run i uses seed S+i. Each run injects faults for M minutes (tests/chaos/chaos_schedule.py draws them), then
stops the faults and measures how long the pool takes to converge; see tests/chaos/chaos_driver.py. Per run it
prints the seed, the faults carried out, the operator's restarts and RSS, the convergence time and every
invariant violation; a run with violations also prints its schedule (replay it with --seed). The summary
gives the totals, faults by kind, and convergence p50/p99/max. Exit status 1 when any run broke an invariant.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import signal
import time
import statistics
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests" / "chaos"), str(Path(__file__).resolve().parents[1] / "tests")]

from chaos_driver import run_campaign  # noqa: E402
from chaos_invariants import check_all  # noqa: E402
from chaos_record import read_record  # noqa: E402
from chaos_schedule import describe  # noqa: E402

from homecluster_lab.config import LabError  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=1.0, help="fault time per run")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first run; run i uses seed + i")
    parser.add_argument("--slots", type=int, default=3)
    parser.add_argument("--rate", type=float, default=0.5, help="actions per second")
    parser.add_argument("--keep", action="store_true", help="keep each run's lab folder (operator.log, pod logs)")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="wall minutes: start no run after this many (0: none); the summary counts the runs made")
    parser.add_argument("--recheck", nargs="+", metavar="RECORD",
                        help="check kept runs' chaos-record.txt files again with the current checkers, and stop")
    args = parser.parse_args()
    if args.recheck:
        return recheck(args.recheck)

    done, skipped = collections.Counter(), collections.Counter()
    converge, rss, failing, restarts, claims, walls, load_limited, timeouts = [], [], [], 0, 0, [], [], 0
    began, ran, not_started = time.monotonic(), 0, []
    for i in range(args.runs):
        if args.budget and time.monotonic() - began > args.budget * 60:
            break
        ran += 1
        seed = args.seed + i
        workdir = Path(tempfile.mkdtemp(prefix=f"chaos-{seed}-"))
        try:
            report = await run_campaign(seed, args.minutes * 60, workdir / "lab", slots=args.slots, rate=args.rate)
        except LabError as exc:  # the lab itself did not come up (a loaded machine): no run, say so, go on
            ran -= 1
            not_started.append(seed)
            print(f"seed {seed}: not run, the lab did not start: {exc}", flush=True)
            continue
        finally:
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
        print(report.summary(), flush=True)
        if not report.ok:
            failing.append(seed)
            print(f"  schedule of seed {seed} (replay: benchmarks/chaos.py --runs 1 --seed {seed} "
                  f"--minutes {args.minutes:g}):\n" + describe(report.schedule), flush=True)
        done.update(report.done)
        skipped.update(report.skipped)
        restarts += report.restarts
        claims += report.claims
        walls.append(report.wall)
        timeouts += len(report.job_timeouts)
        if report.converged_after is not None:
            converge.append(report.converged_after)
        elif report.load_limited:
            load_limited.append(seed)
        if report.rss_kib:
            rss.append(max(report.rss_kib))
    print("---- summary ----")
    print(f"runs {ran} (seeds {args.seed}..{args.seed + ran + len(not_started) - 1}), {args.minutes:g} min of "
          f"faults each, {sum(walls) / 60:.1f} min wall in all")
    if not_started:
        print(f"seeds not run because the lab did not start: {len(not_started)} ({', '.join(map(str, not_started))})")
    print(f"actions carried out {sum(done.values())}: {', '.join(f'{k} {v}' for k, v in sorted(done.items()))}")
    print(f"skipped (nothing to act on) {sum(skipped.values())}; operator restarts {restarts}; claims {claims}; "
          f"lifecycle Jobs past their deadline {timeouts}")
    if load_limited:
        print(f"runs that did not converge only because Jobs kept timing out (load): {len(load_limited)} "
              f"(seeds {', '.join(map(str, load_limited))})")
    if converge:
        print(f"convergence after the faults stopped: p50 {statistics.median(converge):.1f}s, "
              f"p99 {percentile(converge, 0.99):.1f}s, max {max(converge):.1f}s "
              f"({len(converge)} of {ran} runs converged)")
    if rss:
        print(f"operator RSS: max {max(rss) // 1024} MiB over the runs (median of run maxima "
              f"{int(statistics.median(rss)) // 1024} MiB)")
    seeds = f" (seeds {', '.join(map(str, failing))})" if failing else ""
    print(f"runs with invariant violations: {len(failing)}{seeds}")
    return 1 if failing else 0


def recheck(paths: list[str]) -> int:
    """The invariants of kept runs, checked again (e.g. after a checker was corrected)."""
    bad = 0
    for path in paths:
        text = Path(path).read_text()
        head = dict(line.split(" ", 1) for line in text.splitlines()[:3] if line.startswith(("end ", "slack ")))
        events = read_record(text)
        end = float(head.get("end", max((e.t for e in events), default=0.0)))
        slack = float(head.get("slack", 20.0))
        found = check_all(events, end, slack=slack, release_bound=slack)
        bad += bool(found)
        print(f"{path}: {len(events)} events, {'ok' if not found else 'VIOLATIONS'}")
        for v in found:
            print(f"  {v}")
    print(f"{len(paths)} records, {bad} with violations")
    return 1 if bad else 0


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the lab as Ctrl-C does: its processes and pods are ended, not orphaned


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupt)
    sys.exit(asyncio.run(main()))
