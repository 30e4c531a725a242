"""Bounded numbers and durations of the API: each type carries its maximum from homecluster.limits.

The CRD generator turns ``le`` into ``maximum``; a bounded duration becomes a string with a
``maxLength`` and a CEL rule (``duration(self) <= duration('24h')`` for a string of the duration pattern), and the pydantic model checks
the same bound, so the API server and the controller refuse the same values. The code that reads a
field also clamps it to the maximum (homecluster.limits), for objects stored before the bound.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, Field, Strict

from homecluster.api.types import Duration, cel
from homecluster.durations import DURATION_PATTERN, parse_duration
from homecluster.limits import (
    MAX_ENERGY_PRICE, MAX_POOL_SIZE, MAX_POWER_DRAW_WATTS, MAX_PROVISION_TIME, MAX_SCALE_DOWN_TIME,
    MAX_TOLERATION_SECONDS, MAX_TTL_SECONDS, go_duration,
)

# A duration string longer than this is refused outright (it also bounds the CEL rule's cost).
DURATION_MAX_LENGTH = 64

PoolSize = Annotated[int, Strict(), Field(ge=0, le=MAX_POOL_SIZE)]
TtlSeconds = Annotated[int, Strict(), Field(ge=0, le=MAX_TTL_SECONDS)]
TolerationSeconds = Annotated[int, Strict(), Field(le=MAX_TOLERATION_SECONDS)]
PowerDrawWatts = Annotated[float, Strict(), Field(ge=0, le=MAX_POWER_DRAW_WATTS)]
EnergyPrice = Annotated[float, Strict(), Field(ge=0, le=MAX_ENERGY_PRICE)]


def _at_most(limit: timedelta):
    def check(text: str) -> str:
        if parse_duration(text) > limit:
            raise ValueError(f"duration {text!r} is longer than the maximum {go_duration(limit)}")
        return text
    return check


def duration_limit(limit: timedelta) -> dict[str, Any]:
    """The field-level schema of a bounded duration: pass as ``Field(json_schema_extra=...)``."""
    most = go_duration(limit)
    # Only a string the pattern accepts is read as a duration: kube-apiserver evaluates the rule even when the
    # pattern has already refused the value, and a failed duration() conversion then adds a second, confusing
    # cause ("return error for overflow evaluating rule") beside the pattern's.
    pattern = DURATION_PATTERN.replace("\\", "\\\\")
    return {"maxLength": DURATION_MAX_LENGTH, "x-kubernetes-validations": [
        cel(f"!self.matches('{pattern}') || duration(self) <= duration('{most}')", f"must be at most {most}")]}


def BoundedDuration(limit: timedelta) -> Any:
    """A Duration no longer than `limit` (the model's half; `duration_limit` is the CRD's)."""
    return Annotated[Duration, Field(max_length=DURATION_MAX_LENGTH), AfterValidator(_at_most(limit))]


ProvisionTime = BoundedDuration(MAX_PROVISION_TIME)
ScaleDownTime = BoundedDuration(MAX_SCALE_DOWN_TIME)
