"""Leader election on a coordination.k8s.io/v1 Lease: who may act, decided from the Lease alone. Pure.

Two operators may run at once (a rolling update, a partitioned node whose pod is still alive): only the
holder of the Lease runs slot passes and serves the provider. The rules are client-go's:
- no Lease: create it, naming ourselves;
- we hold it: renew it (renewTime now);
- someone else holds it: take it only once its record has not changed for leaseDurationSeconds, timed on
  OUR clock from when we first saw that record (never by comparing their renewTime with our clock: two
  machines' clocks disagree, a monotonic "unchanged for" does not);
- an empty holder (a leader that stepped down) is free at once.
A leader that cannot renew for `renew_deadline` (shorter than the lease duration) stops acting before
anyone else may take over (operator/leader.py).
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from homecluster.model.timestamps import _as_utc

MAX_IDENTITY = 128  # holderIdentity we write; what we read is only ever compared


class Step(enum.Enum):
    CREATE = "create"  # no Lease yet
    TAKE = "take"  # free or expired: write ourselves in, one more transition
    RENEW = "renew"  # ours: write renewTime
    WAIT = "wait"  # another holder whose record is still fresh


@dataclass(frozen=True)
class Record:
    """What a Lease says about its holder, and its resourceVersion (our write is conditional on it)."""

    holder: str
    duration: float
    renewed: str
    transitions: int
    resource_version: str

    def same_term(self, other: "Record | None") -> bool:
        """The same holder, renewed at the same moment: nothing happened since `other` was seen."""
        return other is not None and (self.holder, self.renewed, self.duration) == \
            (other.holder, other.renewed, other.duration)


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else default


def record_of(lease: Mapping[str, Any] | None, default_duration: float) -> Record | None:
    """The Lease's record (untrusted: wrong types read as absent), or None for no Lease."""
    if lease is None:
        return None
    spec = lease.get("spec") or {}
    spec = spec if isinstance(spec, Mapping) else {}
    holder = spec.get("holderIdentity")
    renewed = spec.get("renewTime")
    return Record(holder=holder if isinstance(holder, str) else "",
                  duration=_number(spec.get("leaseDurationSeconds"), default_duration),
                  renewed=renewed if isinstance(renewed, str) else "",
                  transitions=int(_number(spec.get("leaseTransitions"), 0)),
                  resource_version=str((lease.get("metadata") or {}).get("resourceVersion") or ""))


def next_step(record: Record | None, me: str, unchanged_for: float) -> Step:
    """What to do, given the Lease's record and for how many seconds (our monotonic clock) it has not changed."""
    if record is None:
        return Step.CREATE
    if record.holder == me:
        return Step.RENEW
    if not record.holder or unchanged_for >= record.duration:
        return Step.TAKE
    return Step.WAIT


def micro_time(moment: datetime) -> str:
    """A Lease's MicroTime: UTC with microseconds."""
    return _as_utc(moment, "renewTime").strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_spec(step: Step, record: Record | None, me: str, duration: float, now: datetime) -> dict[str, Any]:
    """The Lease spec to write for CREATE, TAKE or RENEW (a TAKE counts one more transition)."""
    if step is Step.WAIT:
        raise ValueError("nothing is written while another holder's lease is fresh")
    stamp = micro_time(now)
    spec: dict[str, Any] = {"holderIdentity": me, "leaseDurationSeconds": max(int(round(duration)), 1),
                            "renewTime": stamp}
    if step is not Step.RENEW:
        spec["acquireTime"] = stamp
        spec["leaseTransitions"] = record.transitions + 1 if record is not None else 0
    return spec


def release_spec(now: datetime) -> dict[str, Any]:
    """Stepping down: no holder, so the next candidate takes the Lease at once instead of a lease later."""
    return {"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": micro_time(now)}


def valid_identity(identity: str) -> str:
    """Our own identity (a pod name, usually): refused when it could not be told apart or written."""
    if not identity or len(identity) > MAX_IDENTITY or any(c.isspace() or not c.isprintable() for c in identity):
        raise ValueError(f"--leader-identity {identity!r}: give 1..{MAX_IDENTITY} printable characters without "
                         "spaces, unique per replica (the Deployment passes the pod name)")
    return identity
