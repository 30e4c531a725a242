"""Timestamps as the API writes them (RFC 3339 strings) and as the model uses them (aware UTC datetimes).

The model compares times, so every datetime it handles must be timezone-aware; a naive datetime is
a bug in the caller (it would silently be read as local time), and is refused with a clear error.
"""
from __future__ import annotations

from datetime import datetime, timezone


class TimestampError(ValueError):
    """A timestamp that is not RFC 3339, or a naive datetime handed to the model."""


def parse_time(value: str | datetime | None, *, field: str = "timestamp") -> datetime | None:
    """Read an RFC 3339 string ("2026-03-04T09:38:15Z") into an aware UTC datetime.

    None and "" read as None (the field is absent). An aware datetime is normalised to UTC, so a
    caller that already holds a datetime (kopf sometimes does) can pass it through. `field` names
    the field in the error message, e.g. "spec.deadlineAt of NodeClaim worker-01-7f4b9c".
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return _as_utc(value, field)
    if not isinstance(value, str):
        raise TimestampError(f"{field}: expected an RFC 3339 string such as \"2026-03-04T09:38:15Z\", got {value!r}")
    text = value.strip()
    if text[-1:] in ("z", "Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is None or "T" not in text.upper() or parsed.tzinfo is None:
        raise TimestampError(
            f"{field}: {value!r} is not an RFC 3339 timestamp; write it with a zone, e.g. \"2026-03-04T09:38:15Z\""
        )
    return parsed.astimezone(timezone.utc)


def format_time(moment: datetime) -> str:
    """Write an aware datetime as the API does: UTC, second precision, trailing "Z".

    Sub-second precision is dropped (the API server's metav1.Time has one-second resolution), so a
    value written and read back compares equal to what the API returns.
    """
    utc = _as_utc(moment, "timestamp")
    return utc.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _as_utc(moment: datetime, field: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise TimestampError(f"{field}: naive datetime {moment!r}; pass an aware datetime (tzinfo=timezone.utc)")
    return moment.astimezone(timezone.utc)
