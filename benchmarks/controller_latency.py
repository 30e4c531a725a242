#!/usr/bin/env python3
"""Controller-added latency per transition: the event a pass reacted to -> the write it sent.

Runs the whole lab (in-memory API server, simulated machines over real IPMI with a 1 s boot, the Job
executor running the real playbooks, and `homecluster run` as a subprocess), asks the operator's
autoscaler provider for N machines at once (NodeGroupIncreaseSize, delta N: N claims on N slots), waits
until every claim is ready, then gives them all back (NodeGroupDeleteNodes) and waits until every slot
is off again. All times come from the lab API server's audit log (the moment it began handling each request);
the object each write produced is looked up by its resourceVersion in watch streams of every kind.

Definitions (precise):
- the *dependencies* of a slot are its claims, the slot itself, its Jobs (label infra.homecluster.dev/slot)
  and its corev1 Node. An *event* on them is: any write to a claim or to the slot (by anyone); a write
  to a Job that changes its outcome (created / succeeded / failed); a write to the Node that changes a
  fact the controller reads (it exists, Ready, the pool's readiness taints, the cordon, providerID).
  Heartbeats (leases, a Node status write that changes none of those) are not events.
- the *step latency* of an operator write W on slot s is W.time - the time of the latest event on s's
  dependencies before W (the operator's own earlier writes included: a pass that wrote is re-run, and
  the next write of the chain depends on the previous one). This is the controller-added latency the
  goal is about: p99 under 250 ms.
- the *transition latency* measures some transitions from their outside cause instead, so the chains of
  writes in between are included: seed / booting <- the claim's creation; ready <- the Node's first
  write that made it usable (joined, Ready, untainted; the startup Job's completion is not waited for,
  and the operator does not wait for it either); release (the first write after a delete) <- the claim's
  deletion; completed <- the later of (the Node reads not Ready, the shutdown Job ended).

    .venv/bin/python benchmarks/controller_latency.py [--claims 50] [--workers N] [--pod-nice 10] [--workdir DIR]

Besides the audit log, the operator's own figures are printed, to tell the controller's time from the
machine's: its queue wait and event-loop lag histograms (from its /metrics), and the CPU it used
against the whole machine's (from /proc) -- a loop that runs late while the operator is not busy
is starved by the lab's other processes, a long queue wait with a punctual loop is ours.

Not a test: prints, asserts nothing. The numbers depend on the machine: on 2 cores, N real
ansible-runner processes run at once next to the operator.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402
import tail  # noqa: E402
# the run (lifecycle_run) and the attribution (attribution) live apart; writes_per_lifecycle and the tests
# import them from here
from attribution import Write, attribute, is_event, step_causes, step_latencies, transition_latencies  # noqa: E402,F401
from lifecycle_run import Recording, check_planes, run_lifecycles  # noqa: E402,F401


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def table(rows: dict[str, list[float]]) -> str:
    lines = [f"{'':44} {'n':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}"]
    for label, values in sorted(rows.items()):
        lines.append(f"{label:44} {len(values):5d} {pct(values, .5) * 1e3:9.1f} {pct(values, .99) * 1e3:9.1f} "
                     f"{max(values) * 1e3:9.1f}")
    return "\n".join(lines)


def latency_rows(rec: Recording) -> dict[str, list[float]]:
    """Every figure the report prints as a table row: "step ALL", "step <write>", "transition <what>"."""
    writes = attribute(rec)
    steps = step_latencies(writes, rec.marks.get("increase", 0.0))
    rows: dict[str, list[float]] = defaultdict(list)
    for dt, w in steps:
        rows["step ALL operator writes"].append(dt)
        rows[f"step {w.label}"].append(dt)
    for label, values in transition_latencies(writes).items():
        rows[f"transition {label}"] = values
    return rows


def report(rec: Recording) -> str:
    writes = attribute(rec)
    steps = step_latencies(writes, rec.marks.get("increase", 0.0))
    per_label: dict[str, list[float]] = defaultdict(list)
    for dt, w in steps:
        per_label[w.label].append(dt)
    every = [dt for dt, _ in steps]
    out = [f"control plane: {rec.control_plane}; {compare.load_text(rec.load)}",
           f"step latency of every operator write (event on the slot's dependencies -> write), "
           f"{len(rec.slots)} concurrent claims:",
           table({"ALL operator writes": every}), "", "by write:", table(per_label), "",
           "transition latency (outside cause -> write, chains included):", table(transition_latencies(writes)), "",
           f"goal: step p99 < 250 ms -> {'met' if pct(every, .99) < 0.25 else 'NOT met'} "
           f"(p99 {pct(every, .99) * 1e3:.1f} ms)", "", "the 5 slowest steps:"]
    for dt, w in sorted(steps, key=lambda x: -x[0])[:5]:
        out.append(f"  {dt * 1e3:8.1f} ms  {w.slot}: {w.label} ({w.what})")
    out += ["", tail.report(step_causes(writes, rec.marks.get("increase", 0.0)), writes)]
    out += ["", operator_side(rec)]
    if {"increase", "all ready", "delete", "all off"} <= set(rec.marks):
        m = rec.marks
        out.append(f"\nwall: all ready {m.get('all ready', 0) - m.get('increase', 0):.1f}s after the scale-up, "
                   f"all off {m.get('all off', 0) - m.get('delete', 0):.1f}s after the scale-down")
    return "\n".join(out)


def histogram(text: str, name: str) -> tuple[list[tuple[float, float]], float, float]:
    """(cumulative (le, count) buckets, count, sum) of a Prometheus histogram without labels."""
    buckets, count, total = [], 0.0, 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == f"{name}_bucket":
                buckets.append((float(sample.labels["le"]), sample.value))  # float("+Inf") is inf
            elif sample.name == f"{name}_count":
                count = sample.value
            elif sample.name == f"{name}_sum":
                total = sample.value
    return buckets, count, total


def bucket_quantile(buckets: list[tuple[float, float]], count: float, q: float) -> str:
    """The upper bound of the bucket holding quantile q ("<= 0.05 s"), as honest as buckets allow."""
    for le, n in buckets:
        if count and n >= q * count:
            return "> last bucket" if le == float("inf") else f"<= {le * 1e3:g} ms"
    return "n/a"


def operator_side(rec: Recording) -> str:
    lines = ["the operator's own figures (its /metrics; quantiles are bucket bounds):"]
    for name, what in (("homecluster_slot_queue_wait_seconds", "queue wait (slot asked for -> a worker takes it)"),
                       ("homecluster_slot_pass_seconds", "slot pass (all its writes included)"),
                       ("homecluster_event_loop_lag_seconds", "event-loop lag (a 0.25 s sleep woke late by)")):
        buckets, count, total = histogram(rec.metrics, name)
        if not count:
            lines.append(f"  {what}: not reported")
            continue
        lines.append(f"  {what}: n {count:.0f}, mean {total / count * 1e3:.1f} ms, "
                     f"p50 {bucket_quantile(buckets, count, .5)}, p99 {bucket_quantile(buckets, count, .99)}")
    c = rec.cpu
    if c.get("wall"):
        lines.append(f"  CPU over {c['wall']:.0f} s on {c['cores']:.0f} cores: the operator used "
                     f"{c['operator'] / c['wall'] * 100:.0f}% of one core, the lab process (API server, machines, "
                     f"kubelets, executor) {c.get('lab', 0) / c['wall'] * 100:.0f}%; the machine was "
                     f"{c['machine'] / (c['wall'] * c['cores']) * 100:.0f}% busy")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=50, help="concurrent claims (one slot each); default 50")
    parser.add_argument("--workdir", type=Path, help="keep the lab's files (operator log, pods) here")
    parser.add_argument("--pod-nice", type=int, default=10,
                        help="the Job pods' nice value, their sessions' autogroups included (default 10, the lab's "
                             "default; -1: not lowered), see run_lifecycles")
    parser.add_argument("--workers", type=int, help="homecluster run --workers (default: the operator's default)")
    compare.add_arguments(parser)
    args = parser.parse_args(argv)
    pod_nice = None if args.pod_nice < 0 else args.pod_nice
    check_planes(compare.planes(args.control_plane))
    print(f"Job pods' nice: {pod_nice if pod_nice is not None else 'not lowered'}; "
          f"operator workers: {args.workers or 'default'}; {args.claims} claims; "
          f"{args.runs} run(s) per control plane: {', '.join(compare.planes(args.control_plane))}")
    figures: dict[str, list[dict[str, tuple[float, float]]]] = {}
    for run in range(args.runs):  # the planes take turns, so a change in the machine's load hits both
        for plane in compare.planes(args.control_plane):
            workdir = args.workdir / f"{plane}-{run + 1}" if args.workdir else None
            rec = asyncio.run(run_lifecycles(args.claims, workdir, pod_nice=pod_nice, workers=args.workers,
                                             control_plane=plane, say=lambda s: print(s, file=sys.stderr)))
            print(f"\n==== {plane}, run {run + 1} of {args.runs} ====", flush=True)
            print(report(rec), flush=True)
            figures.setdefault(plane, []).append(compare.per_run_figures(latency_rows(rec)))
    if args.runs > 1:
        for plane, runs in figures.items():
            print(f"\n==== {plane}: {len(runs)} runs, median and spread of each run's p50 and p99 ====")
            print(compare.spread_table(runs))
    if len(figures) > 1:
        print(f"\n==== each control plane against the in-memory server (medians over the runs) ====")
        print(compare.ratio_table({plane: compare.medians(runs) for plane, runs in figures.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
