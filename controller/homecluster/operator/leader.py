"""One acting operator: campaign for the Lease, hold it by renewing, step down on the way out.

`campaign()` returns once we hold the Lease; `hold()` renews it every `retry` seconds and returns when
it could not be renewed for `renew_deadline` seconds -- the caller must then stop acting at once (the
operator exits), which it does before `duration` runs out, so no other replica takes the Lease while we
still act. Every write is conditional on the Lease's resourceVersion: two candidates writing at once
meet a Conflict, and only one of them holds. The decisions are model.leadership's.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from homecluster.kube import client as kube
from homecluster.model import leadership
from homecluster.model.leadership import Record, Step

LEASE_NAME = "homecluster-operator"
log = logging.getLogger("homecluster.leader")


@dataclass(frozen=True)
class Timing:
    """client-go's defaults: a 15 s lease, renewed every 2 s, given up after 10 s without a renewal."""

    duration: float = 15.0
    renew_deadline: float = 10.0
    retry: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry < self.renew_deadline < self.duration:
            raise ValueError(f"leader election needs 0 < retry ({self.retry:g}s) < renew deadline "
                             f"({self.renew_deadline:g}s) < lease duration ({self.duration:g}s): a leader must "
                             "give up before anyone else may take its lease")


class LeaderElector:
    def __init__(self, client: kube.KubeClient, namespace: str, identity: str, timing: Timing = Timing(),
                 name: str = LEASE_NAME, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.namespace = namespace
        self.identity = leadership.valid_identity(identity)
        self.timing = timing
        self.name = name
        self.leading = False
        self._clock = clock
        self._seen: Record | None = None  # the last record read, and when (our clock) it was first seen
        self._seen_at = 0.0

    async def _read(self) -> Record | None:
        try:
            lease = await self.client.get(kube.LEASES, self.name, self.namespace)
        except kube.NotFound:
            return None
        record = leadership.record_of(lease, self.timing.duration)
        if record is not None and not record.same_term(self._seen):
            self._seen_at = self._clock()
        self._seen = record
        return record

    async def try_once(self) -> bool:
        """One look at the Lease and the write it calls for; True when we hold it afterwards."""
        record = await self._read()
        step = leadership.next_step(record, self.identity, self._clock() - self._seen_at)
        if step is Step.WAIT:
            return False
        spec = leadership.lease_spec(step, record, self.identity, self.timing.duration, datetime.now(timezone.utc))
        try:
            if step is Step.CREATE:
                await self.client.create(kube.LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                                       "metadata": {"name": self.name, "namespace": self.namespace},
                                                       "spec": spec}, self.namespace)
            else:
                assert record is not None
                await self.client.patch(kube.LEASES, self.name, {
                    "metadata": {"resourceVersion": record.resource_version}, "spec": spec}, self.namespace)
        except (kube.Conflict, kube.AlreadyExists):
            return False  # another candidate wrote first: look again next round
        if step is not Step.RENEW:
            log.info('leader election: "%s" now holds Lease %s/%s (transition %d)', self.identity, self.namespace,
                     self.name, spec["leaseTransitions"])
        return True

    async def _attempt(self, limit: float) -> bool:
        try:
            return await asyncio.wait_for(self.try_once(), timeout=max(limit, 0.1))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failed look is a round without the Lease, never a crash
            log.warning("leader election: Lease %s/%s: %s: %s", self.namespace, self.name, type(exc).__name__, exc)
            return False

    async def campaign(self) -> None:
        """Until we hold the Lease."""
        log.info('leader election: "%s" waiting for Lease %s/%s', self.identity, self.namespace, self.name)
        while not await self._attempt(self.timing.renew_deadline):
            await asyncio.sleep(self.timing.retry)
        self.leading = True

    async def hold(self) -> None:
        """Renew until a renewal has not succeeded for renew_deadline seconds; then we no longer lead."""
        renewed = self._clock()
        while True:
            await asyncio.sleep(self.timing.retry)
            left = self.timing.renew_deadline - (self._clock() - renewed)
            if await self._attempt(left):
                renewed = self._clock()
            elif self._seen is not None and self._seen.holder != self.identity:
                self.leading = False  # someone took it while we could not renew (a pause longer than the lease)
                log.error('leader election: Lease %s/%s is now held by "%s": "%s" is no longer the leader',
                          self.namespace, self.name, self._seen.holder, self.identity)
                return
            elif self._clock() - renewed >= self.timing.renew_deadline:
                self.leading = False
                log.error('leader election: "%s" could not renew Lease %s/%s for %.0fs: no longer the leader',
                          self.identity, self.namespace, self.name, self.timing.renew_deadline)
                return

    async def release(self) -> None:
        """Step down (a clean stop): the Lease names no holder, so a standby takes over at once."""
        if not self.leading:
            return
        self.leading = False
        record = self._seen
        try:
            current = await self._read()
            if current is None or current.holder != self.identity:
                return
            record = current
            await self.client.patch(kube.LEASES, self.name, {
                "metadata": {"resourceVersion": record.resource_version},
                "spec": leadership.release_spec(datetime.now(timezone.utc))}, self.namespace)
            log.info('leader election: "%s" released Lease %s/%s', self.identity, self.namespace, self.name)
        except kube.CALL_FAILURES as exc:
            log.warning("leader election: could not release Lease %s/%s (%s); it expires by itself",
                        self.namespace, self.name, exc)
