"""How busy this machine is, measured, for the few bounds a test must put on real time (issue 28).

A test bounds a time only where the bound is its point, or as the give-up of a wait that ends as soon
as the thing happens; either way the bound must hold on a busy machine (a laptop doing other work, CI,
`make test-under-load`). Such a bound is multiplied by `load_factor()`: the load per core, at least 1 (a
quiet machine keeps the bound as written), at most CAP.

The load is the 1-minute load average, never less than what the run itself is known to start. The average
lags: in the first minute of `make test-under-load` it still said ~1 while two stress-ng workers and two test
workers shared the 2 cores, so the first labs got Job timeouts made for a quiet machine and their startup Jobs
timed out. So the run's own share is counted from what it declares: its pytest-xdist workers
(PYTEST_XDIST_WORKER_COUNT, set by xdist in each worker) and the CPU workers scripts/under-load.sh keeps busy
beside it (HOMECLUSTER_TEST_BUSY_CPUS). The factor is never below (busy workers + test workers) / cores, the
share of the machine a test gets once all of them are going (with fewer test workers than cores, the cores).

The processes runnable at one instant (/proc/loadavg's fourth field) were counted too until q14 (issue 27):
sampled every half second through a five-worker `make test`, that count per core had a median of 3.5 and a
90th percentile of 8 against the average's 3.3 and 5.1, so a lab built in a spike got Job timeouts (and a
machine that never boots, waits) twice as long as the load the Jobs then ran under. The declared floor covers
what it was there for: a lab built before the average rose.
"""
from __future__ import annotations

import os

CAP = 10.0
# set by scripts/under-load.sh: how many CPU workers it keeps busy beside the run (unset: none)
BUSY_CPUS_VARIABLE = "HOMECLUSTER_TEST_BUSY_CPUS"
# set by pytest-xdist in each of its workers: how many workers the run has
WORKERS_VARIABLE = "PYTEST_XDIST_WORKER_COUNT"


def _whole(environ: dict[str, str] | os._Environ, name: str) -> int:
    text = environ.get(name, "")
    return int(text) if text.strip().isdigit() else 0


def declared(cores: int, environ: dict[str, str] | None = None) -> float:
    """The factor the run's own processes make once all are going: (busy CPU workers + test workers) / cores,
    the test workers counted as at least the cores; 1 when neither is declared or a value is no whole number
    >= 0."""
    env = os.environ if environ is None else environ
    return (_whole(env, BUSY_CPUS_VARIABLE) + max(cores, _whole(env, WORKERS_VARIABLE))) / cores


def load_factor() -> float:
    """max(1, the 1-minute load average / cores, the declared share), measured now, at most CAP."""
    try:
        average = os.getloadavg()[0]
    except OSError:  # no load average on this platform: assume a quiet machine
        average = 0.0
    cores = os.cpu_count() or 1
    return min(CAP, max(1.0, average / cores, declared(cores)))


def scaled(seconds: float) -> float:
    """`seconds` stretched by the machine's load now."""
    return seconds * load_factor()
