"""Job status as the Job controller (Kubernetes 1.31+) writes it, as pure functions of what happened.

A finished Job gets the interim condition first and the terminal one with it: SuccessCriteriaMet then
Complete, FailureTarget then Failed, with the controller's own reasons and messages.
"""
from __future__ import annotations

from typing import Any

COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_LIMIT = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")


def _cond(ctype: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": ctype, "status": "True", "reason": reason, "message": message,
            "lastProbeTime": now, "lastTransitionTime": now}


def is_finished(job: dict[str, Any]) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return True
    return False


def finished_at(job: dict[str, Any]) -> str | None:
    status = job.get("status") or {}
    if status.get("completionTime"):
        return status["completionTime"]
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Failed" and cond.get("status") == "True":
            return cond.get("lastTransitionTime")
    return None


def backoff_limit(job: dict[str, Any]) -> int:
    value = (job.get("spec") or {}).get("backoffLimit")
    return 6 if value is None else int(value)


def active_deadline(job: dict[str, Any]) -> int | None:
    value = (job.get("spec") or {}).get("activeDeadlineSeconds")
    return None if value is None else int(value)


def started(now: str) -> dict[str, Any]:
    return {"startTime": now, "active": 0, "ready": 0, "succeeded": 0, "failed": 0, "terminating": 0}


def pod_active(failed: int, ready: bool) -> dict[str, Any]:
    return {"active": 1, "ready": 1 if ready else 0, "failed": failed, "terminating": 0}


def pod_failed_retrying(failed: int) -> dict[str, Any]:
    return {"active": 0, "ready": 0, "failed": failed, "terminating": 0}


def succeeded(failed: int, now: str) -> dict[str, Any]:
    reason, message = COMPLETIONS_REACHED
    return {"active": 0, "ready": 0, "succeeded": 1, "failed": failed, "terminating": 0, "completionTime": now,
            "conditions": [_cond("SuccessCriteriaMet", reason, message, now),
                           _cond("Complete", reason, message, now)]}


def failed(failed_pods: int, now: str, why: tuple[str, str]) -> dict[str, Any]:
    reason, message = why
    return {"active": 0, "ready": 0, "failed": failed_pods, "terminating": 0,
            "conditions": [_cond("FailureTarget", reason, message, now), _cond("Failed", reason, message, now)]}
