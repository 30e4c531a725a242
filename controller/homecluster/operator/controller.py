"""The claim controller's engine: events in, slot passes out, a few workers, timers, a safety poll.

- `ingest(kind, obj, deleted)`: a watch event (from kopf) updates the store; if it was news (not
  older than what we hold) the slots it concerns are queued.
- `fill()`: the initial list of every kind through our client, then the store is marked synced.
  Workers are started only after it (`start`), so no pass ever reads a half-filled cache.
- workers take slot names from the WorkQueue (one slot never runs twice at once), run the pass,
  and schedule the slot's next look from what the pass returned. A pass that wrote is re-run at
  once; a failed pass is counted and re-run after a per-slot backoff (operator.backoff): a Conflict
  (someone changed an object since the cache saw it) first after 0.2 s -- the write carried the old
  resourceVersion, so nothing was harmed -- and each further failure in a row twice as late, capped.
- every settings.job_poll_interval all slots are queued, and every kind is listed again (operator.sweep; the
  lifecycle Jobs' list is the specification's 30 s Job monitor poll), a safety net behind the watches: an object
  deleted while no watch stream was open is dropped from the store by it. Every replica sweeps.
- a probe sleeps 0.25 s over and over and reports how late it woke: a late loop delays every event
  and every write, and that is told apart from a long queue (homecluster_slot_queue_wait_seconds).
"""
from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle.jobio import StaleJob
from homecluster.model.objects import claim_slot, dig, name_of, phase_text, power_state_text, slot_group
from homecluster.model.phases import PowerState
from homecluster.model.timestamps import TimestampError
from homecluster.kube import client as kube
from homecluster.kube.leases import NAMESPACE as LEASE_NAMESPACE
from homecluster.kube.leasewatch import watch_leases
from homecluster.operator.backoff import Failure, retry_delay
from homecluster.lifecycle.context import DEFAULT_WORKERS, Context
from homecluster.lifecycle.slotpass import run_pass
from homecluster.kube.store import KINDS
from homecluster.operator.sweep import Sweep
from homecluster.operator.workqueue import WorkQueue
from homecluster.kube.cache import Kind, key_of
from homecluster.logging import slot_log

JOB_SELECTOR = "app.kubernetes.io/managed-by=homecluster"
LAG_PROBE_INTERVAL = 0.25


