"""Object metadata rules: names, timestamps, uids, generation, and the age format kubectl prints.

Pure functions; the clock is passed in where it matters so callers and tests agree on "now".
"""
from __future__ import annotations

import datetime as dt
import random
import re
import uuid
from typing import Any

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
             "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
# kinds whose names must be DNS-1123 labels rather than subdomains
LABEL_NAMED = {"Namespace", "Service"}


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def timestamp(when: dt.datetime | None = None) -> str:
    """RFC 3339 with second precision and a Z, as metav1.Time serialises."""
    return (when or now()).astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    """generateName: the prefix plus five random characters from the apiserver's alphabet."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return prefix + "".join(random.choice(alphabet) for _ in range(5))


def name_errors(kind: str, name: str) -> list[dict[str, str]]:
    """Validation causes for metadata.name, worded as the API server words them."""
    if not name:
        return [{"reason": "FieldValueRequired", "field": "metadata.name",
                 "message": "Required value: name or generateName is required"}]
    pattern, msg, limit = ((_DNS1123_LABEL, LABEL_MSG, 63) if kind in LABEL_NAMED
                           else (_DNS1123_SUBDOMAIN, SUBDOMAIN_MSG, 253))
    causes = []
    if len(name) > limit:
        causes.append({"reason": "FieldValueInvalid", "field": "metadata.name",
                       "message": f'Invalid value: "{name}": must be no more than {limit} characters'})
    if not pattern.match(name):
        causes.append({"reason": "FieldValueInvalid", "field": "metadata.name",
                       "message": f'Invalid value: "{name}": {msg}'})
    return causes


def spec_part(obj: dict[str, Any], has_status: bool) -> dict[str, Any]:
    """What counts as "spec" for generation: everything but metadata (and status, with a status subresource)."""
    skip = {"metadata", "status"} if has_status else {"metadata"}
    return {k: v for k, v in obj.items() if k not in skip}


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration: what kubectl shows as AGE."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m{rem}s" if rem else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h{rem}m" if rem else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d{rem}h" if rem else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        rem = days % 365
        return f"{days // 365}y{rem}d" if rem else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def age(creation: str | None, at: dt.datetime | None = None) -> str:
    created = parse_time(creation or "")
    if created is None:
        return "<unknown>"
    return human_duration(((at or now()) - created).total_seconds())


