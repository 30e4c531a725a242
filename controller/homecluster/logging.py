"""Log setup: a human format by default, JSON lines on a flag; claim lines always name claim, slot, attempt.

Why the three names: a claim's story is spread over many passes and objects, and "which attempt on
which slot" is the first question asked of any line. `claim_log(log, claim)` returns an adapter that
prefixes (text) or attaches (JSON) them, so no call site has to remember; `slot_log(log, slot)` does the
same for a line about a slot alone.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from collections.abc import Mapping
from typing import Any

_CONTEXT_KEYS = ("claim", "slot", "attempt")
PREFIX_KEY = "homecluster_prefix"  # the text prefix ClaimAdapter put before the message (JSON drops it)


def rfc3339(created: float) -> str:
    """A record's time in UTC, RFC 3339 with milliseconds: 2026-12-03T13:01:11.123Z (any zone, any parser)."""
    moment = dt.datetime.fromtimestamp(created, dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# Line breaks and other control characters, and the Unicode line and paragraph separators: escaped in a text
# line, so no string from the API (a Group's image, a refusal that quotes it, an object's name) can start a
# line of its own that reads like the operator's (issue 23 item 10). JSON lines escape them by construction.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def escape(text: str) -> str:
    """`text` on one line: each control character (tab excepted) as a \\n, \\r, \\x1b or \\u2028 escape."""
    return _UNSAFE.sub(lambda m: repr(m.group())[1:-1] if m.group() not in "\u2028\u2029"
                       else f"\\u{ord(m.group()):04x}", text)


class TextFormatter(logging.Formatter):
    """The human format, one record per line: the message escaped, a traceback's lines indented under it."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape(record.message)
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        first, *rest = super().format(record).split("\n")  # rest: a traceback or stack, formatted by any handler
        return "\n".join([first, *("    | " + escape(line) for line in rest)])


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, RFC 3339, milliseconds), level, logger, message, and claim, slot
    and attempt as fields of their own (not repeated inside the message)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        prefix = getattr(record, PREFIX_KEY, "")
        if prefix and message.startswith(prefix):
            message = message[len(prefix):]
        doc: dict[str, Any] = {
            "time": rfc3339(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": message,
        }
        for key in _CONTEXT_KEYS:
            if hasattr(record, key):
                doc[key] = getattr(record, key)
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


class _PrefixAdapter(logging.LoggerAdapter):
    """Puts `prefix()` before the text of every line, and the adapter's fields on the record (JSON shows them as
    fields and drops the prefix). The prefix is text, never a format: a % in a name is escaped when the line is
    formatted with args."""

    def prefix(self) -> str:
        raise NotImplementedError

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        prefix = self.prefix()
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {}), PREFIX_KEY: prefix}
        self.logger.log(level, (prefix.replace("%", "%%") if args else prefix) + str(msg), *args, **kwargs)


class ClaimAdapter(_PrefixAdapter):
    """Adds claim/slot/attempt: as a text prefix and as record attributes (for JSON)."""

    def prefix(self) -> str:
        extra = self.extra or {}
        return f"claim={extra.get('claim')} slot={extra.get('slot')} attempt={extra.get('attempt')}: "


def claim_log(log: logging.Logger, claim: Mapping[str, Any]) -> ClaimAdapter:
    meta = claim.get("metadata") or {}
    return ClaimAdapter(log, {
        "claim": meta.get("name", ""),
        "slot": (claim.get("spec") or {}).get("slotRef", ""),
        "attempt": (claim.get("status") or {}).get("attempt") or 0,
    })


class SlotAdapter(_PrefixAdapter):
    """Adds the slot of a line about a slot alone (no claim): `slot "worker-01": ` before the text, the slot
    as a field of its own in JSON (not repeated in the message)."""

    def prefix(self) -> str:
        return f'slot "{(self.extra or {}).get("slot", "")}": '


def slot_log(log: logging.Logger | logging.LoggerAdapter, slot: str) -> SlotAdapter:
    """A logger whose lines name `slot` (text prefix, JSON field)."""
    return SlotAdapter(log, {"slot": slot})


def configure(fmt: str = "text", level: int | str = logging.INFO) -> None:
    """Install one stderr handler on the root logger (replacing earlier ones of ours)."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    elif fmt == "text":
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    else:
        raise ValueError(f"--log-format {fmt!r}: use text or json")
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_homecluster", False)]:
        root.removeHandler(old)
    handler._homecluster = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
