"""The largest value every number and duration of the API may take, and the clamps the code applies.

Two layers, one table: the CRDs refuse a value above its maximum (``homecluster.api`` reads these
constants into ``maximum`` and into CEL rules for durations), and the code that reads a field clamps
it to the same maximum. The clamp is for objects the API server stored before a maximum existed (a
CRD upgrade does not re-validate stored objects) and for fields a person wrote by hand: one bad
number must never make a pass, an RPC or a Job builder raise (an OverflowError in a slot's pass
repeats forever; one in IncreaseSize leaked a reservation). docs/security.md lists every field.

Why these numbers: far above anything a home lab needs, far below the point where Python's
datetime (year 9999), protobuf's int32 (NodeGroup min/max size) or a float overflows.
"""
from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

# Counts
MAX_POOL_SIZE = 1000                # Group spec.minSize, spec.maxSize (CA's NodeGroup sizes are int32)
# Seconds
MAX_TTL_SECONDS = 31_536_000        # 365 days: spec.ttlSecondsAfterFinished of a Group or a claim
MAX_TOLERATION_SECONDS = 31_536_000  # 365 days: spec.jobs.tolerations[].tolerationSeconds
# Durations (strings such as "12m10s"); the CRD checks them with CEL duration()
MAX_PROVISION_TIME = timedelta(hours=24)    # Group spec.maxNodeProvisionTime
MAX_SCALE_DOWN_TIME = timedelta(hours=168)  # Group spec.autoscaling.scaleDown{Unneeded,Unready}Time
# Any duration string is read as at most this (a guard against float overflow; fields clamp lower)
DURATION_CEILING = timedelta(days=36_500)
# Plain numbers
MAX_POWER_DRAW_WATTS = 100_000      # slot spec.powerDrawWatts
MAX_ENERGY_PRICE = 1_000            # Group spec.pricing.energyPricePerKWh
# Quantities ("16Gi", "4", "2e3"): at most this long, exponents of at most two digits
MAX_QUANTITY_LENGTH = 32


def clamp_int(value: Any, high: int, low: int = 0) -> int:
    """A whole number read from the API, held to [low, high]; a value that is not a number reads as low."""
    if isinstance(value, bool):
        return low
    if isinstance(value, float):
        if math.isnan(value):
            return low
        if math.isinf(value):
            return high if value > 0 else low
        value = int(value)
    if not isinstance(value, int):
        try:
            value = int(str(value).strip(), 10)
        except ValueError:
            return low
    return max(low, min(high, value))


def clamp_number(value: Any, high: float, low: float = 0.0) -> float:
    """A number read from the API, held to [low, high]; NaN and non-numbers read as low."""
    try:
        number = float(value) if not isinstance(value, bool) else low
    except (TypeError, ValueError):
        return low
    if math.isnan(number):
        return low
    return max(low, min(high, number))


def clamp_duration(delta: timedelta, high: timedelta) -> timedelta:
    """A duration held to [0, high]."""
    return max(timedelta(0), min(high, delta))


def go_duration(delta: timedelta) -> str:
    """A maximum as the CRD's CEL rule writes it ("24h", "168h")."""
    seconds = int(delta.total_seconds())
    return f"{seconds // 3600}h" if seconds % 3600 == 0 else f"{seconds}s"
