"""The three write RPCs (IncreaseSize, DecreaseTargetSize, DeleteNodes), made safe under concurrency.

cluster-autoscaler calls the provider from several goroutines (parallel scale-down, the
background instance refresh), and its IncreaseSize may be retried while an earlier one is still
writing. The rules that keep one live claim per slot and at most maxSize claims per group:

- decisions for one group are serialized by an asyncio.Lock per group;
- a decision reserves its slots (IncreaseSize) or marks its claims (Decrease/Delete) in memory
  *before* the lock is released, and every later decision and every read RPC counts those
  reservations, so a second call can never pick the same slot or exceed maxSize while the first
  call's creates are still on the wire;
- when a write returns, its result goes into the cache at once (not when the watch catches up)
  and the reservation is dropped in the same step, under the cache lock, so no reader ever sees
  the slot counted twice or not at all.

Writes of one call run concurrently and are bounded by the caller's timeout (CA's grpc_timeout).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from homecluster.model.objects import dig, name_of
from homecluster.model.settings import Settings
from homecluster.kube.cache import CLAIMS, SLOTS, Cache
from homecluster.provider.errors import ProviderError, precondition
from homecluster.provider.logic import InFlight, plan_decrease, plan_delete, plan_increase, require_group
from homecluster.provider.writer import REQUESTED_BY, ClaimWriter, build_claim

log = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class ProviderSettings:
    """How the provider runs: the model's durations and bounds, and its own RPC budget.

    rpc_budget is the most one write RPC may spend on API calls; it stays under CA's default
    grpc_timeout of 5 s so CA hears a clear answer rather than DEADLINE_EXCEEDED.
    """

    model: Settings = field(default_factory=Settings)
    rpc_budget: float = 4.0
    requested_by: str = REQUESTED_BY


class Scaler:
    """Per-group serialized writes with in-memory reservations (see the module docstring)."""

    def __init__(self, cache: Cache, writer: ClaimWriter, settings: ProviderSettings,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.cache = cache
        self.writer = writer
        self.settings = settings
        self.clock = clock
        self.version = 0  # bumped on every reservation change, for memoized reads
        self._locks: dict[str, asyncio.Lock] = {}
        self._reserved: set[str] = set()
        self._deleting: set[str] = set()

    def inflight(self) -> InFlight:
        with self.cache.lock:
            return InFlight(frozenset(self._reserved), frozenset(self._deleting))

    def _lock(self, group_id: str) -> asyncio.Lock:
        return self._locks.setdefault(group_id, asyncio.Lock())

    # ---- IncreaseSize ---------------------------------------------------------------------
    async def increase(self, group_id: str, delta: int, timeout: float) -> list[str]:
        """Create `delta` claims on free slots of the group; return their names, or raise."""
        group = require_group(self.cache, group_id)
        async with self._lock(group_id):
            with self.cache.lock:
                slots = plan_increase(self.cache, group, delta, self.inflight(), self.settings.model, self.clock())
                self._reserved.update(slots)
                self.version += 1
        created, failures = [], []
        try:
            bodies = self._claim_bodies(group, slots)
            results = await _bounded(
                [self.writer.create_claim(body, timeout) for body in bodies], timeout,
                what=f"creating {len(bodies)} NodeClaim(s) for group {group_id!r}")
            with self.cache.lock:
                for slot, result in zip(slots, results):
                    if isinstance(result, BaseException):
                        failures.append(f"slot {slot!r}: {_text(result)}")
                    else:
                        self._remember(result)
                        created.append(name_of(result))
        finally:
            # every path releases what it reserved: success, a refused create, a claim that could not
            # be built, a caller that went away (CancelledError); a create that landed anyway comes
            # back through the watch
            with self.cache.lock:
                self._reserved.difference_update(slots)
                self.version += 1
        for name in created:
            log.info("group %s: created NodeClaim %s", group_id, name)
        if failures:
            raise ProviderError(_code(results), f"NodeGroupIncreaseSize for group {group_id!r}: created "
                                f"{len(created)} of {len(slots)} NodeClaim(s); failed: {'; '.join(failures)}")
        return created

    def _claim_bodies(self, group: Mapping[str, Any], slots: list[str]) -> list[dict[str, Any]]:
        """The claims to create; a Group the model cannot read is refused with its own words."""
        now = self.clock()
        try:
            return [build_claim(self.cache.get(SLOTS, s), group, now, self.settings.model,
                                self.settings.requested_by) for s in slots]
        except (ValueError, OverflowError) as exc:  # GroupSpecError names the Group and the field
            raise precondition(f"NodeGroupIncreaseSize for group {name_of(group)!r}: {exc}") from None

    # ---- DecreaseTargetSize -------------------------------------------------------------
    async def decrease(self, group_id: str, delta: int, timeout: float) -> list[str]:
        """Cancel -delta pending claims of the group (newest first); return their names, or raise."""
        group = require_group(self.cache, group_id)
        async with self._lock(group_id):
            with self.cache.lock:
                names = plan_decrease(self.cache, group, delta, self.inflight())
                versions = {n: dig(self.cache.get(CLAIMS, n), "metadata", "resourceVersion") for n in names}
                self._deleting.update(names)
                self.version += 1
        return await self._delete(group_id, "NodeGroupDecreaseTargetSize", versions, timeout)

    # ---- DeleteNodes ----------------------------------------------------------------------
    async def delete_nodes(self, group_id: str, nodes: list[tuple[str, str]], timeout: float) -> list[str]:
        """Delete the claims behind the given nodes (all of the group, or nothing is deleted)."""
        group = require_group(self.cache, group_id)
        async with self._lock(group_id):
            with self.cache.lock:
                targets = plan_delete(self.cache, group, nodes, self.inflight(), self.clock(), self.settings.model)
                versions = {t.claim: None for t in targets if t.claim and t.claim not in self._deleting}
                self._deleting.update(versions)
                self.version += 1
        for target in targets:  # one line per node asked for, a repeated ask included (slot names are ours)
            log.info("group %s: NodeGroupDeleteNodes asked for slot %s: %s", group_id, target.slot,
                     _delete_answer(target.claim, versions))
        return await self._delete(group_id, "NodeGroupDeleteNodes", versions, timeout)

    async def _delete(self, group_id: str, rpc: str, versions: Mapping[str, str | None], timeout: float) -> list[str]:
        names = list(versions)
        done, failures = [], []
        try:
            results = await _bounded([self.writer.delete_claim(n, versions[n], timeout) for n in names], timeout,
                                     what=f"deleting {len(names)} NodeClaim(s) of group {group_id!r}")
            with self.cache.lock:
                for name, result in zip(names, results):
                    if isinstance(result, BaseException):
                        failures.append(f"NodeClaim {name!r}: {_text(result)}")
                    else:
                        done.append(name)
                        if result is None:
                            self.cache.delete(CLAIMS, name)
                        else:
                            self.cache.upsert(CLAIMS, result)
        finally:  # released on every path, a cancelled call included
            with self.cache.lock:
                self._deleting.difference_update(names)
                self.version += 1
        for name in done:
            log.info("group %s: %s deleted NodeClaim %s", group_id, rpc, name)
        if failures:
            raise ProviderError(_code(results), f"{rpc} for group {group_id!r}: deleted {len(done)} of "
                                f"{len(names)} NodeClaim(s); failed: {'; '.join(failures)}")
        return done

    def _remember(self, claim: Mapping[str, Any]) -> None:
        """Put a created claim into the cache unless the watch already delivered it (maybe newer)."""
        if self.cache.get(CLAIMS, name_of(claim)) is None:
            self.cache.upsert(CLAIMS, claim)


async def _bounded(calls: list, timeout: float, *, what: str) -> list[Any]:
    """Run the calls concurrently; each result is its value or its exception. Never exceeds timeout."""
    async def one(call):
        try:
            return await asyncio.wait_for(call, timeout)
        except asyncio.TimeoutError:
            return ProviderError("DEADLINE_EXCEEDED", f"{what}: no answer from the API server within {timeout:.1f}s")
        except ProviderError as exc:
            return exc
        except Exception as exc:  # an API or transport error: report it, release the reservation
            return ProviderError("UNAVAILABLE", f"{what}: {type(exc).__name__}: {exc}")
    return list(await asyncio.gather(*(one(c) for c in calls)))


def _delete_answer(claim: str | None, deleting: Mapping[str, Any]) -> str:
    """What a DeleteNodes does for one node, in the words of the provider's log."""
    if claim in deleting:
        return f"deleting NodeClaim {claim}"
    if claim:
        return f"NodeClaim {claim} is already being deleted by another call: nothing more to do"
    return "no live claim (already deleted, or its machine is shutting down): nothing to do"


def _text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, ProviderError) else str(exc)


def _code(results: list[Any]) -> str:
    codes = [r.code for r in results if isinstance(r, ProviderError)]
    return codes[0] if codes else "INTERNAL"
