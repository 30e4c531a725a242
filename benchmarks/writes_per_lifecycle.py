#!/usr/bin/env python3
"""API writes per successful boot and per reversal, from the lab API server's audit log.

Runs the same lifecycle as controller_latency.py (the whole lab, `homecluster run` as a subprocess, N
claims created at once through the operator's autoscaler provider, all ready, then all given back through
NodeGroupDeleteNodes until every slot is off) and counts every successful write the API server answered,
all objects counted:
- a *boot* is every write attributed to a slot from the scale-up call until its claim is deleted;
  a *reversal* every write from the claim's deletion until the run ends (the slot is off again);
- a write is attributed to a slot through its object (a claim's spec.slotRef, the slot, a Job's or Pod's
  slot label, the corev1 Node and its Lease of the slot's name, an Event about a claim);
- the writer is read from the user agent: the operator (`homecluster-operator`; its provider shares the
  client, so claim creates and deletes are counted as the provider's), the lab's Job executor (Jobs,
  Pods), the kubelet (its Node, Node status, Lease), the playbook inside a shutdown Job (the cordon
  patch, evictions) and the lab's garbage collector.

    .venv/bin/python benchmarks/writes_per_lifecycle.py [--claims 5] [--control-plane memory|kubernetes|both]
        [--runs N] [--workdir DIR]

On the real control plane (kube-apiserver & co.) the writes come from kube-apiserver's audit log
(realaudit.py) and the writers from the authenticated user: the operator's ServiceAccount, the real Job
controller, the runner node's kubelet that runs the Job pods, the machines' kubelets, the node lifecycle
controller, the garbage collector.

Prints the averages per boot and per reversal, by writer and by (object, verb), and the operator's
writes per boot against the goal of at most 12. Not a test: prints, asserts nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402
from controller_latency import Recording, Write, attribute, check_planes, run_lifecycles  # noqa: E402

GOAL_OPERATOR_WRITES_PER_BOOT = 12


def split_episodes(rec: Recording, writes: list[Write]) -> dict[str, list[Write]]:
    """{"boot": [...], "reversal": [...]} -- writes on a slot before / after its claim's deletion."""
    start = rec.marks.get("increase", 0.0)
    deleted: dict[str, float] = {}
    for w in writes:
        if w.label == "claim delete" and w.slot is not None:
            deleted.setdefault(w.slot, w.time)
    out: dict[str, list[Write]] = defaultdict(list)
    for w in writes:
        if w.slot is None or w.time < start:
            continue
        cut = deleted.get(w.slot)
        out["boot" if cut is None or w.time < cut else "reversal"].append(w)
    return out


def breakdown(writes: list[Write], episodes: int) -> str:
    by_writer = Counter(w.writer for w in writes)
    by_object: dict[str, Counter] = defaultdict(Counter)
    for w in writes:
        by_object[w.writer][w.what] += 1
    lines = [f"  all writers: {len(writes) / episodes:.2f} per episode"]
    for writer, n in by_writer.most_common():
        lines.append(f"  {writer:20} {n / episodes:6.2f}")
        for what, m in sorted(by_object[writer].items(), key=lambda x: (-x[1], x[0])):
            lines.append(f"      {what:40} {m / episodes:6.2f}")
    return "\n".join(lines)


def operator_sequence(writes: list[Write], slot: str) -> list[str]:
    return [w.label for w in writes if w.slot == slot and w.writer == "operator"]


def figures(rec: Recording) -> dict[str, float]:
    """The mean writes per boot and per reversal: the operator's, and every writer's."""
    episodes = split_episodes(rec, attribute(rec))
    n = max(len(rec.slots), 1)
    out = {}
    for kind in ("boot", "reversal"):
        ws = episodes.get(kind, [])
        out[f"operator writes per {kind}"] = sum(1 for w in ws if w.writer == "operator") / n
        out[f"all writes per {kind}"] = len(ws) / n
    return out


def report(rec: Recording) -> str:
    writes = attribute(rec)
    episodes = split_episodes(rec, writes)
    n = len(rec.slots)
    out = [f"control plane: {rec.control_plane}; {compare.load_text(rec.load)}"]
    for kind in ("boot", "reversal"):
        ws = episodes.get(kind, [])
        out.append(f"{kind}: {len(ws)} writes over {n} {kind}s")
        out.append(breakdown(ws, n))
        first = rec.slots[0]
        out.append(f"  the operator's writes for one {kind} ({first}), in order: "
                   f"{', '.join(operator_sequence(ws, first))}")
        out.append("")
    per_boot = Counter(w.slot for w in episodes.get("boot", []) if w.writer == "operator")
    worst = max(per_boot.values()) if per_boot else 0
    out.append(f"operator writes per boot: mean {sum(per_boot.values()) / max(n, 1):.2f}, max {worst} "
               f"(goal <= {GOAL_OPERATOR_WRITES_PER_BOOT}: {'met' if worst <= GOAL_OPERATOR_WRITES_PER_BOOT else 'NOT met'})")
    per_rev = Counter(w.slot for w in episodes.get("reversal", []) if w.writer == "operator")
    if per_rev:
        out.append(f"operator writes per reversal: mean {sum(per_rev.values()) / n:.2f}, max {max(per_rev.values())}")
    return "\n".join(out)


def comparison(runs: dict[str, list[dict[str, float]]]) -> str:
    """Each figure's median over the runs, per control plane, and kubernetes / memory."""
    med = {plane: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for plane, rs in runs.items() if rs}
    base = med.get(compare.BASELINE, {})
    lines = [f"{'':28}" + "".join(f" {plane:>11}" for plane in med) + "   kubernetes / memory"]
    for key in next(iter(med.values()), {}):
        lines.append(f"{key:28}" + "".join(f" {med[plane][key]:11.2f}" for plane in med)
                     + f"   {compare.ratio(med.get('kubernetes', {}).get(key, float('nan')), base.get(key, float('nan')))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=5, help="claims booted (and released) at once; default 5")
    parser.add_argument("--workdir", type=Path, help="keep the lab's files (operator log, pods) here")
    compare.add_arguments(parser)
    args = parser.parse_args(argv)
    check_planes(compare.planes(args.control_plane))
    runs: dict[str, list[dict[str, float]]] = {}
    for run in range(args.runs):  # the planes take turns, so a change in the machine's load hits both
        for plane in compare.planes(args.control_plane):
            workdir = args.workdir / f"{plane}-{run + 1}" if args.workdir else None
            rec = asyncio.run(run_lifecycles(args.claims, workdir, control_plane=plane,
                                             say=lambda s: print(s, file=sys.stderr)))
            print(f"\n==== {plane}, run {run + 1} of {args.runs} ====", flush=True)
            print(report(rec), flush=True)
            runs.setdefault(plane, []).append(figures(rec))
    if len(runs) > 1 or args.runs > 1:
        print(f"\n==== writes per episode, medians over the runs ====")
        print(comparison(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
