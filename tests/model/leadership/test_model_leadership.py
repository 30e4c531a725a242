"""model/leadership.py, pure: the Lease read as untrusted data, the step client-go's rules choose, and the
spec each step writes (issue 23 item 12; the operator-level election is tests/operator/test_leader_election.py)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from homecluster.model.leadership import (MAX_IDENTITY, Record, Step, lease_spec, micro_time, next_step,
                                          record_of, release_spec, valid_identity)
from homecluster.model.timestamps import TimestampError

NOW = datetime(2026, 12, 3, 16, 30, 5, 123456, tzinfo=timezone.utc)


def lease(**spec) -> dict:
    return {"metadata": {"name": "homecluster-operator", "resourceVersion": "42"}, "spec": spec}


def test_a_lease_is_read_field_by_field() -> None:
    got = record_of(lease(holderIdentity="op-a", leaseDurationSeconds=15, renewTime="2026-12-03T16:30:00.000000Z",
                          leaseTransitions=3), 30.0)
    assert got == Record(holder="op-a", duration=15.0, renewed="2026-12-03T16:30:00.000000Z", transitions=3,
                         resource_version="42")


def test_no_lease_is_no_record() -> None:
    assert record_of(None, 15.0) is None


@pytest.mark.parametrize("spec", [
    {"holderIdentity": 7, "leaseDurationSeconds": "15", "renewTime": 12, "leaseTransitions": "2"},
    {"holderIdentity": None, "leaseDurationSeconds": True, "renewTime": None, "leaseTransitions": -1},
    {"leaseDurationSeconds": -5, "leaseTransitions": False},
    {},
])
def test_fields_of_the_wrong_type_or_sign_read_as_absent(spec) -> None:
    assert record_of(lease(**spec), 15.0) == Record(holder="", duration=15.0, renewed="", transitions=0,
                                                    resource_version="42")


@pytest.mark.parametrize("body", [{"spec": None}, {"spec": ["x"]}, {"spec": "x"}, {}])
def test_a_spec_that_is_no_object_reads_as_an_empty_one(body) -> None:
    assert record_of(body, 9.0) == Record(holder="", duration=9.0, renewed="", transitions=0, resource_version="")


def test_zero_is_a_number_and_a_float_duration_is_kept() -> None:
    got = record_of(lease(leaseDurationSeconds=0, leaseTransitions=0), 15.0)
    assert (got.duration, got.transitions) == (0.0, 0)
    assert record_of(lease(leaseDurationSeconds=2.5), 15.0).duration == 2.5


def record(holder: str, duration: float = 15.0, renewed: str = "t1") -> Record:
    return Record(holder=holder, duration=duration, renewed=renewed, transitions=1, resource_version="1")


@pytest.mark.parametrize("rec,unchanged,step", [
    (None, 0.0, Step.CREATE),
    (record("me"), 999.0, Step.RENEW),
    (record("me"), 0.0, Step.RENEW),
    (record(""), 0.0, Step.TAKE),  # stepped down: free at once
    (record("other"), 15.0, Step.TAKE),  # unchanged for exactly the duration: expired
    (record("other"), 14.99, Step.WAIT),
    (record("other"), 0.0, Step.WAIT),
    (record("other", duration=0.0), 0.0, Step.TAKE),
])
def test_the_step(rec, unchanged, step) -> None:
    assert next_step(rec, "me", unchanged) is step


def test_the_same_term_is_holder_renewal_and_duration() -> None:
    a = record("op-a")
    assert a.same_term(Record("op-a", 15.0, "t1", 9, "99"))  # transitions and version are not the term
    assert not a.same_term(None)
    assert not a.same_term(record("op-b"))
    assert not a.same_term(record("op-a", renewed="t2"))
    assert not a.same_term(record("op-a", duration=16.0))


def test_micro_time_is_utc_with_microseconds() -> None:
    assert micro_time(NOW) == "2026-12-03T16:30:05.123456Z"
    assert micro_time(NOW.astimezone(timezone(timedelta(hours=2)))) == "2026-12-03T16:30:05.123456Z"


def test_create_writes_the_first_term() -> None:
    assert lease_spec(Step.CREATE, None, "me", 15.0, NOW) == {
        "holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": "2026-12-03T16:30:05.123456Z",
        "acquireTime": "2026-12-03T16:30:05.123456Z", "leaseTransitions": 0}


def test_take_counts_one_more_transition() -> None:
    spec = lease_spec(Step.TAKE, Record("other", 15.0, "t", 4, "1"), "me", 14.6, NOW)
    assert spec == {"holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": "2026-12-03T16:30:05.123456Z",
                    "acquireTime": "2026-12-03T16:30:05.123456Z", "leaseTransitions": 5}


def test_renew_writes_only_the_renewal() -> None:
    assert lease_spec(Step.RENEW, record("me"), "me", 0.2, NOW) == {
        "holderIdentity": "me", "leaseDurationSeconds": 1, "renewTime": "2026-12-03T16:30:05.123456Z"}


def test_nothing_is_written_while_another_holds_a_fresh_lease() -> None:
    with pytest.raises(ValueError) as refused:
        lease_spec(Step.WAIT, record("other"), "me", 15.0, NOW)
    assert str(refused.value) == "nothing is written while another holder's lease is fresh"


def test_a_naive_moment_is_refused_naming_the_field() -> None:
    with pytest.raises(TimestampError) as refused:
        micro_time(datetime(2026, 12, 3, 16, 30))
    assert str(refused.value) == ("renewTime: naive datetime datetime.datetime(2026, 12, 3, 16, 30); pass an aware "
                                  "datetime (tzinfo=timezone.utc)")


def test_stepping_down_empties_the_holder() -> None:
    assert release_spec(NOW) == {"holderIdentity": None, "leaseDurationSeconds": 1,
                                 "renewTime": "2026-12-03T16:30:05.123456Z"}


@pytest.mark.parametrize("identity", ["homecluster-7d9f-abcde", "a", "x" * MAX_IDENTITY])
def test_an_identity_is_kept(identity) -> None:
    assert valid_identity(identity) == identity


@pytest.mark.parametrize("identity", ["", "x" * (MAX_IDENTITY + 1), "a b", "a\tb", "a\nb", "a\x00b"])
def test_an_identity_that_cannot_be_told_apart_is_refused(identity) -> None:
    with pytest.raises(ValueError) as refused:
        valid_identity(identity)
    assert str(refused.value) == (f"--leader-identity {identity!r}: give 1..128 printable characters without "
                                  "spaces, unique per replica (the Deployment passes the pod name)")
