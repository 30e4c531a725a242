"""When terminal claims are collected."""
from datetime import datetime, timedelta, timezone

from support import objects
from homecluster.model.collection import collect_at, ttl_after_finished
from homecluster.model.settings import Settings

FINISHED = datetime(2026, 3, 4, 10, 0, tzinfo=timezone.utc)


def claim(phase="completed", ttl=None, finished="2026-03-04T10:00:00Z"):
    return objects.claim("c", phase=phase, spec=None if ttl is None else {"ttlSecondsAfterFinished": ttl},
                         **({"finishedAt": finished} if finished else {}))


def group(ttl=None):
    return {"metadata": {"name": "workers"}, "spec": {} if ttl is None else {"ttlSecondsAfterFinished": ttl}}


def test_claim_then_group_then_default():
    s = Settings()
    assert ttl_after_finished(claim(ttl=30), group(120), s) == timedelta(seconds=30)
    assert ttl_after_finished(claim(ttl=0), group(120), s) == timedelta(0)
    assert ttl_after_finished(claim(), group(120), s) == timedelta(seconds=120)
    assert ttl_after_finished(claim(), group(), s) == timedelta(seconds=600)
    assert ttl_after_finished(claim(), None, Settings(claim_ttl=timedelta(seconds=5))) == timedelta(seconds=5)


def test_collect_at_only_for_finished_terminal_claims():
    s = Settings()
    assert collect_at(claim("failed"), group(), s) == FINISHED + timedelta(seconds=600)
    assert collect_at(claim("ready"), group(), s) is None
    assert collect_at(claim("completed", finished=None), group(), s) is None


def test_a_ttl_of_nine_trillion_seconds_is_read_as_the_maximum_and_never_overflows():
    """Issue 15 item 5: 9000000000000 s overflowed the datetime sum and the slot's pass raised forever.
    A claim stored before the CRD's maximum is read clamped to 365 days."""
    from datetime import datetime, timedelta, timezone

    from homecluster.model.collection import collect_at
    from homecluster.model.settings import Settings

    finished = datetime(2026, 3, 4, 9, 0, tzinfo=timezone.utc)
    claim = {"metadata": {"name": "c"}, "spec": {"ttlSecondsAfterFinished": 9000000000000},
             "status": {"phase": "failed", "finishedAt": "2026-03-04T09:00:00Z"}}
    assert collect_at(claim, None, Settings()) == finished + timedelta(days=365)
    group = {"spec": {"ttlSecondsAfterFinished": 2**63 - 1}}
    del claim["spec"]["ttlSecondsAfterFinished"]
    assert collect_at(claim, group, Settings()) == finished + timedelta(days=365)
