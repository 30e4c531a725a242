"""Timestamps as the API writes them (RFC 3339, seconds, UTC)."""
from __future__ import annotations

from datetime import datetime, timezone


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def seconds_since(text: str) -> float:
    return (datetime.now(timezone.utc) - parse_rfc3339(text)).total_seconds()
