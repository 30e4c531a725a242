"""Field types shared by the three kinds, and the markers the CRD generator reads.

A marker (``SchemaExtra``) carries the schema keywords pydantic has no argument for (an
int-or-string, a list-map, required map keys, a format). The matching runtime check sits next to
it as a pydantic validator, so a model and its CRD refuse the same values.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict
from pydantic.alias_generators import to_camel

from homecluster.durations import DURATION_PATTERN, parse_duration
from homecluster.limits import MAX_QUANTITY_LENGTH

# A Kubernetes resource quantity ("500m", "4", "16Gi", "1.5", "2e3"); no sign: capacities are not negative.
# Exponents have at most two digits and the text at most MAX_QUANTITY_LENGTH characters, so every
# quantity is a finite float (pricing divides by them).
QUANTITY_PATTERN = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]{1,2})?$"
_QUANTITY = re.compile(QUANTITY_PATTERN)


@dataclass(frozen=True)
class SchemaExtra:
    """Raw OpenAPI keywords merged into the generated schema of the annotated type."""

    items: tuple[tuple[str, Any], ...]

    def __init__(self, **keywords: Any) -> None:
        # lists become tuples: Annotated metadata must be hashable
        frozen = {k: tuple(v) if isinstance(v, list) else v for k, v in keywords.items()}
        object.__setattr__(self, "items", tuple(frozen.items()))

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.items}


class ApiModel(BaseModel):
    """Base of every API object: camelCase on the wire, snake_case in Python, unknown fields ignored.

    Unknown fields are ignored rather than refused because the API server prunes them anyway, and a
    newer CRD must not break an older controller reading its objects.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_api(self) -> dict[str, Any]:
        """The object as the API server stores it (camelCase keys, no null fields, RFC 3339 times)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def _check_duration(text: str) -> str:
    parse_duration(text)  # raises DurationError naming the text and the accepted shape
    return text


def _check_quantity(value: int | str) -> int | str:
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"quantity {value} is negative")
        return value
    if len(value) > MAX_QUANTITY_LENGTH or not _QUANTITY.fullmatch(value):
        raise ValueError(f"invalid quantity {value!r}: write e.g. \"4\", \"500m\", \"16Gi\"")
    return value


def _required_keys(*keys: str):
    def check(mapping: dict[str, Any]) -> dict[str, Any]:
        missing = [k for k in keys if k not in mapping]
        if missing:
            raise ValueError(f"missing keys {', '.join(missing)}: {', '.join(keys)} are all required")
        return mapping

    return check


Duration = Annotated[
    str,
    Field(pattern=DURATION_PATTERN),
    AfterValidator(_check_duration),
    SchemaExtra(description='A duration such as "90s", "12m10s" or "1h" (units h, m, s, ms).'),
]
Timestamp = Annotated[datetime, SchemaExtra(format="date-time")]
Quantity = Annotated[
    int | str,
    SchemaExtra(**{"x-kubernetes-int-or-string": True, "maxLength": MAX_QUANTITY_LENGTH, "pattern": QUANTITY_PATTERN}),
    AfterValidator(_check_quantity),
]
QuantityMap = dict[str, Quantity]
CAPACITY_KEYS = ("cpu", "memory", "pods")
Capacity = Annotated[QuantityMap, SchemaExtra(required=list(CAPACITY_KEYS)), AfterValidator(_required_keys(*CAPACITY_KEYS))]
Name = Annotated[str, Field(min_length=1, max_length=253)]

# Strings that reach a lifecycle Job's playbook. The playbooks read them as data (docs/security.md), and
# these patterns refuse template syntax ({{, {%, {#) and a leading "-" (an option to a command) at the API
# as well. RE2 and Python agree on them (no look-around).
# A host name, an IPv4 or an IPv6 address (no brackets, no zone).
HOST_PATTERN = r"^[A-Za-z0-9_.:][A-Za-z0-9_.:-]*$"
# A login name (POSIX portable characters, and the trailing $ of machine accounts).
USER_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*[$]?$"
# An identifier inside a URL path (a Redfish ComputerSystem id): unreserved characters only, no slash.
ID_PATTERN = r"^[A-Za-z0-9_.:@~-]+$"
# Any other text: no "{{", "{%" or "{#" anywhere.
NO_TEMPLATE_PATTERN = r"^([^{]|[{][^{%#])*[{]?$"
Host = Annotated[str, Field(min_length=1, max_length=253, pattern=HOST_PATTERN)]
UserName = Annotated[str, Field(min_length=1, max_length=64, pattern=USER_PATTERN)]
Identifier = Annotated[str, Field(min_length=1, max_length=253, pattern=ID_PATTERN)]
PlainText = Annotated[str, Field(min_length=1, max_length=4096, pattern=NO_TEMPLATE_PATTERN)]
# Numbers and booleans are strict, as in the CRD: "623" is not a port and "on" is not a boolean.
Int = Annotated[int, Strict()]
Number = Annotated[float, Strict()]
Bool = Annotated[bool, Strict()]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
NonNegativeNumber = Annotated[float, Strict(), Field(ge=0)]
Fraction = Annotated[float, Strict(), Field(ge=0, le=1)]
Port = Annotated[int, Strict(), Field(ge=1, le=65535)]


def list_map(*keys: str) -> SchemaExtra:
    """Marker for a list merged by key (server-side apply, uniqueness of the keys)."""
    return SchemaExtra(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)})


def cel(rule: str, message: str, field_path: str | None = None, reason: str | None = None) -> dict[str, str]:
    """One x-kubernetes-validations entry. ``reason`` is the StatusCause reason the server reports."""
    out = {"rule": rule, "message": message}
    if field_path:
        out["fieldPath"] = field_path
    if reason:
        out["reason"] = reason
    return out
