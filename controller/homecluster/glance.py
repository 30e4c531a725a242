"""The pool's rows as kubectl shows them: the slot and claim printer columns, ages and deadlines, a table.

Pure (objects and a clock in, text out). `homecluster status` (statuscli.py) prints them once; the lab's
live view (homecluster_lab.glance) redraws them while the lab runs and adds what it knows of the machines.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

SLOT_COLUMNS = ("NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE", "MACHINE")
CLAIM_COLUMNS = ("NAME", "SLOT", "PHASE", "ATTEMPT", "REASON", "DEADLINE", "AGE")
NONE = "-"


def get_path(obj: Mapping[str, Any], *path: str) -> Any:
    """obj[path[0]][path[1]]..., or None where a step is missing or not a mapping."""
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)  # type: ignore[assignment]
    return obj


def parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """kubectl's short durations: 45s, 3m20s, 2h5m, 3d4h."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 10:
        return f"{m}m{s}s" if s else f"{m}m"
    if m < 60:
        return f"{m}m"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m}m" if m else f"{h}h"
    d, h = divmod(h, 24)
    return f"{d}d{h}h" if h else f"{d}d"


def age(obj: Mapping[str, Any], now: dt.datetime) -> str:
    created = parse_time(get_path(obj, "metadata", "creationTimestamp"))
    return human_duration((now - created).total_seconds()) if created else NONE


def deadline(claim: Mapping[str, Any], now: dt.datetime) -> str:
    """"in 11m" while the budget runs, "passed 5s" after; "-" when there is none (ready claims)."""
    at = parse_time(get_path(claim, "spec", "deadlineAt"))
    if at is None:
        return NONE
    left = (at - now).total_seconds()
    return f"in {human_duration(left)}" if left >= 0 else f"passed {human_duration(-left)}"


def _text(value: Any) -> str:
    return NONE if value in (None, "") else str(value)


def slot_row(slot: Mapping[str, Any], machine: str, now: dt.datetime) -> tuple[str, ...]:
    return (
        _text(get_path(slot, "metadata", "name")), _text(get_path(slot, "spec", "groupRef")),
        _text(get_path(slot, "status", "powerState")), _text(get_path(slot, "status", "phase")),
        _text(get_path(slot, "status", "claim")), _text(get_path(slot, "status", "attempt")),
        age(slot, now), machine or NONE,
    )


def claim_row(claim: Mapping[str, Any], now: dt.datetime) -> tuple[str, ...]:
    phase = get_path(claim, "status", "phase") or "pending"  # an unstamped claim is pending (the seed's rule)
    if get_path(claim, "metadata", "deletionTimestamp") and phase not in ("failed", "completed"):
        phase += " (deleting)"
    return (
        _text(get_path(claim, "metadata", "name")), _text(get_path(claim, "spec", "slotRef")), phase,
        _text(get_path(claim, "status", "attempt")), _text(get_path(claim, "status", "reason")),
        deadline(claim, now), age(claim, now),
    )


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
              for i in range(len(header))]
    lines = ["   ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in (header, *rows)]
    return "\n".join(lines)