class Controller:
    def __init__(self, ctx: Context, workers: int = DEFAULT_WORKERS) -> None:
        self.ctx = ctx
        self.queue = WorkQueue(on_wait=ctx.metrics.queue_wait.observe)
        self.workers = workers
        self._tasks: list[asyncio.Task] = []
        self._sweeper: asyncio.Task | None = None
        self.sweep = Sweep(ctx, self._list, self.ingest, lambda slot: self.queue.add(slot))
        self._failures: dict[str, int] = {}
        self.passes = 0
        ctx.metrics.watch_claims(self._claim_phases)
        ctx.metrics.watch_slots(self._slot_states)

    def _claim_phases(self):
        for claim in self.ctx.store.cache.all(kube.CLAIMS):
            slot = self.ctx.store.slot(claim_slot(claim))
            yield (phase_text(claim) or "pending", slot_group(slot))

    def _slot_states(self):
        for slot in self.ctx.store.cache.all(kube.SLOTS):
            yield (name_of(slot), slot_group(slot),
                   phase_text(slot), power_state_text(slot))

    # ---- intake -------------------------------------------------------------------------
    async def fill(self) -> None:
        """List every kind once and mark the store synced (the cache the provider serves from too)."""
        for kind in KINDS:
            items, _ = await self._list(kind)
            self.ctx.store.replace(kind, items)
        await self._fill_leases()
        self.ctx.log.info("caches filled: %s", ", ".join(
            f"{k.key}={len(self.ctx.store.cache.all(k)) if k != kube.JOBS else '?'}" for k in KINDS))

    async def _list(self, kind: kube.Resource) -> tuple[list[dict], str]:
        """Every object of one kind (of Jobs, only the lifecycle Jobs: ours, by label, in the Jobs namespace)
        and the list's resourceVersion."""
        if kind == kube.JOBS:
            return await self.ctx.client.list(kind, namespace=self.ctx.jobs_namespace, label_selector=JOB_SELECTOR)
        return await self.ctx.client.list(kind)

    async def _fill_leases(self) -> None:
        """The kubelets' Leases (liveness, model.liveness); without the right to read them, Ready is believed."""
        try:
            leases, _ = await self.ctx.client.list(kube.LEASES, namespace=LEASE_NAMESPACE)
        except kube.ApiError as exc:
            if exc.status not in (403, 404):
                raise
            self.ctx.log.warning("cannot list Leases in %s (%s): a Node's Ready is believed without its kubelet's "
                                 "Lease; grant list and watch on coordination.k8s.io leases there "
                                 "(config/rbac/node_lease_role.yaml)", LEASE_NAMESPACE, exc)
            leases = []
        self.ctx.store.leases.replace(leases)

    def ingest_lease(self, obj: Mapping[str, Any], deleted: bool = False) -> None:
        """A Lease event: stored; its Node's slot is queued only when liveness may have changed, not on every
        renewal (one per machine every ~10 s): the Lease is news (kube.leases: new, gone, or renewed after a
        silence), or the slot last read its machine off. A machine off for less than that silence (a quick
        power cycle) is turned back on by exactly such an ordinary-looking renewal (model.liveness: the first
        one after the last power-off), and nothing else may come to start the readiness gate's pass."""
        news = self.ctx.store.leases.apply(obj, deleted=deleted)
        node = self.ctx.store.cache.node_by_name(str(dig(obj, "metadata", "name") or ""))
        for slot in self.ctx.store.slots_for(kube.NODES, node) if node is not None else []:
            if news or dig(self.ctx.store.slot(slot), "status", "powerState") != PowerState.ON.value:
                self.queue.add(slot)

    def ingest(self, kind: Kind, obj: Mapping[str, Any], deleted: bool = False) -> None:
        kind = key_of(kind)
        if kind == kube.JOBS.key and dig(obj, "metadata", "namespace") not in (None, self.ctx.jobs_namespace):
            return
        if not deleted and self.ctx.store.holds(kind, obj):
            return  # no news (a sweep lists every object again): not even the slots it concerns are worked out
        before = self.ctx.store.slots_for(kind, obj) if kind in (kube.NODES.key, kube.JOBS.key) else []
        if not self.ctx.store.apply(kind, obj, deleted=deleted):
            return
        for slot in set(before) | set(self.ctx.store.slots_for(kind, obj)):
            self.queue.add(slot)

    def enqueue_all(self) -> None:
        for slot in self.ctx.store.slot_names():
            self.queue.add(slot)

    # ---- workers ------------------------------------------------------------------------
    async def start(self) -> None:
        self.enqueue_all()
        for i in range(self.workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"homecluster-worker-{i}"))
        self._tasks.append(asyncio.create_task(self._poll(), name="homecluster-poll"))
        self.start_sweeping()
        self._tasks.append(asyncio.create_task(watch_leases(self.ctx.client, self.ctx.store.leases.replace,
                                                            self.ingest_lease), name="homecluster-leases"))
        self._tasks.append(asyncio.create_task(self._probe_lag(), name="homecluster-loop-lag"))

    async def stop(self) -> None:
        self.queue.close()
        if self._sweeper is not None:
            self._tasks.append(self._sweeper)
            self._sweeper = None
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _poll(self) -> None:
        interval = max(self.ctx.settings.job_poll_interval.total_seconds(), 0.5)
        while True:
            await asyncio.sleep(interval)
            self.enqueue_all()

    def start_sweeping(self) -> None:
        """Start the sweep (operator.sweep) once: every replica runs it, from its fill on; `stop` ends it."""
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self.sweep.forever(), name="homecluster-sweep")

    async def _probe_lag(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(LAG_PROBE_INTERVAL)
            self.ctx.metrics.loop_lag.observe(max(loop.time() - asked - LAG_PROBE_INTERVAL, 0.0))

    def _failed(self, slot: str, exc: BaseException, kind: Failure) -> float:
        """Count the failure, lengthen the slot's streak and schedule its retry; return the delay."""
        streak = self._failures[slot] = self._failures.get(slot, 0) + 1
        self.ctx.metrics.reconcile_errors.labels(type(exc).__name__).inc()
        delay = retry_delay(kind, streak, random.random(), at_least=getattr(exc, "retry_after", None) or 0.0)
        self.queue.add_after(slot, delay)
        return delay

    async def _work(self) -> None:
        while True:
            slot = await self.queue.get()
            try:
                await self.process(slot)
            finally:
                self.queue.done(slot)

    async def process(self, slot: str) -> None:
        """One pass with its error policy and scheduling (also used directly by tests).

        Every failure is counted in homecluster_reconcile_errors_total{error} and backs the slot off
        (operator.backoff: per slot, doubling, capped, jittered); the first pass that succeeds ends
        the slot's streak.
        """
        started = time.monotonic()
        log = self.ctx.log
        try:
            result = await run_pass(self.ctx, slot)
        except (kube.Conflict, kube.NotFound, StaleJob) as exc:
            delay = self._failed(slot, exc, Failure.CONFLICT)
            slot_log(log, slot).info('%s; re-running the pass in %.1fs', exc, delay)
            return
        except kube.CALL_FAILURES as exc:
            delay = self._failed(slot, exc, Failure.API)
            slot_log(log, slot).warning('pass failed (%s); retrying in %.1fs', exc, delay)
            return
        except TimestampError as exc:  # an object we cannot read: name it, its field and the fix (no traceback)
            delay = self._failed(slot, exc, Failure.BUG)
            slot_log(log, slot).warning("cannot read %s; correct that field (or delete the object), retrying in %.1fs",
                                        exc, delay)
            return
        except Exception as exc:  # a bug or an object we cannot read: say so, never stop the worker
            delay = self._failed(slot, exc, Failure.BUG)
            slot_log(log, slot).exception('pass raised %s; retrying in %.1fs', type(exc).__name__, delay)
            return
        finally:
            self.ctx.metrics.passes.observe(time.monotonic() - started)
            self.passes += 1
        self._failures.pop(slot, None)
        if result.wrote:
            slot_log(log, slot).debug('the pass wrote (decision table row %s, docs/model.md)', result.row)
            self.queue.add(slot)
        if result.wake is not None:
            delay = (result.wake - self.ctx.now()).total_seconds()
            self.queue.add_after(slot, max(delay, 0.0) + 0.05)
