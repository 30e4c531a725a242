"""`homecluster status -o json|yaml`: the pool as one document for scripts (pure: objects in, a dict out).

The same facts as the tables, as the API gives them (timestamps in RFC 3339, attempts as numbers, absent
fields as null) rather than as a person reads them (ages, "in 11m"):

    {"slots":  [{"name", "group", "powerState", "phase", "claim", "attempt", "nodeName", "powerMethod",
                 "createdAt"}],
     "claims": [{"name", "slot", "phase", "attempt", "reason", "message", "requestedBy", "requestedAt",
                 "deadlineAt", "deleting", "createdAt"}],
     "endedClaimsHidden": 0,
     "jobs":   [{"name", "kind", "slot", "state", "createdAt"}],   # the lifecycle Jobs that run now
     "jobsReadable": true}
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from homecluster.glance import get_path
from homecluster.names import LABEL_JOB_KIND, LABEL_SLOT

ENDED = ("failed", "completed")
MAX_TEXT = 1024  # a field longer than this (the API bounds none of these tightly) is cut


def _scalar(value: Any) -> Any:
    """Untrusted API data as a bounded scalar: strings cut to MAX_TEXT, numbers and bools kept, the rest null."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return value[:MAX_TEXT]
    return None


def job_state(job: Mapping[str, Any]) -> str:
    status = job.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            return "succeeded" if cond["type"] == "Complete" else "failed"
    return "running" if status.get("active") else "starting"


def running_jobs(jobs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [j for j in sorted(jobs, key=lambda j: j["metadata"]["name"]) if job_state(j) in ("starting", "running")]


def shown_claims(claims: Sequence[Mapping[str, Any]], all_claims: bool) -> tuple[list[Mapping[str, Any]], int]:
    """The claims to list (oldest first; ended ones only with all_claims) and how many ended ones are not."""
    ordered = sorted(claims, key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]))
    shown = [c for c in ordered if all_claims or (get_path(c, "status", "phase") or "pending") not in ENDED]
    return shown, len(ordered) - len(shown)


def slot_entry(slot: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": _scalar(get_path(slot, "metadata", "name")), "group": _scalar(get_path(slot, "spec", "groupRef")),
            "powerState": _scalar(get_path(slot, "status", "powerState")),
            "phase": _scalar(get_path(slot, "status", "phase")), "claim": _scalar(get_path(slot, "status", "claim")),
            "attempt": _scalar(get_path(slot, "status", "attempt")),
            "nodeName": _scalar(get_path(slot, "spec", "nodeName") or get_path(slot, "metadata", "name")),
            "powerMethod": _scalar(get_path(slot, "spec", "power", "method")),
            "createdAt": _scalar(get_path(slot, "metadata", "creationTimestamp"))}


def claim_entry(claim: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": _scalar(get_path(claim, "metadata", "name")), "slot": _scalar(get_path(claim, "spec", "slotRef")),
            "phase": _scalar(get_path(claim, "status", "phase")) or "pending",
            "attempt": _scalar(get_path(claim, "status", "attempt")),
            "reason": _scalar(get_path(claim, "status", "reason")),
            "message": _scalar(get_path(claim, "status", "message")),
            "requestedBy": _scalar(get_path(claim, "spec", "requestedBy")),
            "requestedAt": _scalar(get_path(claim, "spec", "requestedAt")),
            "deadlineAt": _scalar(get_path(claim, "spec", "deadlineAt")),
            "deleting": bool(get_path(claim, "metadata", "deletionTimestamp")),
            "createdAt": _scalar(get_path(claim, "metadata", "creationTimestamp"))}


def job_entry(job: Mapping[str, Any], state: str) -> dict[str, Any]:
    labels = get_path(job, "metadata", "labels") or {}
    return {"name": _scalar(get_path(job, "metadata", "name")), "kind": _scalar(labels.get(LABEL_JOB_KIND)),
            "slot": _scalar(labels.get(LABEL_SLOT)), "state": state,
            "createdAt": _scalar(get_path(job, "metadata", "creationTimestamp"))}


def document(slots: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
             jobs: Sequence[Mapping[str, Any]], *, all_claims: bool = False,
             jobs_readable: bool = True) -> dict[str, Any]:
    shown, hidden = shown_claims(claims, all_claims)
    return {"slots": [slot_entry(s) for s in sorted(slots, key=lambda s: s["metadata"]["name"])],
            "claims": [claim_entry(c) for c in shown], "endedClaimsHidden": hidden,
            "jobs": [job_entry(j, job_state(j)) for j in running_jobs(jobs)], "jobsReadable": jobs_readable}
