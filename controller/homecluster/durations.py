"""Durations as the API writes them: Go-style strings such as "90s", "12m10s", "1h30m".

The CRD schemas use DURATION_PATTERN, and the controller parses with parse_duration, so
the API server and the controller accept exactly the same strings.
"""
from __future__ import annotations

import math
import re
from datetime import timedelta

from homecluster.limits import DURATION_CEILING

# One or more <number><unit> parts, units h, m, s, ms; no sign, no spaces. "0s" is allowed.
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(h|ms|m|s))+$"
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|ms|m|s)")
_WHOLE = re.compile(DURATION_PATTERN)
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


class DurationError(ValueError):
    """A duration string that does not match DURATION_PATTERN."""


def parse_duration(text: str) -> timedelta:
    """Parse "1h2m3.5s" into a timedelta; raise DurationError naming the bad text.

    A duration longer than limits.DURATION_CEILING (100 years) reads as the ceiling: "100000000h" or a
    400-digit number is well formed, and must not overflow a timedelta or a datetime sum. Each field
    clamps lower still (homecluster.limits).
    """
    if not isinstance(text, str) or not _WHOLE.fullmatch(text):
        raise DurationError(
            f"invalid duration {text!r}: use a number and a unit (h, m, s, ms), e.g. \"90s\", \"12m10s\", \"1h\""
        )
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(text))
    ceiling = DURATION_CEILING.total_seconds()
    if not math.isfinite(seconds) or seconds > ceiling:
        return DURATION_CEILING
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """Format a timedelta the way parse_duration reads it back ("12m10s", "1h", "0s")."""
    total_ms = round(delta.total_seconds() * 1000)
    if total_ms < 0:
        raise DurationError(f"negative duration {delta!r}")
    if total_ms == 0:
        return "0s"
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    out = ""
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if seconds or millis:
        out += f"{seconds}.{millis:03d}".rstrip("0").rstrip(".") + "s" if millis else f"{seconds}s"
    return out
