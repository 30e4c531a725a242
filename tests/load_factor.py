"""How busy this machine is, measured, for the few bounds a test must put on real time (issue 28).

A test bounds a time only where the bound is its point, or as the give-up of a wait that ends as soon
as the thing happens; either way the bound must hold on a busy machine (a laptop doing other work, CI,
`make test-under-load`). Such a bound is multiplied by `load_factor()`: the 1-minute load average per
core, at least 1 (a quiet machine keeps the bound as written), at most CAP.
"""
from __future__ import annotations

import os

CAP = 10.0


def load_factor() -> float:
    """max(1, load average / cores), measured now, at most CAP."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform: assume a quiet machine
        return 1.0
    return min(CAP, max(1.0, load / (os.cpu_count() or 1)))


def scaled(seconds: float) -> float:
    """`seconds` stretched by the machine's load now."""
    return seconds * load_factor()
