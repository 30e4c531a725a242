"""timings.boot_times through the boot monitor: the three stage histograms a boot that lands ready feeds.

boot = spec.requestedAt -> ready, registration = startup Job completed -> Node joined, gate = Node
joined -> ready; each stage is timed from the clocks the claim and its objects carry (the fake clock
moves between them), so a wrong clock, a swapped stage or a lost clamp shows in the sums.
"""
from __future__ import annotations

import pytest

from homecluster.lifecycle.timings import boot_times
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab
STAGES = ("boot", "registration", "gate")


def observed(env, group: str = "workers") -> dict[str, tuple[float | None, float | None]]:
    reg = env.ctx.metrics.registry
    return {s: (reg.get_sample_value(f"homecluster_{s}_seconds_count", {"group": group}),
                reg.get_sample_value(f"homecluster_{s}_seconds_sum", {"group": group})) for s in STAGES}


async def test_a_ready_boot_records_each_stage_from_its_own_clocks(pool):
    env = pool
    await env.claim()
    await env.step()  # booting at t0 = requestedAt
    start = env.clock.now
    env.clock.advance(seconds=7)
    await env.job_done("c1-startup")  # completed at t0+7
    await env.step()
    env.clock.advance(seconds=11)
    joined = env.clock.now
    await env.node(at=joined)  # joined at t0+18
    env.clock.advance(seconds=3)
    await env.step()
    status = env.claim_status()
    assert status["phase"] == "ready"
    assert status["registeredAt"] == format_time(joined)  # the Node's join, not the pass's moment
    total = (env.clock.now - start).total_seconds()
    assert observed(env) == {"boot": (1.0, total), "registration": (1.0, 11.0), "gate": (1.0, total - 18.0)}, \
        (status, total)


async def test_a_machine_that_joins_before_its_job_completes_records_zero_registration(pool):
    env = pool
    await env.claim()
    await env.step()
    start = env.clock.now
    env.clock.advance(seconds=4)
    await env.node(at=env.clock.now)  # joined at t0+4, the Job still running
    env.clock.advance(seconds=5)
    await env.job_done("c1-startup")  # completed at t0+9: the clocks say -5
    await env.step()
    assert env.claim_status()["phase"] == "ready"
    total = (env.clock.now - start).total_seconds()
    assert observed(env) == {"boot": (1.0, total), "registration": (1.0, 0.0), "gate": (1.0, total - 4.0)}


def test_boot_times_stage_by_stage():
    """The pure arithmetic at its edges: unknown, unreadable and inverted clocks."""
    from datetime import datetime, timezone
    at = datetime(2026, 1, 1, 0, 1, 40, tzinfo=timezone.utc)  # 100 s after requestedAt
    spec = {"requestedAt": "2026-01-01T00:00:00Z"}
    full = {"spec": spec, "status": {"startupSucceededAt": "2026-01-01T00:00:30Z",
                                     "registeredAt": "2026-01-01T00:01:10Z"}}
    t = boot_times(full, at)
    assert (t.total, t.registration, t.gate) == (100.0, 40.0, 30.0)
    # the Job's completion not known yet, the Node joined: registration took no time
    t = boot_times({"spec": spec, "status": {"registeredAt": "2026-01-01T00:01:10Z"}}, at)
    assert (t.total, t.registration, t.gate) == (100.0, 0.0, 30.0)
    # neither known: no registration or gate stage, the boot still timed
    t = boot_times({"spec": spec, "status": {}}, at)
    assert (t.total, t.registration, t.gate) == (100.0, None, None)
    # completed but not joined: no registration stage
    t = boot_times({"spec": spec, "status": {"startupSucceededAt": "2026-01-01T00:00:30Z"}}, at)
    assert (t.total, t.registration, t.gate) == (100.0, None, None)
    # unreadable clocks are stages not timed, never an error; a ready before the request clamps to zero
    t = boot_times({"spec": {"requestedAt": "yesterday"}, "status": {"startupSucceededAt": "soon",
                                                                       "registeredAt": "2026-01-01T00:02:00Z"}}, at)
    assert (t.total, t.registration, t.gate) == (None, 0.0, 0.0)
    t = boot_times({}, at)
    assert (t.total, t.registration, t.gate) == (None, None, None)
