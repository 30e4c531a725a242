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

from homecluster.glance import CLAIM_COLUMNS, NONE, SLOT_COLUMNS, claim_row, get_path, slot_row, table


@dataclass(frozen=True)
class Frame:
    text: str
    key: tuple  # the frame without AGE and DEADLINE's countdown: equal keys mean nothing really changed


def render(slots: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
           machines: Mapping[str, str], now: dt.datetime) -> Frame:
    """Both tables, slots sorted by name, claims by creation then name."""
    slot_rows = [slot_row(s, machines.get(get_path(s, "metadata", "name") or "", ""), now)
                 for s in sorted(slots, key=lambda s: get_path(s, "metadata", "name") or "")]
    ordered = sorted(claims, key=lambda c: (get_path(c, "metadata", "creationTimestamp") or "",
                                            get_path(c, "metadata", "name") or ""))
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
