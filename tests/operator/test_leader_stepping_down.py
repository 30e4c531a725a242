"""operator/leader.py beyond the rules (tests/operator/test_leader_election.py): stepping down, holding against a
slow or a lost API, and what each step says in the log -- on the lab's real HTTP API server.

Our monotonic clock is a hand-moved one, as there. A slow API is the real one behind a client that waits first
(`Slow`); a Lease taken by another candidate between our read and our write is the real one too (`Racing`
lets the other candidate write at that moment)."""
from __future__ import annotations

import asyncio
import logging

import pytest
from load_factor import scaled

from homecluster.kube import client as kube
from homecluster.kube.connection import Connection
from homecluster.operator.leader import LEASE_NAME, LeaderElector, Timing

NS = "homecluster-system"
WHERE = f"{NS}/{LEASE_NAME}"
TIMING = Timing(duration=15, renew_deadline=10, retry=0.05)


class Mono:
    def __init__(self, step: float = 0.0) -> None:
        self.t, self.step = 1000.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


class Slow(kube.KubeClient):
    """The lab's API, every read of which takes `delay` seconds to come back."""

    delay = 0.0

    async def get(self, *args, **kwargs):
        await asyncio.sleep(self.delay)
        return await super().get(*args, **kwargs)


class Racing(kube.KubeClient):
    """The lab's API; `before_patch` runs just before our next patch goes out (another candidate writing)."""

    before_patch = None

    async def patch(self, *args, **kwargs):
        hook, self.before_patch = self.before_patch, None
        if hook is not None:
            await hook()
        return await super().patch(*args, **kwargs)


@pytest.fixture
async def client(lab):
    c = Racing(Connection(server=lab.url))
    yield c
    await c.close()


async def lease(client) -> dict:
    return await client.get(kube.LEASES, LEASE_NAME, NS)


def said(caplog, level: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "homecluster.leader" and r.levelname == level]


async def test_a_clean_stop_empties_the_holder_and_says_so(client, caplog):
    caplog.set_level(logging.INFO, "homecluster.leader")
    a = LeaderElector(client, NS, "op-a", TIMING, clock=Mono())
    assert a.leading is False
    await a.campaign()
    assert said(caplog, "INFO") == [f'leader election: "op-a" waiting for Lease {WHERE}',
                                    f'leader election: "op-a" now holds Lease {WHERE} (transition 0)']
    created = await lease(client)
    assert set(created) == {"apiVersion", "kind", "metadata", "spec"} and created["kind"] == "Lease"
    await a.release()
    assert a.leading is False and (await lease(client))["spec"].get("holderIdentity") is None
    assert said(caplog, "INFO")[-1] == f'leader election: "op-a" released Lease {WHERE}'


async def test_a_candidate_that_never_led_releases_nothing(client):
    a = LeaderElector(client, NS, "op-a", TIMING, clock=Mono())
    assert await a.try_once()  # it holds the Lease, but campaign() never said it leads
    version = (await lease(client))["metadata"]["resourceVersion"]
    await a.release()
    assert (await lease(client))["metadata"]["resourceVersion"] == version


async def test_a_leader_whose_lease_was_taken_leaves_the_new_holder_alone(client, caplog):
    clock = Mono()
    a, b = (LeaderElector(client, NS, who, TIMING, clock=clock) for who in ("op-a", "op-b"))
    await a.campaign()
    assert not await b.try_once()
    clock.t += 16  # a paused past its lease; b takes it
    assert await b.try_once()
    version = (await lease(client))["metadata"]["resourceVersion"]
    await a.release()
    assert a.leading is False
    assert (await lease(client))["metadata"]["resourceVersion"] == version and not said(caplog, "WARNING")


async def test_a_lease_taken_between_our_read_and_our_write_is_not_emptied(client, caplog):
    """The release is conditional on the Lease as read: b's write in between makes it a Conflict, said, not raised."""
    clock = Mono()
    a, b = (LeaderElector(client, NS, who, TIMING, clock=clock) for who in ("op-a", "op-b"))
    await a.campaign()
    assert not await b.try_once()

    async def b_takes_it() -> None:
        clock.t += 16
        assert await b.try_once()

    client.before_patch = b_takes_it
    await a.release()
    assert (await lease(client))["spec"]["holderIdentity"] == "op-b"
    [warning] = said(caplog, "WARNING")
    assert warning.startswith(f"leader election: could not release Lease {WHERE} (")
    assert warning.endswith("); it expires by itself") and "(None)" not in warning and "409" in warning


async def test_a_release_that_cannot_reach_the_api_is_logged_not_raised(lab, caplog):
    good = kube.KubeClient(Connection(server=lab.url), timeout=scaled(2))
    a = LeaderElector(good, NS, "op-a", TIMING, clock=Mono())
    await a.campaign()
    a.client = kube.KubeClient(Connection(server="http://127.0.0.1:9"), timeout=scaled(2))  # nothing listens
    try:
        await a.release()
        assert a.leading is False
        [warning] = said(caplog, "WARNING")
        assert warning.startswith(f"leader election: could not release Lease {WHERE} (")
        assert "127.0.0.1:9" in warning and warning.endswith("); it expires by itself")
        assert (await lease(good))["spec"]["holderIdentity"] == "op-a"  # it runs out by itself
    finally:
        await a.client.close()
        await good.close()


