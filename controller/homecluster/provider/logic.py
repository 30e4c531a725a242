"""The provider's decisions, as pure functions of the cache's objects, the time and the settings.

Nothing here performs I/O or reads a clock: `now` is passed in, objects come from `cache.Cache`
(memory only), and in-flight writes are passed as `InFlight` (slots reserved by an IncreaseSize
whose creates have not returned yet, claims a DecreaseTargetSize/DeleteNodes is deleting).

The rules, in the NodeClaim model's words:
- a group's target size is the number of its live claims not marked for deletion, on slots not marked
  for deletion (plus slots reserved by an IncreaseSize in flight): "a machine is wanted <=> a live claim
  names its slot", and a slot being removed (model.slotremoval) has its claim released by the operator;
- IncreaseSize picks free slots -- no live claim, not reserved, not being deleted, attempt streak
  not exhausted, its machine not another slot's (model.identity) -- quiet ones first (off, no
  shutdown Job running: a claim on a draining slot waits for its shutdown to end), in name order, and either gets all `delta` of them or refuses;
- DecreaseTargetSize cancels only pending claims (the only cancelable phase), newest first;
- DeleteNodes maps node -> slot -> live claim, and refuses the whole call if one node is not in
  the group;
- NodeGroups and NodeGroupForNode report a group's maxSize capped at the target plus the free slots
  (`reported_group`): the autoscaler never plans a machine no slot can give;
- NodeGroupNodes reports one instance per slot that has a live claim, a recent failure or a machine
  that is on; the instance id is the slot's providerID, which equals the corev1 Node's providerID.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from homecluster.limits import MAX_POOL_SIZE, clamp_int
from homecluster.model.attempts import attempt_exceeded, seed_attempt
from homecluster.model.deadlines import boot_window
from homecluster.model.supersede import newest_key, resolve_owner
from homecluster.model.objects import (claim_phase, claim_reason, claim_shutdown_job, dig, marked_for_deletion, name_of,
                                       phase_text, slot_group, slot_last_claim, time_field)
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.model.settings import Settings
from homecluster.kube.cache import GROUPS, SLOTS, Cache
from homecluster.model.boundary import slot_provider_id
from homecluster.provider.errors import ProviderError, invalid, not_found, precondition
from homecluster.model.identity import declaring_slot, node_owner, slots_with_anothers_machine

Obj = Mapping[str, Any]

# cluster-autoscaler's cloudprovider.InstanceState and InstanceErrorClass values
RUNNING, CREATING, DELETING = 1, 2, 3
OUT_OF_RESOURCES, OTHER_ERROR = 1, 99

# Reasons that end a claim without saying anything about the machine: reporting them as a
# creation error would make CA back the group off for a cancel it asked for itself.
_NOT_A_CREATION_ERROR = frozenset({Reason.SUPERSEDED.value, Reason.CANCELED.value})


@dataclass(frozen=True)
class InFlight:
    """Writes the provider has decided but whose API calls have not returned yet."""

    reserved_slots: frozenset[str] = frozenset()
    deleting_claims: frozenset[str] = frozenset()


@dataclass(frozen=True)
class GroupInfo:
    """What NodeGroups and NodeGroupForNode both return for a group (CA caches either)."""

    id: str
    min_size: int
    max_size: int
    debug: str


@dataclass(frozen=True)
class InstanceInfo:
    id: str
    state: int
    error_code: str = ""
    error_message: str = ""
    error_class: int = 0


@dataclass(frozen=True)
class SlotClaims:
    """A slot's claims as the provider reads them."""

    live: Obj | None  # the newest live claim, if any
    newest: Obj | None  # the newest claim of any phase


# ---- groups --------------------------------------------------------------------------------

def group_info(group: Obj) -> GroupInfo:
    """id, min, max and a debug string for one Group object (sizes held to limits.MAX_POOL_SIZE: the
    CRD refuses more, and CA's NodeGroup sizes are int32, which a stored 3e9 would overflow)."""
    name = name_of(group)
    min_size = clamp_int(dig(group, "spec", "minSize", default=0), MAX_POOL_SIZE)
    max_size = clamp_int(dig(group, "spec", "maxSize", default=0), MAX_POOL_SIZE)
    return GroupInfo(name, min_size, max_size, f"homecluster Group {name!r} (minSize {min_size}, maxSize {max_size})")


def require_group(cache: Cache, group_id: str) -> Obj:
    """The Group named group_id, or NOT_FOUND naming it and the known groups."""
    group = cache.get(GROUPS, group_id) if group_id else None
    if group is None:
        known = ", ".join(cache.group_names()) or "none"
        raise not_found(f"node group {group_id!r} not found: no Group of that name (known groups: {known})")
    return group


# ---- node -> slot -> group -----------------------------------------------------------------

