"""How long the stages of a boot took, for the metrics: pure arithmetic over the claim's clocks.

The clocks are the ones the boot monitor already reads (Facts.boot_view fills the startup Job's
completionTime and the Node's registration into status when the claim does not carry them), so
the metrics cost no extra status write and agree with the deadlines that time the same stages:

- boot:         spec.requestedAt          -> the moment the claim lands ready
- registration: status.startupSucceededAt -> status.registeredAt (the registration wait's stage)
- gate:         status.registeredAt       -> the moment the claim lands ready (the readiness gate's stage)

A machine may join before its startup Job is reported complete (the Job's pod exits after the
power-on, and a fast machine registers first): then the registration stage took no time, and it is
recorded as zero -- whether the clocks say negative or the Job's completion is not known yet.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from homecluster.model.objects import dig
from homecluster.model.timestamps import parse_time
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class BootTimes:
    total: float | None
    registration: float | None
    gate: float | None


def _between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return max((end - start).total_seconds(), 0.0)


def _time(value: Any) -> datetime | None:
    try:
        return parse_time(value)
    except ValueError:
        return None  # a clock we cannot read is a stage we do not time, never a failed pass


def boot_times(view: Obj, ready_at: datetime) -> BootTimes:
    """The stages of a boot that lands ready at `ready_at`; `view` is Facts.boot_view(claim)."""
    requested = _time(dig(view, "spec", "requestedAt"))
    succeeded = _time(dig(view, "status", "startupSucceededAt"))
    registered = _time(dig(view, "status", "registeredAt"))
    registration = _between(succeeded, registered) if succeeded is not None else (0.0 if registered else None)
    return BootTimes(_between(requested, ready_at), registration, _between(registered, ready_at))


def record_ready(ctx: Context, group: str, view: Obj, ready_at: datetime) -> None:
    times = boot_times(view, ready_at)
    ctx.metrics.record_boot(group, times.total, times.registration, times.gate)
