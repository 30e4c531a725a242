"""How busy this machine is, measured, for the few bounds a test must put on real time (issue 28).

A test bounds a time only where the bound is its point, or as the give-up of a wait that ends as soon
as the thing happens; either way the bound must hold on a busy machine (a laptop doing other work, CI,
`make test-under-load`). Such a bound is multiplied by `load_factor()`: the load per core, at least 1 (a
quiet machine keeps the bound as written), at most CAP.

The load is the larger of the 1-minute load average and the processes runnable this instant (besides the
one asking). The average alone lags: in the first minute of `make test-under-load` it still said ~1 while
two stress-ng workers and two test workers shared the 2 cores, so the first labs got Job timeouts made for
a quiet machine and their startup Jobs timed out.
"""
from __future__ import annotations

import os

CAP = 10.0


def runnable_now(loadavg: str | None = None) -> float:
    """The processes runnable this instant, this one left out: /proc/loadavg's fourth field ("running/total");
    0 where it cannot be read."""
    try:
        if loadavg is None:
            with open("/proc/loadavg", encoding="ascii") as f:
                loadavg = f.read()
        return max(0.0, float(int(loadavg.split()[3].split("/")[0]) - 1))
    except (OSError, IndexError, ValueError):
        return 0.0


def load_factor() -> float:
    """max(1, load / cores), measured now, at most CAP; the load is the larger of the 1-minute average and the
    processes runnable now."""
    try:
        average = os.getloadavg()[0]
    except OSError:  # no load average on this platform: assume a quiet machine
        average = 0.0
    return min(CAP, max(1.0, max(average, runnable_now()) / (os.cpu_count() or 1)))


def scaled(seconds: float) -> float:
    """`seconds` stretched by the machine's load now."""
    return seconds * load_factor()
