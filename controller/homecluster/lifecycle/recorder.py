"""The Recorder: the only writer of NodeClaim status, and of the claim's finalizer and spec.deadlineAt.

Every write is a merge patch that carries the resourceVersion the decision was based on, so a
claim that changed meanwhile answers 409 Conflict and the pass is simply re-run (kube.Conflict
propagates to the worker, which requeues the slot). Each result is stored at once (write-through),
so the rest of the pass, and the next, read what the server now holds.

- `seed` stamps status.attempt once, from the slot's lastClaim, while it is 0 (and the phase pending).
- `move` lands a phase with its reason, message, extra fields, the `Ready` condition (upserted by
  type; lastTransitionTime only when its status changes) and a core/v1 Event naming slot and attempt.
  A move to the phase, reason and fields the claim already has writes nothing (re-landing is free).
- `clear_boot_deadline` is the spec write that removes spec.deadlineAt, called only after the
  booting -> ready status write (the order that heals: see the specification).
- `add_finalizer` / `remove_finalizer` edit only our entry of metadata.finalizers.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from homecluster import names
from homecluster.logging import claim_log
from homecluster.model.attempts import needs_seed, seed_attempt
from homecluster.model.objects import (claim_attempt, claim_phase, claim_slot, dig, finalizers_of, name_of, phase_text,
                                       slot_last_claim)
from homecluster.model.phases import TERMINAL_PHASES, ClaimPhase, Reason
from homecluster.model.timestamps import format_time
from homecluster.kube import client as kube
from homecluster.lifecycle import conditional
from homecluster.lifecycle.context import EVENTS_NAMESPACE, Context

Obj = Mapping[str, Any]
CONDITION = "Ready"


def _value(x: Any) -> Any:
    return x.value if hasattr(x, "value") else x


def _condition_reason(phase: ClaimPhase, reason: Reason | str | None) -> str:
    return str(_value(reason)) if reason else phase.value.capitalize()


def upsert_condition(conditions: list[dict] | None, ctype: str, status: str, reason: str, message: str,
                     now: str) -> list[dict]:
    """The conditions list with `ctype` set; lastTransitionTime kept unless the status changes."""
    out, found = [], False
    for cond in conditions or []:
        if cond.get("type") == ctype:
            found = True
            changed = cond.get("status") != status
            cond = {**cond, "status": status, "reason": reason, "message": message,
                    "lastTransitionTime": now if changed or not cond.get("lastTransitionTime")
                    else cond["lastTransitionTime"]}
        out.append(cond)
    if not found:
        out.append({"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": now})
    return out


class Recorder:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def _patch(self, claim: Obj, body: dict[str, Any], subresource: str | None) -> dict:
        return await conditional.patch(self.ctx, kube.CLAIMS, claim, body, subresource)

    async def seed(self, claim: Obj, slot: Obj | None) -> Obj:
        """Stamp status.attempt (and the pending phase) once; a seeded claim is returned unchanged."""
        if not needs_seed(claim):
            return claim
        attempt = seed_attempt(slot_last_claim(slot))
        status: dict[str, Any] = {"attempt": attempt}
        if not phase_text(claim):
            status["phase"] = ClaimPhase.PENDING.value
        result = await self._patch(claim, {"status": status}, "status")
        claim_log(self.ctx.log, result).info("seeded attempt %d from the slot's lastClaim", attempt)
        return result

    async def move(self, claim: Obj, phase: ClaimPhase, reason: Reason | str | None = None,
                   message: str | None = None, **fields: Any) -> Obj:
        """Land `phase` (with reason, message and extra status fields) and post its Event."""
        now = self.ctx.now()
        stamp = format_time(now)
        status = dict(claim.get("status") or {})
        wanted: dict[str, Any] = {"phase": phase.value, "reason": _value(reason), **fields}
        if message is not None:
            wanted["message"] = message
        if phase in TERMINAL_PHASES and not status.get("finishedAt"):
            wanted["finishedAt"] = stamp
        if phase == ClaimPhase.READY and not status.get("readyAt"):
            wanted["readyAt"] = stamp
        if all(status.get(k) == v for k, v in wanted.items()):
            return claim  # re-landing a move that is already there writes nothing
        text = message or _condition_reason(phase, reason)
        wanted["conditions"] = upsert_condition(
            status.get("conditions"), CONDITION, "True" if phase == ClaimPhase.READY else "False",
            _condition_reason(phase, reason), text, stamp)
        before = claim_phase(claim)
        result = await self._patch(claim, {"status": wanted}, "status")
        log = claim_log(self.ctx.log, result)
        log.info("%s -> %s%s%s", before.value, phase.value, f" ({_value(reason)})" if reason else "",
                 f": {message}" if message else "")
        self.ctx.metrics.transitions.labels(phase.value, str(_value(reason) or "")).inc()
        if phase == ClaimPhase.FAILED:
            self.ctx.metrics.failures.labels(str(_value(reason) or "")).inc()
        await self.event(result, _condition_reason(phase, reason), text,
                         warning=phase == ClaimPhase.FAILED, key=f"{phase.value}")
        return result

    async def patch_status(self, claim: Obj, fields: Mapping[str, Any]) -> Obj:
        """Write status fields that are not a phase move (MachineGone clock, shutdown counter)."""
        status = claim.get("status") or {}
        if all(status.get(k) == v for k, v in fields.items()):
            return claim
        return await self._patch(claim, {"status": dict(fields)}, "status")

    async def clear_boot_deadline(self, claim: Obj) -> Obj:
        """Remove spec.deadlineAt; only ever called on a claim whose ready status has landed."""
        if claim_phase(claim) != ClaimPhase.READY or not dig(claim, "spec", "deadlineAt"):
            return claim
        result = await self._patch(claim, {"spec": {"deadlineAt": None}}, None)
        claim_log(self.ctx.log, result).info("cleared spec.deadlineAt: the boot is over")
        return result

    async def add_finalizer(self, claim: Obj) -> Obj:
        current = list(finalizers_of(claim))
        if names.FINALIZER in current:
            return claim
        return await self._patch(claim, {"metadata": {"finalizers": current + [names.FINALIZER]}}, None)

    async def remove_finalizer(self, claim: Obj) -> Obj | None:
        """Drop our finalizer; None when that let the server delete the claim."""
        current = list(finalizers_of(claim))
        if names.FINALIZER not in current:
            return claim
        try:
            result = await self._patch(
                claim, {"metadata": {"finalizers": [f for f in current if f != names.FINALIZER] or None}}, None)
        except kube.NotFound:
            return None
        claim_log(self.ctx.log, result).info("released the finalizer")
        return result

    async def event(self, claim: Obj, reason: str, text: str, *, warning: bool = False, key: str = "") -> None:
        """Post a core/v1 Event about the claim. Deterministic name: a retried pass posts it once.

        Events are for people; a failure to post one is logged and never fails the pass.
        """
        name = name_of(claim)
        slot = claim_slot(claim)
        attempt = claim_attempt(claim)
        digest = hashlib.sha256(f"{dig(claim, 'metadata', 'uid')}/{key}/{reason}".encode()).hexdigest()[:10]
        stamp = format_time(self.ctx.now())
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name[:200]}.{digest}", "namespace": EVENTS_NAMESPACE},
            "involvedObject": {"apiVersion": names.GROUP_VERSION, "kind": names.CLAIM_KIND, "name": name,
                               "uid": dig(claim, "metadata", "uid"),
                               "resourceVersion": dig(claim, "metadata", "resourceVersion")},
            "reason": reason,
            "message": f'NodeClaim "{name}" on slot "{slot}", attempt {attempt}: {text}',
            "type": "Warning" if warning else "Normal",
            "source": {"component": "homecluster-controller"},
            "reportingComponent": "homecluster-controller",
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }
        if self.ctx.posted(body["metadata"]["name"]):  # once per name: a pass meeting it again writes nothing
            return
        try:
            await self.ctx.client.create(kube.EVENTS, body, namespace=EVENTS_NAMESPACE)
        except kube.AlreadyExists:
            pass
        except kube.CALL_FAILURES as exc:
            claim_log(self.ctx.log, claim).warning("could not post the %s event: %s", reason, exc)
            return
        self.ctx.remember_post(body["metadata"]["name"])
