"""Is the machine still up? Read from what its own kubelet says: the Node's Lease, then its Ready condition.

A switched-off kubelet posts nothing. Its Node keeps reading Ready=True until the node lifecycle controller
notices the silence (40-50 s on a default cluster), so Ready alone answers "on" for a machine a shutdown Job
has just powered off. The kubelet's Lease in kube-node-lease is renewed every ~10 s while it runs (the node
lifecycle controller reads it the same way), so:

- **up**: Ready=True, and when a Lease is known, its last renewal was seen within the grace (the Lease's
  spec.leaseDurationSeconds) and after the slot's last successful shutdown Job ended (a renewal from before
  that power-off is the machine's last words, not a sign it is back). Without a Lease (a server that does
  not serve them, or before the kubelet wrote one) Ready is believed, as before.
- **off for good** (the end of a shutdown hold-off, model.shutdown.settle): not up, and the kubelet has
  said nothing since the last successful power-off, or nothing for longer than the grace. A kubelet that
  posts NotReady or renews its Lease is alive: a 10 s NotReady blip is not "off for good".

`renewed_at` is when the operator SAW the Lease's renewTime change (its own clock, as the node lifecycle
controller does), never the kubelet's clock alone: a machine whose clock runs ahead cannot stretch its life
(kube.store.Store records it).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from homecluster.model.objects import conditions_of, dig, name_of
from homecluster.model.timestamps import TimestampError, parse_time

Obj = Mapping[str, Any]

# the kubelet's default nodeLeaseDurationSeconds; also the silence that ends a hold-off when no Lease is known
DEFAULT_GRACE = timedelta(seconds=40)
# a leaseDurationSeconds outside this range is not believed (untrusted data): the default is used
GRACE_BOUNDS = (timedelta(seconds=1), timedelta(minutes=10))


@dataclass(frozen=True)
class Heartbeat:
    """The Lease as the operator saw it: when its renewTime last changed (operator's clock) and its grace."""

    renewed_at: datetime
    grace: timedelta = DEFAULT_GRACE


@dataclass(frozen=True)
class Liveness:
    up: bool
    for_good: bool = False  # off, and silent since the last power-off or for longer than the grace
    why: str | None = None  # why a Node reading Ready is not taken as up (None when up, or Ready is not True)


def lease_grace(lease: Obj | None) -> timedelta:
    """The Lease's spec.leaseDurationSeconds, bounded (GRACE_BOUNDS); DEFAULT_GRACE when absent or out of range."""
    value = dig(lease, "spec", "leaseDurationSeconds")
    if isinstance(value, bool) or not isinstance(value, int):
        return DEFAULT_GRACE
    grace = timedelta(seconds=value)
    return grace if GRACE_BOUNDS[0] <= grace <= GRACE_BOUNDS[1] else DEFAULT_GRACE


def first_sight(renew_time: Any, now: datetime) -> datetime:
    """When a Lease first seen (the operator just started) was renewed: its renewTime, never later than now
    (a clock that runs ahead); now when renewTime is unreadable."""
    try:
        renewed = parse_time(renew_time if isinstance(renew_time, str) else None)
    except TimestampError:
        renewed = None
    return min(renewed, now) if renewed is not None else now


def _ready(node: Obj | None) -> tuple[str | None, datetime | None]:
    for condition in conditions_of(node):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            try:
                since = parse_time(condition.get("lastHeartbeatTime") or condition.get("lastTransitionTime"))
            except TimestampError:
                since = None
            return condition.get("status"), since
    return None, None


def liveness(node: Obj | None, heartbeat: Heartbeat | None, last_power_off: datetime | None,
             now: datetime) -> Liveness:
    """Whether the slot's machine is up, and whether it is off for good (module doc)."""
    if node is None:
        return Liveness(False, True)
    status, posted = _ready(node)
    if heartbeat is not None:
        word = heartbeat.renewed_at  # the last sign of life: the Lease outranks a Ready that may be stale
        grace = heartbeat.grace
    else:
        # (Ready=True without a Lease is up: below.) NotReady is the kubelet's own post; Unknown is the node
        # lifecycle controller's, after the kubelet fell silent
        word = posted if status == "False" else None
        grace = DEFAULT_GRACE
    silent_too_long = word is None or now - word > grace
    before_power_off = last_power_off is not None and (word is None or word <= last_power_off)
    if status == "True" and (heartbeat is None or not (silent_too_long or before_power_off)):
        return Liveness(True)
    for_good = silent_too_long or before_power_off
    why = None
    if status == "True":
        name = name_of(node) or "<unnamed>"
        when = "before the last shutdown Job that succeeded ended" if before_power_off \
            else f"more than {int(grace.total_seconds())}s ago"
        why = (f'corev1 Node "{name}" reads Ready but its kubelet last renewed its Lease (kube-node-lease/{name}) '
               f"{when}: the machine is taken as off")
    return Liveness(False, for_good, why)
