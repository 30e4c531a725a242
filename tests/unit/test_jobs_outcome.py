"""Reading a Job's outcome from its status, as the Job controller writes it."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from homecluster.jobs import job_message, job_outcome, job_times, owned_by

T0, T1 = "2026-03-04T09:38:15Z", "2026-03-04T09:39:02Z"


def job(*conditions, **status):
    return {"metadata": {"name": "j", "ownerReferences": [{"uid": "u1", "controller": True}]},
            "status": {"conditions": list(conditions), **status}}


def cond(ctype, status="True", reason=None, at=T1, message=None):
    c = {"type": ctype, "status": status, "lastTransitionTime": at}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


@pytest.mark.parametrize("j, expected", [
    ({}, "running"),
    (job(), "running"),
    (job(active=1, startTime=T0), "running"),
    # The newer interim conditions: the outcome is decided but pods may still be terminating.
    (job(cond("SuccessCriteriaMet")), "running"),
    (job(cond("FailureTarget", reason="DeadlineExceeded")), "running"),
    (job(cond("SuccessCriteriaMet"), cond("Complete")), "succeeded"),
    (job(cond("Complete", status="False")), "running"),
    (job(cond("FailureTarget", reason="BackoffLimitExceeded"), cond("Failed", reason="BackoffLimitExceeded")),
     "failed"),
    (job(cond("Failed", reason="DeadlineExceeded")), "timed_out"),
    (job(cond("Failed", reason="PodFailurePolicy")), "failed"),
    (job(cond("Failed", status="False", reason="DeadlineExceeded")), "running"),
])
def test_job_outcome(j, expected):
    assert job_outcome(j) == expected


def test_job_times_success_and_failure():
    ok = job(cond("Complete"), startTime=T0, completionTime=T1)
    assert job_times(ok).started_at == datetime(2026, 3, 4, 9, 38, 15, tzinfo=timezone.utc)
    assert job_times(ok).finished_at == datetime(2026, 3, 4, 9, 39, 2, tzinfo=timezone.utc)
    bad = job(cond("Failed", reason="DeadlineExceeded", at=T1), startTime=T0)
    assert job_times(bad).finished_at == datetime(2026, 3, 4, 9, 39, 2, tzinfo=timezone.utc)
    running = job(startTime=T0)
    assert job_times(running).finished_at is None
    assert job_times({}).started_at is None


def test_job_message_and_ownership():
    bad = job(cond("Failed", reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"))
    assert job_message(bad) == "BackoffLimitExceeded: Job has reached the specified backoff limit"
    assert job_message(job()) == ""
    assert owned_by(bad, "u1") and not owned_by(bad, "u2")