def resolve_slot(cache: Cache, provider_id: str, name: str) -> Obj | None:
    """The slot a node belongs to: its corev1 Node's owner (found by providerID, then by name), else a slot
    declaring the id (an instance whose machine has not registered).

    A Node is matched to a slot by what the slots RESOLVE to (model.identity): the first slot to find it
    keeps it, whatever order the cache indexed the slots in, exactly as the controller reads it. Covers the
    autoscaler's placeholder nodes for unregistered instances, whose name and providerID are both the
    instance id (= the slot's providerID), and real nodes whose providerID the slot did not declare but
    whose name matches the slot's node name. A Node the slot boundary refuses is no slot's (model.boundary:
    a control-plane Node, the second slot declaring or resolving to a machine, a Node outside
    --managed-node-selector): the autoscaler must never count it in a pool, nor scale it down (drain it) as
    one of the pool's nodes.
    """
    with cache.lock:
        slots, selector = cache.all(SLOTS), cache.managed_node_selector
        node = cache.node_by_provider_id(provider_id) if provider_id else None
        if node is not None:
            return node_owner(node, slots, cache, selector)
        slot = declaring_slot(provider_id, slots, cache, selector, by_provider_id=True)
        if slot is not None:
            return slot
        node = cache.node_by_name(name) if name else None
        if node is not None:
            return node_owner(node, slots, cache, selector)
        return declaring_slot(name, slots, cache, selector, by_provider_id=False)


def group_of_node(cache: Cache, provider_id: str, name: str) -> Obj | None:
    """The Group of a node, or None for a node no Group manages (control plane, unmanaged)."""
    slot = resolve_slot(cache, provider_id, name)
    group_name = slot_group(slot)
    return cache.get(GROUPS, group_name) if group_name else None


# ---- claims of a slot ----------------------------------------------------------------------

def slot_claims(cache: Cache, slot_name: str) -> SlotClaims:
    """The slot's owning live claim (model.supersede: the newest live one owns the slot) and its newest claim."""
    claims = cache.claims_of_slot(slot_name)
    return SlotClaims(live=resolve_owner(claims).owner, newest=max(claims, key=newest_key) if claims else None)


def next_attempt(slot: Obj) -> int:
    """The attempt number the slot's next claim will be seeded with (model.attempts.seed_attempt)."""
    return seed_attempt(slot_last_claim(slot))


def streak_exhausted(slot: Obj, settings: Settings) -> bool:
    """A new claim on this slot would fail AttemptLimitExceeded before buying a machine."""
    return attempt_exceeded(next_attempt(slot), settings)


def counts_toward_target(claim: Obj | None, inflight: InFlight) -> bool:
    return (claim is not None and not marked_for_deletion(claim)
            and name_of(claim) not in inflight.deleting_claims)


# ---- sizes ---------------------------------------------------------------------------------

def target_size(cache: Cache, group_id: str, inflight: InFlight) -> int:
    """Live claims of the group not marked for deletion, plus slots reserved by an IncreaseSize in flight. A
    slot being removed counts for nothing: its live claim is being released (model.slotremoval)."""
    size = 0
    for slot in cache.slots_of_group(group_id):
        name = name_of(slot)
        if marked_for_deletion(slot):
            continue
        if name in inflight.reserved_slots or counts_toward_target(slot_claims(cache, name).live, inflight):
            size += 1
    return size


def quiet_slot(slot: Obj, claims: SlotClaims, now: datetime | None, settings: Settings) -> bool:
    """The slot's machine is off and no shutdown Job can be running for it (as far as the cache shows).

    Not quiet: the machine is observed on (status.powerState: with no live claim that is the slot an unwanted
    machine's shutdown is draining), the slot's own shutdown counter is running (an episode not yet observed
    off), or the newest claim failed with a forced shutdown fired less than one shutdown Job timeout (plus a
    poll) ago. A claim on a slot that is not quiet waits pending for the shutdown to end
    (lifecycle.shutdown.hold_launch), so such slots are picked last.

    status.phase is never read: it is derived for display from these same inputs and decides nothing (the
    specification), so a hand-patched phase cannot move a scale-up onto another slot.
    """
    status = dig(slot, "status", default={}) or {}
    if status.get("powerState") == "on":
        return False
    if int(dig(status, "shutdown", "attempts", default=0) or 0) > 0:
        return False
    newest = claims.newest
    if newest is not None and claim_phase(newest) == ClaimPhase.FAILED \
            and claim_shutdown_job(newest):
        finished = time_field(newest, "status", "finishedAt")
        ended_by = finished + settings.shutdown_job_timeout + settings.job_poll_interval if finished else None
        if ended_by is None or now is None or now < ended_by:
            return False
    return True


