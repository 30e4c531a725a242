"""Runs side by side: the spread of repeated runs and the ratio of one control plane's figures to the other's.

The benchmarks run on the lab's in-memory API server ("memory") and on the real control plane ("kubernetes",
etcd + kube-apiserver + kube-controller-manager + kube-scheduler), in that order with `--control-plane both`.
On a shared machine an absolute figure says little by itself; the project prints each figure with a
baseline measured in the same invocation (the in-memory server): `kubernetes / memory`. Pure: no I/O.
"""
from __future__ import annotations

import argparse
import os
import statistics

PLANES = ("memory", "kubernetes")
BASELINE = "memory"


def add_arguments(parser: argparse.ArgumentParser, runs: int = 1) -> None:
    parser.add_argument("--control-plane", choices=(*PLANES, "both"), default="both",
                        help="the lab's in-memory API server, the real control plane (built by `make k8s`), or "
                             "both one after the other (default), each printed with the ratio between them")
    parser.add_argument("--runs", type=int, default=runs,
                        help=f"runs per control plane (default {runs}); with more than one, the median and the "
                             f"spread (min-max) of each figure over the runs are printed too")


def planes(choice: str) -> list[str]:
    return list(PLANES) if choice == "both" else [choice]


def load_text(load: dict[str, tuple[float, float, float]]) -> str:
    """'load average (1/5/15 min) 3.1/2.0/1.6 at start, 4.2/3.0/2.0 at end', from os.getloadavg() pairs."""
    parts = [f"{'/'.join(f'{x:.1f}' for x in value)} at {when}" for when, value in load.items()]
    return f"load average (1/5/15 min) {', '.join(parts) or 'not recorded'} on {os.cpu_count()} cores"


def quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile (as controller_latency.pct)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def per_run_figures(rows: dict[str, list[float]]) -> dict[str, tuple[float, float]]:
    """label -> (p50, p99) of one run's samples."""
    return {label: (quantile(v, .5), quantile(v, .99)) for label, v in rows.items() if v}


def spread(runs: list[dict[str, tuple[float, float]]]) -> dict[str, dict[str, tuple[float, float, float]]]:
    """label -> {"p50": (median, min, max), "p99": (...)} over the runs where the label occurs."""
    out: dict[str, dict[str, tuple[float, float, float]]] = {}
    for label in sorted({k for run in runs for k in run}):
        seen = [run[label] for run in runs if label in run]
        out[label] = {name: (statistics.median(xs), min(xs), max(xs))
                      for name, xs in (("p50", [s[0] for s in seen]), ("p99", [s[1] for s in seen]))}
        out[label]["runs"] = (float(len(seen)),) * 3
    return out


def spread_table(runs: list[dict[str, tuple[float, float]]], scale: float = 1e3, unit: str = "ms") -> str:
    lines = [f"{'':52} {'runs':>4} {'p50 median':>11} {'(min-max)':>17} {'p99 median':>11} {'(min-max)':>17}  {unit}"]
    for label, fig in spread(runs).items():
        p50, p99 = fig["p50"], fig["p99"]
        lines.append(f"{label:52} {int(fig['runs'][0]):4d} {p50[0] * scale:11.1f} "
                     f"{f'({p50[1] * scale:.1f}-{p50[2] * scale:.1f})':>17} {p99[0] * scale:11.1f} "
                     f"{f'({p99[1] * scale:.1f}-{p99[2] * scale:.1f})':>17}")
    return "\n".join(lines)


def ratio(other: float, base: float) -> str:
    if base != base or other != other or base == 0:  # NaN or nothing to divide by
        return "n/a"
    return f"{other / base:.2f}x"


def ratio_table(medians: dict[str, dict[str, tuple[float, float]]], scale: float = 1e3, unit: str = "ms") -> str:
    """medians: plane -> label -> (p50, p99) (medians over the runs); each label's figures on every plane and
    each plane's ratio to the baseline's (the in-memory server's)."""
    others = [p for p in medians if p != BASELINE]
    head = f"{'':52} {'p50 ' + BASELINE:>12} {'p99 ' + BASELINE:>12}"
    for p in others:
        head += f" {'p50 ' + p:>15} {'ratio':>7} {'p99 ' + p:>15} {'ratio':>7}"
    lines = [head + f"  {unit}"]
    labels = sorted({label for fig in medians.values() for label in fig})
    nan = (float("nan"), float("nan"))
    for label in labels:
        base = medians.get(BASELINE, {}).get(label, nan)
        line = f"{label:52} {base[0] * scale:12.1f} {base[1] * scale:12.1f}"
        for p in others:
            fig = medians[p].get(label, nan)
            line += f" {fig[0] * scale:15.1f} {ratio(fig[0], base[0]):>7} {fig[1] * scale:15.1f} {ratio(fig[1], base[1]):>7}"
        lines.append(line)
    return "\n".join(lines)


def medians(runs: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    return {label: (fig["p50"][0], fig["p99"][0]) for label, fig in spread(runs).items()}
