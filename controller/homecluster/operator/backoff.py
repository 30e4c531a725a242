"""How long a slot waits before its pass runs again after a failure: per slot, doubling, capped, jittered.

Every failure backs off, whatever it was: a Conflict or NotFound (someone changed the object since
the cache saw it) starts at 0.2 s because one is normal and the next pass usually succeeds, an API
or transport error at 1 s, a bug at 5 s; each further failure in a row of the same slot doubles the
delay, up to CAP. A persistent 409 is therefore not a hot loop (it was a fixed 0.2 s: 25 passes in
5 s), and a slot that keeps failing costs about one pass every CAP seconds. The jitter (the delay
is drawn from [delay/2, delay]) keeps slots that failed together, after an API server restart,
from retrying in lockstep. The streak of a slot ends with its first pass that succeeds.

Pure: `retry_delay` takes the random draw as an argument.
"""
from __future__ import annotations

from enum import Enum

CAP = 60.0


class Failure(Enum):
    """The kinds of failed pass, each with its first delay (seconds)."""

    CONFLICT = 0.2  # Conflict, NotFound, a stale Job: the cache was behind
    API = 1.0       # an API error, a refused connection, a timeout
    BUG = 5.0       # anything else: an object we cannot read, or our bug


def retry_delay(kind: Failure, streak: int, draw: float, cap: float = CAP, at_least: float = 0.0) -> float:
    """The delay before the next pass: kind's first delay doubled per earlier failure in a row
    (`streak` counts this one, so 1 is the first), capped at `cap`, then scaled into [1/2, 1] by
    `draw` (a uniform number in [0, 1)); never shorter than `at_least` (what the API server asked for
    with a Retry-After), itself capped at `cap`."""
    exponent = min(max(streak, 1) - 1, 32)  # 2**32 s is past any cap; no float overflow
    delay = min(kind.value * 2.0 ** exponent, cap)
    return max(delay * (0.5 + 0.5 * min(max(draw, 0.0), 1.0)), min(max(at_least, 0.0), cap))
