"""Pure readers of a lifecycle Job's status: what the claim controller acts on.

Only the Job's terminal conditions count (the contract's "Exit codes"): Complete is success,
Failed is failure, and Failed with reason DeadlineExceeded is the Job's own timeout. The newer
interim conditions (SuccessCriteriaMet, FailureTarget) are not terminal: pods may still be running.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Mapping

from homecluster.jobs.objects import as_dict
from homecluster.model.objects import dig

Outcome = Literal["running", "succeeded", "failed", "timed_out"]


def _true_condition(job: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for cond in dig(job, "status", "conditions", default=[]) or []:
        if cond.get("type") == ctype and str(cond.get("status")) == "True":
            return cond
    return None


def job_outcome(job: Any) -> Outcome:
    """running | succeeded | failed | timed_out, from the Job's status conditions."""
    j = as_dict(job)
    if _true_condition(j, "Complete"):
        return "succeeded"
    failed = _true_condition(j, "Failed")
    if failed:
        return "timed_out" if failed.get("reason") == "DeadlineExceeded" else "failed"
    return "running"


def _time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True)
class JobTimes:
    """When the Job started and when it ended (None while unknown)."""

    started_at: datetime | None
    finished_at: datetime | None


def job_times(job: Any) -> JobTimes:
    """status.startTime, and the end: completionTime on success, the Failed condition's time otherwise."""
    j = as_dict(job)
    finished = _time(dig(j, "status", "completionTime"))
    if finished is None:
        failed = _true_condition(j, "Failed")
        if failed:
            finished = _time(failed.get("lastTransitionTime"))
    return JobTimes(started_at=_time(dig(j, "status", "startTime")), finished_at=finished)


def job_message(job: Any) -> str:
    """The reason and message of the terminal condition, for the claim's status.message ("" if none)."""
    j = as_dict(job)
    cond = _true_condition(j, "Failed") or _true_condition(j, "Complete")
    if not cond:
        return ""
    parts = [p for p in (cond.get("reason"), cond.get("message")) if p]
    return ": ".join(parts)


def owned_by(job: Any, uid: str) -> bool:
    """True when the Job's controller ownerReference is the object with this uid.

    A create that meets 409 AlreadyExists reads the existing Job and checks this: a Job of the same
    name owned by something else is a leftover, not this step's Job.
    """
    for ref in dig(as_dict(job), "metadata", "ownerReferences", default=[]) or []:
        if ref.get("controller") and ref.get("uid") == uid:
            return True
    return False