async def test_a_leader_that_loses_the_api_says_each_failed_look_and_then_that_it_gave_up(lab, caplog):
    timing = Timing(duration=15, renew_deadline=10, retry=0.01)
    good = kube.KubeClient(Connection(server=lab.url))
    a = LeaderElector(good, NS, "op-a", timing, clock=Mono(step=1.0))  # every look at the clock: 1 s later
    await a.campaign()
    a.client = kube.KubeClient(Connection(server="http://127.0.0.1:9"), timeout=scaled(2))
    try:
        await asyncio.wait_for(a.hold(), scaled(20))
        assert a.leading is False
        warnings = said(caplog, "WARNING")
        assert warnings and all(w.startswith(f"leader election: Lease {WHERE}: ClientConnectorError: ")
                                for w in warnings), warnings
        assert said(caplog, "ERROR") == [f'leader election: "op-a" could not renew Lease {WHERE} for 10s: no '
                                         "longer the leader"]
    finally:
        await a.client.close()
        await good.close()


async def test_a_leader_whose_lease_was_taken_says_who_holds_it_now(client, caplog):
    clock = Mono()
    a, b = (LeaderElector(client, NS, who, TIMING, clock=clock) for who in ("op-a", "op-b"))
    await a.campaign()
    assert not await b.try_once()
    clock.t += 16
    assert await b.try_once()
    await asyncio.wait_for(a.hold(), scaled(10))
    assert a.leading is False
    assert said(caplog, "ERROR") == [f'leader election: Lease {WHERE} is now held by "op-b": "op-a" is no longer '
                                     "the leader"]


async def test_a_slow_renewal_within_the_renew_deadline_still_renews(lab):
    """Each renewal may take what is left of the renew deadline, not less: a slow API keeps its leader."""
    slow = Slow(Connection(server=lab.url))
    a = LeaderElector(slow, NS, "op-a", TIMING, clock=Mono())  # the hand clock stands still: 10 s left each time
    await a.campaign()
    first = (await slow.get(kube.LEASES, LEASE_NAME, NS))["spec"]["renewTime"]
    slow.delay = 0.3  # longer than the 0.1 s floor of a look
    task = asyncio.create_task(a.hold())
    try:
        async def renewed() -> None:
            while (await kube.KubeClient.get(slow, kube.LEASES, LEASE_NAME, NS))["spec"]["renewTime"] == first:
                assert not task.done(), "hold() gave up"
                await asyncio.sleep(0.05)
        await asyncio.wait_for(renewed(), scaled(10))
        assert a.leading
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await slow.close()


async def test_a_renewal_never_outlasts_the_renew_deadline(lab):
    """A look that hangs is cut at what is left of the renew deadline (here: nothing, so the 0.1 s floor)."""
    slow = Slow(Connection(server=lab.url))
    a = LeaderElector(slow, NS, "op-a", TIMING, clock=Mono(step=100.0))  # each look at the clock: 100 s later
    await a.campaign()
    slow.delay = 3600.0
    try:
        await asyncio.wait_for(a.hold(), scaled(10))
        assert a.leading is False
    finally:
        await slow.close()


async def test_one_failed_renewal_is_not_the_end_of_the_leadership(lab, client, caplog):
    """A renewal refused once (a 500) is said and tried again; the next one renews, and the leader leads on."""
    a = LeaderElector(client, NS, "op-a", TIMING, clock=Mono())  # the hand clock stands still: the deadline is far
    await a.campaign()
    first = (await lease(client))["spec"]["renewTime"]
    lab.faults.fail_next("leases", 1, 500, verbs=("patch",))
    task = asyncio.create_task(a.hold())
    try:
        async def renewed() -> None:
            while (await lease(client))["spec"]["renewTime"] == first:
                assert not task.done(), said(caplog, "ERROR")
                await asyncio.sleep(0.02)
        await asyncio.wait_for(renewed(), scaled(10))
        assert a.leading and not task.done() and not said(caplog, "ERROR")
        [warning] = said(caplog, "WARNING")
        assert warning.startswith(f"leader election: Lease {WHERE}: ApiError: ")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_take_is_conditional_on_the_lease_as_read(client):
    """b reads a Lease that has run out; a renews before b writes: b's take is a Conflict, and a keeps it."""
    clock = Mono()
    a, b = (LeaderElector(client, NS, who, TIMING, clock=clock) for who in ("op-a", "op-b"))
    await a.campaign()
    assert not await b.try_once()
    clock.t += 16
    client.before_patch = a.try_once  # a's renewal lands between b's read and b's write
    assert not await b.try_once()
    assert (await lease(client))["spec"]["holderIdentity"] == "op-a"


def test_an_impossible_timing_is_refused_with_the_reason():
    with pytest.raises(ValueError) as refused:
        Timing(15, 20, 2)
    assert str(refused.value) == ("leader election needs 0 < retry (2s) < renew deadline (20s) < lease duration "
                                  "(15s): a leader must give up before anyone else may take its lease")
