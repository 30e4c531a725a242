"""The kubelets' Leases in kube-node-lease, kept as what liveness needs and when the operator saw them renewed.

Only three facts per Lease are kept (bounded: the name, the renewTime as written, the grace from
spec.leaseDurationSeconds), never the object. `renewed_at` is the operator's own clock at the moment a new
renewTime was seen -- how the node lifecycle controller reads Leases -- so a kubelet whose clock runs ahead
cannot make its machine look alive longer; a Lease first seen (at start) counts from its renewTime, never
later than now (model.liveness.first_sight), so a restarted operator does not take a silent machine as up.
Thread-safe. Fed by kube.leasewatch (the watch) and the controller's initial list.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from homecluster.model.liveness import Heartbeat, first_sight, lease_grace
from homecluster.model.objects import dig

NAMESPACE = "kube-node-lease"
Obj = Mapping[str, Any]
# a gap between two renewals longer than this share of the grace is news (kubelets renew every quarter of it)
SILENCE = 0.4
MAX_LEASES = 100_000  # a bound on what a flood of Leases can make the operator hold


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Leases:
    def __init__(self, clock: Callable[[], datetime] = _utcnow) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, Heartbeat]] = {}

    def apply(self, lease: Obj, deleted: bool = False) -> bool:
        """One watch event (or listed Lease); True when the machine's liveness may have changed: the Lease is
        new or gone, or it was renewed after a silence longer than SILENCE of its grace (a kubelet renews every
        quarter of it: a longer gap is a machine that went off and came back, whose renewal may be its join)."""
        name = dig(lease, "metadata", "name")
        if not isinstance(name, str) or not name or dig(lease, "metadata", "namespace") not in (None, NAMESPACE):
            return False
        with self._lock:
            old = self._held.get(name)
            if deleted:
                return self._held.pop(name, None) is not None
            renew = dig(lease, "spec", "renewTime")
            renew = renew[:64] if isinstance(renew, str) else ""
            if old is not None and old[0] == renew:
                return False
            now = self.clock()
            renewed = now if old is not None else first_sight(renew, now)
            if old is None and len(self._held) >= MAX_LEASES:
                return False
            self._held[name] = (renew, Heartbeat(renewed, lease_grace(lease)))
            return old is None or renewed - old[1].renewed_at > old[1].grace * SILENCE

    def replace(self, leases: Iterable[Obj]) -> None:
        """A full list: keep what was seen of Leases not renewed since, forget the ones gone."""
        listed = list(leases)
        names = {dig(lease, "metadata", "name") for lease in listed}
        with self._lock:
            for gone in set(self._held) - names:
                del self._held[gone]
        for lease in listed:
            self.apply(lease)

    def heartbeat(self, node_name: str) -> Heartbeat | None:
        """The Node's Lease as seen (None: no Lease known for it)."""
        held = self._held.get(node_name)
        return held[1] if held is not None else None