def free_slots(cache: Cache, group_id: str, inflight: InFlight, settings: Settings,
               now: datetime | None = None) -> tuple[list[str], list[str]]:
    """The group's free slots -- no live claim, not reserved by an IncreaseSize in flight, not being removed, its
    machine not another slot's (a claim there would wait, powering nothing), its attempt streak not spent --
    quiet ones first (`quiet_slot`: off, no shutdown running), name order within each; and the slots left out only
    for a spent streak."""
    free, exhausted = [], []
    anothers = slots_with_anothers_machine(cache.all(SLOTS), cache)
    for slot in cache.slots_of_group(group_id):
        name = name_of(slot)
        if name in inflight.reserved_slots or marked_for_deletion(slot) or name in anothers:
            continue
        claims = slot_claims(cache, name)
        if claims.live is not None:
            continue
        if streak_exhausted(slot, settings):
            exhausted.append(name)
        else:
            free.append((not quiet_slot(slot, claims, now, settings), name))
    return [name for _, name in sorted(free)], exhausted


def reported_group(cache: Cache, group: Obj, inflight: InFlight, settings: Settings) -> GroupInfo:
    """What NodeGroups and NodeGroupForNode tell the autoscaler of a group: its spec's sizes, maxSize capped at
    what its slots can give now -- the target size plus the free slots (`free_slots`) -- and minSize at that cap.

    The autoscaler plans a scale-up within maxSize, and an IncreaseSize beyond the free slots is refused
    RESOURCE_EXHAUSTED, after which it backs the whole group off (5 minutes by default, longer each time): a Group
    whose spec allows more machines than it has slots (slots not yet created, or not yet in the cache when the
    Group is), or whose other slots are busy (a claim being released, a spent streak), would buy nothing at all
    where it could have bought what its free slots allow. The cap never falls below the target. The increase
    itself still checks the spec's maxSize (`plan_increase`), so its refusal names the number Git holds."""
    info = group_info(group)
    room = target_size(cache, info.id, inflight) + len(free_slots(cache, info.id, inflight, settings)[0])
    max_size = min(info.max_size, room)
    return GroupInfo(info.id, min(info.min_size, max_size), max_size,
                     f"homecluster Group {info.id!r} (minSize {info.min_size}, maxSize {info.max_size}; "
                     f"its slots give {room} now)")


def plan_increase(cache: Cache, group: Obj, delta: int, inflight: InFlight, settings: Settings,
                  now: datetime | None = None) -> list[str]:
    """The `delta` slots to create claims on, or a refusal saying which rule stops it.

    Among the free slots, quiet ones (`quiet_slot`: off, no shutdown running) come first, then the
    rest; name order within each."""
    info = group_info(group)
    if delta <= 0:
        raise invalid(f"NodeGroupIncreaseSize for group {info.id!r}: delta must be positive, got {delta}")
    current = target_size(cache, info.id, inflight)
    if current + delta > info.max_size:
        raise precondition(
            f"NodeGroupIncreaseSize for group {info.id!r}: target size {current} + delta {delta} "
            f"would exceed maxSize {info.max_size}; raise spec.maxSize of the Group to allow more")
    free, exhausted = free_slots(cache, info.id, inflight, settings, now)
    if len(free) < delta:
        extra = (f"; {len(exhausted)} more slot(s) ({', '.join(exhausted[:5])}) have failed "
                 f"{settings.attempt_limit} attempts in a row and are skipped until one succeeds") if exhausted else ""
        raise ProviderError(
            "RESOURCE_EXHAUSTED",
            f"NodeGroupIncreaseSize for group {info.id!r}: asked for {delta} machine(s) but only {len(free)} "
            f"slot(s) are free (a free slot has no live NodeClaim){extra}; add Node slots with "
            f"spec.groupRef {info.id!r} or wait for claims to finish")
    return free[:delta]


def plan_decrease(cache: Cache, group: Obj, delta: int, inflight: InFlight) -> list[str]:
    """The pending claims to cancel (newest first) for DecreaseTargetSize(delta < 0)."""
    info = group_info(group)
    if delta >= 0:
        raise invalid(f"NodeGroupDecreaseTargetSize for group {info.id!r}: delta must be negative, got {delta}")
    pending = []
    for slot in cache.slots_of_group(info.id):
        if marked_for_deletion(slot):
            continue  # not in the target: its claim is being released anyway
        live = slot_claims(cache, name_of(slot)).live
        if (counts_toward_target(live, inflight)
                and claim_phase(live) == ClaimPhase.PENDING):
            pending.append(live)
    pending.sort(key=newest_key, reverse=True)
    wanted = -delta
    if len(pending) < wanted:
        raise precondition(
            f"NodeGroupDecreaseTargetSize for group {info.id!r}: asked to cancel {wanted} request(s) but only "
            f"{len(pending)} NodeClaim(s) are still pending; booting and ready claims own machines and are "
            f"removed with NodeGroupDeleteNodes, not by lowering the target")
    return [name_of(c) for c in pending[:wanted]]


