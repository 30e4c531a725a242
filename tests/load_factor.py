"""How busy this machine is, measured, for the few bounds a test must put on real time (issue 28).

A test bounds a time only where the bound is its point, or as the give-up of a wait that ends as soon
as the thing happens; either way the bound must hold on a busy machine (a laptop doing other work, CI,
`make test-under-load`). Such a bound is multiplied by `load_factor()`: the load per core, at least 1 (a
quiet machine keeps the bound as written), at most CAP.

The load is the larger of the 1-minute load average and the processes runnable this instant (besides the
one asking). The average alone lags: in the first minute of `make test-under-load` it still said ~1 while
two stress-ng workers and two test workers shared the 2 cores, so the first labs got Job timeouts made for
a quiet machine and their startup Jobs timed out. The instant count did not save them either: a lab built in
the run's first seconds still saw less than the load that followed, and its Job timeouts are fixed when it is
built. So a run that makes its own load says so: scripts/under-load.sh exports HOMECLUSTER_TEST_BUSY_CPUS (the
CPU workers it keeps busy beside the run), and the factor is never below (those workers + the cores) / the cores,
the share of the machine the run gets once both are going.
"""
from __future__ import annotations

import os

CAP = 10.0
# set by scripts/under-load.sh: how many CPU workers it keeps busy beside the run (unset: none)
BUSY_CPUS_VARIABLE = "HOMECLUSTER_TEST_BUSY_CPUS"


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


def declared(cores: int, environ: dict[str, str] | None = None) -> float:
    """The factor the run's own competitors make: (busy CPU workers + cores) / cores; 1 when none are declared
    or the value is no whole number >= 0."""
    text = (os.environ if environ is None else environ).get(BUSY_CPUS_VARIABLE, "")
    busy = int(text) if text.strip().isdigit() else 0
    return (busy + cores) / cores


def load_factor() -> float:
    """max(1, load / cores, the declared competitors' share), measured now, at most CAP; the load is the larger
    of the 1-minute average and the processes runnable now."""
    try:
        average = os.getloadavg()[0]
    except OSError:  # no load average on this platform: assume a quiet machine
        average = 0.0
    cores = os.cpu_count() or 1
    return min(CAP, max(1.0, max(average, runnable_now()) / cores, declared(cores)))


def scaled(seconds: float) -> float:
    """`seconds` stretched by the machine's load now."""
    return seconds * load_factor()
