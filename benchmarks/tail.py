"""What the latency tail is made of: the slowest operator writes against all of them, from the audit log.

A step's latency runs from its cause (the latest event on the slot's dependencies; see controller_latency)
to the operator's write. It splits into:
- the cause's own time in the API server (received -> answered; only the real audit log has the answer's
  time, `done`): when the cause is the operator's own earlier write, the pass was waiting for that answer;
- the rest (answered -> the next write received): the watch event reaching the operator, the slot's time in
  the operator's queue, the pass's reads and decisions, the client sending the write.
And it says what the cause was (the operator's own previous write of a chain, a Job's outcome, the Node...),
and how busy the API server was (writes received in the second before the write, against the run's rate).
Pure: no I/O.
"""
from __future__ import annotations

import bisect
import statistics
from collections import Counter
from typing import Any


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def cause_kind(cause: Any) -> str:
    if cause.writer == "operator":
        return f"operator's own {cause.label}"
    return f"{cause.writer}: {cause.label}"


def split(dt: float, w: Any, cause: Any) -> tuple[float | None, float | None, float | None]:
    """(the cause's server time, the rest of the step, the write's own server time); None where unknown."""
    if cause.done is None:
        return None, None, (w.done - w.time) if w.done is not None else None
    return cause.done - cause.time, w.time - cause.done, (w.done - w.time) if w.done is not None else None


def busy(times: list[float], at: float, window: float = 1.0) -> float:
    """Writes (all writers) the server received per second in the `window` seconds before `at` (times sorted)."""
    return (bisect.bisect_left(times, at) - bisect.bisect_left(times, at - window)) / window


def summary(causes: list[tuple[float, Any, Any]], times: list[float]) -> dict[str, float]:
    parts = [split(dt, w, c) for dt, w, c in causes]
    return {"n": float(len(causes)), "step": _median([dt for dt, _, _ in causes]),
            "cause server": _median([p[0] for p in parts if p[0] is not None]),
            "rest": _median([p[1] for p in parts if p[1] is not None]),
            "own server": _median([p[2] for p in parts if p[2] is not None]),
            "rate": _median([busy(times, w.time) for _, w, _ in causes]),
            "chained": sum(1 for _, _, c in causes if c.writer == "operator") / max(len(causes), 1)}


def slowest(causes: list[tuple[float, Any, Any]], share: float = 0.05) -> list[tuple[float, Any, Any]]:
    """The slowest `share` of the steps (at least 5)."""
    count = max(5, round(len(causes) * share))
    return sorted(causes, key=lambda x: -x[0])[:count]


def report(causes: list[tuple[float, Any, Any]], writes: list[Any], share: float = 0.05) -> str:
    if not causes:
        return "the tail: no operator steps"
    start = min(w.time for _, w, _ in causes)
    times = sorted(w.time for w in writes if w.time >= start - 1)
    run_rate = len(times) / max(times[-1] - start, 1e-9)
    tail = slowest(causes, share)
    lines = [f"the tail: the slowest {len(tail)} of {len(causes)} steps against all of them (medians, ms; "
             f"'cause in server' and 'rest' need the real audit log's answer times):",
             f"  {'':10} {'step':>8} {'cause in server':>16} {'rest':>8} {'own write in server':>20} "
             f"{'writes/s 1s before':>19} {'chained':>8}"]
    for name, fig in (("all", summary(causes, times)), ("tail", summary(tail, times))):
        lines.append(f"  {name:10} {fig['step'] * 1e3:8.1f} {fig['cause server'] * 1e3:16.1f} "
                     f"{fig['rest'] * 1e3:8.1f} {fig['own server'] * 1e3:20.1f} {fig['rate']:19.0f} "
                     f"{fig['chained'] * 100:7.0f}%")
    lines.append(f"  (the run's average: {run_rate:.0f} writes/s from the first step on; 'chained': the cause was the operator's own "
                 f"previous write, the step is the pass's next write)")
    lines.append("  the tail's writes: " + ", ".join(f"{label} {n}" for label, n in
                                                     Counter(w.label for _, w, _ in tail).most_common()))
    lines.append("  their causes: " + ", ".join(f"{kind} {n}" for kind, n in
                                                 Counter(cause_kind(c) for _, _, c in tail).most_common()))
    return "\n".join(lines)
