"""Requests from the autoscaler's side of the wire, read defensively: bounded, range-checked, named.

Whoever reaches the provider's port (the autoscaler, or anything holding its client certificate)
sends these values; a bad one is INVALID_ARGUMENT naming the field, never INTERNAL with a traceback,
and nothing it sent is echoed back at length.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from homecluster.provider.errors import invalid

# Untrusted input is bounded: a group id longer than a Kubernetes name is refused without being echoed,
# and no refusal's message exceeds MAX_MESSAGE characters (a 1 MB id echoed back made the status too big
# for gRPC's metadata, and the client saw RESOURCE_EXHAUSTED instead of the refusal).
MAX_ID = 253
MAX_MESSAGE = 1024


def when(request: Any, field: str, default: datetime) -> datetime:
    """A pricing window's end as an aware datetime: <field>Timestamp (new), else <field>Time (legacy), else
    default. A time Python cannot hold (beyond year 9999, or invalid nanos) is INVALID_ARGUMENT naming it."""
    new, legacy = f"{field}Timestamp", f"{field}Time"
    try:
        if request.HasField(new):
            return getattr(request, new).ToDatetime(tzinfo=timezone.utc)
        if request.HasField(legacy):
            value = getattr(request, legacy)
            return datetime.fromtimestamp(value.seconds + value.nanos / 1e9, tz=timezone.utc)
    except (ValueError, OverflowError, OSError) as exc:
        raise invalid(f"{type(request).__name__}: {new}/{legacy} is out of range ({exc}); send a time between "
                      "years 1 and 9999") from None
    return default


def group_id(group_id: str) -> str:
    """The request's node group id, refused (and not echoed) when no Group could have it."""
    if len(group_id) > MAX_ID:
        raise invalid(f"node group id of {len(group_id)} characters: a Group name has at most {MAX_ID}")
    return group_id


def bounded_message(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 1] + "…"
