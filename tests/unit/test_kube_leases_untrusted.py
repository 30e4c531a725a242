"""kube.leases with what a watch can bring that is not a kubelet's Lease: no name, a name that is no string,
a renewTime that is no string or is long, a delete of a Lease never seen. Each is passed over (False, nothing
held) or bounded, never a crash of the watch that feeds it."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from homecluster.kube.leases import Leases

T0 = datetime(2026, 3, 4, 10, 0, 0, tzinfo=timezone.utc)


def lease(name: object = "worker-01", renew: object = "2026-03-04T10:00:00.000000Z") -> dict:
    return {"metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"renewTime": renew, "leaseDurationSeconds": 40}}


@pytest.mark.parametrize("name", ["", 5, ["worker-01"], None])
def test_a_lease_without_a_usable_name_is_passed_over(name):
    leases = Leases(clock=lambda: T0)
    assert leases.apply(lease(name)) is False
    assert leases._held == {}


def test_the_delete_of_a_lease_never_seen_changes_nothing():
    leases = Leases(clock=lambda: T0)
    assert leases.apply(lease("worker-09"), deleted=True) is False
    assert leases.apply(lease()) is True and leases.apply(lease(), deleted=True) is True
    assert leases.heartbeat("worker-01") is None


@pytest.mark.parametrize("renew", [1772618400, ["2026-03-04T10:00:00Z"], {"t": 1}, None])
def test_a_renew_time_that_is_no_string_is_held_as_unreadable(renew):
    leases = Leases(clock=lambda: T0)
    assert leases.apply(lease(renew=renew)) is True
    assert leases._held["worker-01"][0] == "" and leases.heartbeat("worker-01").renewed_at == T0


def test_only_the_first_64_characters_of_a_renew_time_are_held_and_compared():
    now = [T0]
    leases = Leases(clock=lambda: now[0])
    long = "2026-03-04T10:00:00.000000Z" + "9" * 37  # 64 characters
    assert leases.apply(lease(renew=long + "a" * 1000))
    assert leases._held["worker-01"][0] == long
    now[0] = T0 + timedelta(seconds=30)
    assert leases.apply(lease(renew=long + "b")) is False  # the same 64 characters: no renewal seen
    assert leases.heartbeat("worker-01").renewed_at == T0


def test_past_the_bound_a_new_lease_is_not_held_and_not_news(monkeypatch):
    from homecluster.kube import leases as module
    monkeypatch.setattr(module, "MAX_LEASES", 2)
    leases = Leases(clock=lambda: T0)
    assert leases.apply(lease("worker-01")) and leases.apply(lease("worker-02"))
    assert leases.apply(lease("worker-03")) is False and leases.heartbeat("worker-03") is None
    assert leases.apply(lease("worker-01", renew="2026-03-04T10:00:30.000000Z")) is False  # held ones still renew
    assert leases._held["worker-01"][0] == "2026-03-04T10:00:30.000000Z"


def test_a_full_list_keeps_when_a_listed_lease_was_seen_renewed():
    now = [T0]
    leases = Leases(clock=lambda: now[0])
    leases.apply(lease(renew="2026-03-04T10:00:00.000000Z"))
    now[0] = T0 + timedelta(seconds=30)
    leases.apply(lease(renew="2026-03-04T10:00:20.000000Z"))  # seen renewed now, on our clock
    leases.replace([lease(renew="2026-03-04T10:00:20.000000Z"), lease("worker-02")])
    assert leases.heartbeat("worker-01").renewed_at == T0 + timedelta(seconds=30)  # not re-read as first seen
