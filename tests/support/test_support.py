"""support.waits.until and poll, support.lab_settings: the one wait and the Job room of the system tests (issue 28)."""
from __future__ import annotations

import asyncio

import pytest

from support import lab_settings, waits


async def test_until_returns_what_the_check_returned_once_it_holds_sync_or_async():
    calls = []

    def third_time():
        calls.append(1)
        return len(calls) >= 3 and {"phase": "ready"}

    assert await waits.until(third_time, "the third call", 5, interval=0.001) == {"phase": "ready"}
    assert len(calls) == 3  # ended as soon as it held

    async def awaited():
        await asyncio.sleep(0)
        return "up"

    assert await waits.until(awaited, "an async check", 5) == "up"


async def test_until_gives_up_after_its_bound_times_the_load_and_names_what_with_the_detail_then(monkeypatch):
    monkeypatch.setattr(waits, "load_factor", lambda: 3.0)  # a machine three times busier than its cores
    monkeypatch.setattr(waits, "BOUND_SCALE", 2.0)          # as k8s_pool.real_pool raises it
    state = {"phase": "booting"}
    said = []

    def detail():
        said.append(state["phase"])
        return f"operator log: {state['phase']}"

    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(AssertionError) as failure:
        await waits.until(lambda: state.update(phase="failed") and False, lambda: f"c1 ready (now {state})", 0.01,
                          detail=detail, interval=0.001)
    assert loop.time() - started >= 0.06  # 0.01 s x 3 x 2
    assert str(failure.value) == ("timed out after 0.1s waiting for c1 ready (now {'phase': 'failed'})\n"
                                  "operator log: failed")
    assert said == ["failed"]  # called once, at the give-up: the state then, not at the start


async def test_poll_is_until_without_the_failure_the_last_false_value_after_its_scaled_bound(monkeypatch):
    monkeypatch.setattr(waits, "load_factor", lambda: 2.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await waits.poll(lambda: [], 0.02, interval=0.001) == []  # gave up: the check's own last value
    assert loop.time() - started >= 0.04  # 0.02 s x 2
    ready = iter([0, 0, "on"])
    assert await waits.poll(lambda: next(ready), 5, interval=0.001) == "on"


def test_the_failure_without_a_detail_is_one_line():
    assert waits.timed_out(12.34, "the slot's finalizer") == "timed out after 12.3s waiting for the slot's finalizer"


SHORT = {"startup_job_timeout": "25s", "job_poll_interval": "1s", "registration_wait": "4s", "readiness_gate": "4s",
         "uncordon_retry_ceiling": "1s", "slack": "1s", "shutdown_job_timeout": "30s", "shutdown_holdoff": "15s"}


def test_only_the_job_timeouts_are_stretched_in_whole_seconds_rounded_up():
    room = lab_settings.with_job_room(SHORT, 2.5)
    assert (room["startup_job_timeout"], room["shutdown_job_timeout"]) == ("63s", "75s")  # 62.5 -> 63
    assert {k: v for k, v in room.items() if k not in lab_settings.JOB_TIMEOUTS} == \
        {k: v for k, v in SHORT.items() if k not in lab_settings.JOB_TIMEOUTS}
    assert lab_settings.with_job_room(SHORT, 1.0) == SHORT  # a quiet machine keeps the figures as written
    assert lab_settings.with_job_room(SHORT, 0.5) == SHORT  # never shortened
    assert lab_settings.with_job_room({"shutdown_job_timeout": "1m30s"}, 2) == {"shutdown_job_timeout": "180s"}
    assert lab_settings.with_job_room({"slack": "1s"}, 3) == {"slack": "1s"}


def test_a_job_timeout_is_read_from_the_settings_the_lab_got():
    room = lab_settings.with_job_room(SHORT, 2.5)
    assert lab_settings.job_timeout(room) == 63.0
    assert lab_settings.job_timeout(room, "shutdown_job_timeout") == 75.0


def test_the_boot_window_is_read_from_the_settings_the_lab_got():
    assert lab_settings.boot_window(SHORT) == 36.0  # 25+1+4+4+1+1
    assert lab_settings.boot_window(lab_settings.with_job_room(SHORT, 2)) == 61.0  # the startup Job's 50 s in it


def test_the_load_is_the_average_per_core(monkeypatch):
    import load_factor as lf
    monkeypatch.delenv(lf.BUSY_CPUS_VARIABLE, raising=False)  # measured only (make test-under-load declares 2)
    monkeypatch.delenv(lf.WORKERS_VARIABLE, raising=False)  # as in a run without xdist
    monkeypatch.setattr(lf.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(lf.os, "getloadavg", lambda: (7.0, 5.0, 3.0))
    assert lf.load_factor() == 3.5
    monkeypatch.setattr(lf.os, "getloadavg", lambda: (0.3, 0.2, 0.1))
    assert lf.load_factor() == 1.0  # a quiet machine keeps the bounds as written
    monkeypatch.setattr(lf.os, "getloadavg", lambda: (99.0, 1.0, 1.0))
    assert lf.load_factor() == lf.CAP

    def no_average():
        raise OSError("no load average here")
    monkeypatch.setattr(lf.os, "getloadavg", no_average)
    assert lf.load_factor() == 1.0


def test_a_run_never_counts_less_than_its_own_workers_and_declared_competitors(monkeypatch):
    """A lab built before the load average rose still gets Job timeouts for the shared machine (issue 28: the
    first labs of a run timed out): the run's xdist workers and scripts/under-load.sh's CPU workers count."""
    import load_factor as lf
    busy, workers = lf.BUSY_CPUS_VARIABLE, lf.WORKERS_VARIABLE
    assert lf.declared(2, {busy: "2"}) == 2.0  # two workers beside a run of one process on two cores
    assert lf.declared(4, {busy: "2"}) == 1.5
    assert lf.declared(2, {}) == 1.0
    assert lf.declared(2, {workers: "5"}) == 2.5  # make test: five xdist workers on two cores
    assert lf.declared(2, {workers: "4", busy: "2"}) == 3.0  # make test-under-load: four and two stress-ng workers
    assert lf.declared(4, {workers: "2"}) == 1.0  # fewer workers than cores: the cores
    assert lf.declared(2, {busy: "-3"}) == lf.declared(2, {busy: "x"}) == lf.declared(2, {workers: "two"}) == 1.0
    monkeypatch.setattr(lf.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(lf.os, "getloadavg", lambda: (0.9, 0.5, 0.2))  # the run's first second: still quiet
    monkeypatch.delenv(workers, raising=False)
    monkeypatch.setenv(busy, "2")
    assert lf.load_factor() == 2.0
    monkeypatch.setenv(workers, "5")
    assert lf.load_factor() == 3.5
    monkeypatch.delenv(busy)
    assert lf.load_factor() == 2.5
    monkeypatch.setattr(lf.os, "getloadavg", lambda: (9.0, 5.0, 3.0))  # measured above the declared: measured
    assert lf.load_factor() == 4.5
    monkeypatch.delenv(workers)
    monkeypatch.setattr(lf.os, "getloadavg", lambda: (0.9, 0.5, 0.2))
    assert lf.load_factor() == 1.0
