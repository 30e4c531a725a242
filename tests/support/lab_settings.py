"""The operator's settings for a lab run by the system tests, its Job timeouts stretched to the machine (issue 28).

A startup or shutdown Job runs the real playbooks through ansible-runner, which takes 5-8 s on 2 quiet cores and
several times that on busy ones. No test is about how long ansible-runner takes, so the lab configs
(tests/integration/integration_pool.py) multiply the Job timeouts, once, by the measured load factor when they
build a lab, instead of each test raising them; the boot window a test computes is then read from the settings
the lab actually got (boot_window), never from a constant.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from homecluster.model.settings import Settings

# the settings that bound real ansible-runner processes (a Job's playbooks): the startup Job, and the shutdown
# Job's cordon-drain and power-off (jobs.extravars.graceful_wait_budget grows with the latter)
JOB_TIMEOUTS = ("startup_job_timeout", "shutdown_job_timeout")


def with_job_room(settings: Mapping[str, str], factor: float) -> dict[str, str]:
    """`settings` with each Job timeout multiplied by `factor` (at least 1), in whole seconds rounded up; the
    other settings as they are."""
    out = dict(settings)
    for name in JOB_TIMEOUTS:
        if name in out:
            out[name] = f"{math.ceil(job_timeout({name: out[name]}, name) * max(1.0, factor))}s"
    return out


def job_timeout(settings: Mapping[str, str], name: str = "startup_job_timeout") -> float:
    """A Job timeout of these settings (as a lab got them, stretched), in seconds: what a wait for a Job's end must
    outlast, since the load that stretched it at the lab's start may be gone when the wait's own bound is scaled."""
    return getattr(Settings.from_mapping(settings), name).total_seconds()


def boot_window(settings: Mapping[str, str]) -> float:
    """The boot window (the boot floor, the MachineGone expiry) of these settings, in seconds."""
    return Settings.from_mapping(settings).boot_floor.total_seconds()