@dataclass(frozen=True)
class DeleteTarget:
    node: str  # how the node was named in the request, for messages
    slot: str
    claim: str | None  # the claim to delete; None: nothing to do (already deleting, or no claim)


def plan_delete(cache: Cache, group: Obj, nodes: list[tuple[str, str]], inflight: InFlight,
                now: datetime, settings: Settings) -> list[DeleteTarget]:
    """Map each (providerID, name) to the claim to delete; refuse the whole call if one is not ours.

    A node with a live claim: delete the claim (its finalizer shuts the machine down). A node whose
    instance is a reported creation error: delete that failed claim, so the error instance goes away
    as CA expects. Anything else of the group (already deleting, machine draining): nothing to do.
    """
    info = group_info(group)
    targets = []
    for provider_id, name in nodes:
        label = name or provider_id or "<unnamed>"
        slot = resolve_slot(cache, provider_id, name)
        if slot is None:
            raise invalid(f"NodeGroupDeleteNodes for group {info.id!r}: node {label!r} (providerID "
                          f"{provider_id!r}) belongs to no group: no slot declares that providerID or node name")
        owning = slot_group(slot)
        if owning != info.id:
            raise invalid(f"NodeGroupDeleteNodes for group {info.id!r}: node {label!r} is slot "
                          f"{name_of(slot)!r} of group {owning!r}, not of {info.id!r}")
        claims = slot_claims(cache, name_of(slot))
        claim = None
        if counts_toward_target(claims.live, inflight):
            claim = name_of(claims.live)
        elif claims.live is None and recent_failure(claims.newest, group, now, settings) is not None:
            claim = name_of(claims.newest)
        targets.append(DeleteTarget(label, name_of(slot), claim))
    return targets


# ---- instances -----------------------------------------------------------------------------

def recent_failure(claim: Obj | None, group: Obj, now: datetime, settings: Settings) -> datetime | None:
    """If `claim` (a slot's newest) is a creation failure CA should hear about, when it stops being one.

    A failed claim counts for one boot window after status.finishedAt, unless its reason is one
    that says nothing about the machine (Superseded, Canceled).
    """
    if claim is None or phase_text(claim) != ClaimPhase.FAILED.value:
        return None
    if claim_reason(claim) in _NOT_A_CREATION_ERROR:
        return None
    finished = time_field(claim, "status", "finishedAt") or time_field(claim, "spec", "deadlineAt")
    if finished is None:
        return None
    until = finished + boot_window(group, settings)
    return until if now < until else None


def group_instances(cache: Cache, group: Obj, inflight: InFlight, now: datetime,
                    settings: Settings) -> tuple[list[InstanceInfo], datetime | None]:
    """NodeGroupNodes for one group, and the moment this answer expires by the clock alone (or None)."""
    out: list[InstanceInfo] = []
    expires: datetime | None = None
    for slot in cache.slots_of_group(name_of(group)):
        name = name_of(slot)
        instance_id = slot_provider_id(slot)
        claims = slot_claims(cache, name)
        live = claims.live
        if live is not None:
            if marked_for_deletion(live) or marked_for_deletion(slot) \
                    or name_of(live) in inflight.deleting_claims:
                out.append(InstanceInfo(instance_id, DELETING))
            elif claim_phase(live) == ClaimPhase.READY:
                out.append(InstanceInfo(instance_id, RUNNING))
            else:
                out.append(InstanceInfo(instance_id, CREATING))
            continue
        if name in inflight.reserved_slots:
            out.append(InstanceInfo(instance_id, CREATING))
            continue
        until = recent_failure(claims.newest, group, now, settings)
        asked_to_go = until is not None and (marked_for_deletion(claims.newest)
                                             or name_of(claims.newest) in inflight.deleting_claims)
        if asked_to_go:
            out.append(InstanceInfo(instance_id, DELETING))  # the autoscaler already asked for it to go
            continue
        if until is not None:
            reason = claim_reason(claims.newest) or "Failed"
            message = dig(claims.newest, "status", "message", default="") or f"NodeClaim {name_of(claims.newest)!r} failed"
            error_class = OUT_OF_RESOURCES if reason == Reason.ATTEMPT_LIMIT_EXCEEDED.value else OTHER_ERROR
            out.append(InstanceInfo(instance_id, CREATING, reason, message, error_class))
            expires = until if expires is None else min(expires, until)
            continue
        if dig(slot, "status", "powerState") == "on":
            out.append(InstanceInfo(instance_id, DELETING))  # on, and no claim wants it: being shut down
    return out, expires


