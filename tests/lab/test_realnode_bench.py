"""benchmarks/realnode_jobs.py's arithmetic: the phases of one Job, their p50 and spread, the container's
figures against the process executor's. (The runs themselves need a real node: docs/images.md has the figures.)"""
from __future__ import annotations

import pytest

import realnode_jobs as bench  # benchmarks/: on sys.path by tests/conftest.py


def clock(created: float, started: float, complete: float) -> bench.JobClock:
    return bench.JobClock(created=created, started=started, complete=complete)


def test_a_jobs_phases_and_their_median_over_the_jobs():
    clocks = [clock(0, 1, 5), clock(10, 12, 20), clock(3, 3.5, 6)]
    assert clocks[1].phases() == {"created_to_started": 2, "started_to_complete": 8, "created_to_complete": 10}
    got = bench.summary(clocks)
    assert got["created_to_started"] == {"p50": 1.0, "min": 0.5, "max": 2.0}
    assert got["created_to_complete"] == {"p50": 5.0, "min": 3.0, "max": 10.0}
    with pytest.raises(AssertionError):
        bench.JobClock(created=1.0).phases()  # an unfinished Job has no phases


def test_the_container_against_the_process_executor():
    process = {"jobs": {p: {"p50": 4.0} for p in bench.PHASES}, "operator_rss_mib": 100.0, "operator_start_s": 2.0}
    container = {"jobs": {p: {"p50": 5.0} for p in bench.PHASES}, "operator_rss_mib": 80.0, "operator_start_s": 3.0}
    got = bench.compare(process, container)
    assert got["created_to_complete"] == {"ratio": 1.25, "added_s": 1.0}
    assert got["operator_rss_mib"] == {"ratio": 0.8} and got["operator_start_s"] == {"ratio": 1.5}
    assert bench.compare({**process, "operator_rss_mib": None}, container)["operator_rss_mib"] == {"ratio": None}


def test_the_seconds_between_two_kubernetes_timestamps():
    assert bench._seconds_between("2026-12-04T05:00:01Z", "2026-12-04T05:00:04Z") == 3.0
