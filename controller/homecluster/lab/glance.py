"""The pool at a glance: the slots and the claims, in the printer columns' order, refreshed while the lab runs.

Slots: NAME GROUP POWER PHASE CLAIM ATTEMPT AGE, the slot's printer columns, then MACHINE: what the lab
knows of the simulated machine itself (its real power and its fault knobs). POWER is the operator's
observation and MACHINE the truth, so a gap between the two is visible, which is what the lab is for.
Claims: NAME SLOT PHASE ATTEMPT REASON DEADLINE AGE.

`render` is pure (objects and a clock in, text out). It also returns a key without the columns that
change with time alone (AGE, DEADLINE), so a log-friendly display can print only when something
really changed.
"""
from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

SLOT_COLUMNS = ("NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE", "MACHINE")
CLAIM_COLUMNS = ("NAME", "SLOT", "PHASE", "ATTEMPT", "REASON", "DEADLINE", "AGE")
NONE = "-"


def _get(obj: Mapping[str, Any], *path: str) -> Any:
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
    created = parse_time(_get(obj, "metadata", "creationTimestamp"))
    return human_duration((now - created).total_seconds()) if created else NONE


def deadline(claim: Mapping[str, Any], now: dt.datetime) -> str:
    """"in 11m" while the budget runs, "passed 5s" after; "-" when there is none (ready claims)."""
    at = parse_time(_get(claim, "spec", "deadlineAt"))
    if at is None:
        return NONE
    left = (at - now).total_seconds()
    return f"in {human_duration(left)}" if left >= 0 else f"passed {human_duration(-left)}"


def _text(value: Any) -> str:
    return NONE if value in (None, "") else str(value)


def slot_row(slot: Mapping[str, Any], machine: str, now: dt.datetime) -> tuple[str, ...]:
    return (
        _text(_get(slot, "metadata", "name")), _text(_get(slot, "spec", "groupRef")),
        _text(_get(slot, "status", "powerState")), _text(_get(slot, "status", "phase")),
        _text(_get(slot, "status", "claim")), _text(_get(slot, "status", "attempt")),
        age(slot, now), machine or NONE,
    )


def claim_row(claim: Mapping[str, Any], now: dt.datetime) -> tuple[str, ...]:
    phase = _get(claim, "status", "phase") or "pending"  # an unstamped claim is pending (the seed's rule)
    if _get(claim, "metadata", "deletionTimestamp") and phase not in ("failed", "completed"):
        phase += " (deleting)"
    return (
        _text(_get(claim, "metadata", "name")), _text(_get(claim, "spec", "slotRef")), phase,
        _text(_get(claim, "status", "attempt")), _text(_get(claim, "status", "reason")),
        deadline(claim, now), age(claim, now),
    )


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
              for i in range(len(header))]
    lines = ["   ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in (header, *rows)]
    return "\n".join(lines)


@dataclass(frozen=True)
class Frame:
    text: str
    key: tuple  # the frame without AGE and DEADLINE's countdown: equal keys mean nothing really changed


def render(slots: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
           machines: Mapping[str, str], now: dt.datetime) -> Frame:
    """Both tables, slots sorted by name, claims by creation then name."""
    slot_rows = [slot_row(s, machines.get(_get(s, "metadata", "name") or "", ""), now)
                 for s in sorted(slots, key=lambda s: _get(s, "metadata", "name") or "")]
    ordered = sorted(claims, key=lambda c: (_get(c, "metadata", "creationTimestamp") or "",
                                            _get(c, "metadata", "name") or ""))
    claim_rows = [claim_row(c, now) for c in ordered]
    parts = [f"slots ({len(slot_rows)})", table(SLOT_COLUMNS, slot_rows), "",
             f"claims ({len(claim_rows)})",
             table(CLAIM_COLUMNS, claim_rows) if claim_rows else "(no claims: nothing is asked for)"]
    key = (tuple(r[:6] + r[7:] for r in slot_rows),
           tuple(r[:5] + (r[5] != NONE,) for r in claim_rows))
    return Frame("\n".join(parts), key)


Snapshot = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]


async def show(snapshot: Callable[[], Snapshot], out: TextIO, *, tty: bool, interval: float = 1.0,
               header: str = "") -> None:
    """Print the glance until cancelled: redrawn in place on a terminal, printed on change otherwise.

    On a terminal the screen is cleared and redrawn every `interval`, under `header` (so the lab's
    addresses stay in sight); into a pipe or a file each
    changed frame is printed once, after a line of dashes, so logs stay readable and tests can parse.
    """
    last: tuple | None = None
    while True:
        slots, claims, machines = snapshot()
        frame = render(slots, claims, machines, dt.datetime.now(dt.timezone.utc))
        if tty:
            top = f"{header}\n\n" if header else ""
            out.write("\x1b[H\x1b[2J" + top + frame.text + "\n\n(Ctrl-C stops the lab)\n")
            out.flush()
        elif frame.key != last:
            stamp = dt.datetime.now().strftime("%H:%M:%S")
            out.write(f"---- pool at a glance {stamp} ----\n{frame.text}\n")
            out.flush()
        last = frame.key
        await asyncio.sleep(interval)
