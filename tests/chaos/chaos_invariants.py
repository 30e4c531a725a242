"""The model's invariants (issue 14), as pure functions over an event log.

The fault campaign (chaos_driver.py) records what happened -- from the API server's store and request log,
the simulated machines' own power logs and the operator process -- as a list of `Event`s stamped with
time.time(); each `check_*` here reads that list and returns the `Violation`s it finds. Nothing here does
I/O, so test_chaos_invariants.py feeds them hand-made logs that break each rule and sees them fail.

Words used precisely:
- a claim is *live* from its creation until the first of: a terminal phase (failed, completed), its
  deletion mark (metadata.deletionTimestamp), its removal;
- a *power-on* is a power-on command landing at the machine's BMC (IPMI, Redfish, a Wake-on-LAN packet),
  accepted or not; a *power-off* is a hard or soft power-off landing there (or through SSH). The power
  button (the campaign's out-of-band presses) is neither: nothing in the system sent it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# event kinds
CLAIM_CREATED = "claim-created"  # claim, slot, value: deadlineAt as epoch seconds ("" when none)
CLAIM_PHASE = "claim-phase"  # claim, slot, value: the new status.phase
CLAIM_ATTEMPT = "claim-attempt"  # claim, value: the new status.attempt
CLAIM_DELETING = "claim-deleting"  # claim, slot: deletionTimestamp first seen
CLAIM_GONE = "claim-gone"  # claim, slot
JOB_CREATED = "job-created"  # claim, slot, value: startup | shutdown
JOB_ENDED = "job-ended"  # claim, slot, value: startup | shutdown (finished or removed)
POWER_ON = "power-on"  # slot, value: where it came from (ipmi, redfish, wol)
POWER_OFF = "power-off"  # slot, value: where it came from (ipmi, redfish, ssh)
SLOT_SPEC_WRITE = "slot-spec-write"  # slot, value: the writer's user agent and what it did (the operator's only)
OPERATOR_EXIT = "operator-exit"  # value: the exit code, when the campaign did not stop it

TERMINAL = frozenset({"failed", "completed"})
COMMITTED = frozenset({"booting", "ready"})


@dataclass(frozen=True)
class Event:
    t: float
    kind: str
    slot: str = ""
    claim: str = ""
    value: str = ""


@dataclass(frozen=True)
class Violation:
    invariant: int
    t: float
    message: str

    def __str__(self) -> str:
        return f"invariant {self.invariant} at {self.t:.3f}: {self.message}"


@dataclass
class Claim:
    """One claim's history, read from the log."""

    name: str
    slot: str = ""
    created: float | None = None
    deadline: float | None = None
    phases: list[tuple[float, str]] = field(default_factory=list)
    deleting: float | None = None
    gone: float | None = None

    def phase_at(self, t: float) -> str:
        current = ""
        for at, phase in self.phases:
            if at > t:
                break
            current = phase
        return current

    def first(self, phases: frozenset[str]) -> float | None:
        return next((at for at, phase in self.phases if phase in phases), None)

    def live_until(self) -> float:
        ends = [t for t in (self.first(TERMINAL), self.deleting, self.gone) if t is not None]
        return min(ends) if ends else float("inf")

    def live_at(self, t: float) -> bool:
        return self.created is not None and self.created <= t < self.live_until()


def claims_of(events: Iterable[Event]) -> dict[str, Claim]:
    out: dict[str, Claim] = {}
    for e in events:
        if not e.claim or e.kind not in (CLAIM_CREATED, CLAIM_PHASE, CLAIM_DELETING, CLAIM_GONE):
            continue
        c = out.setdefault(e.claim, Claim(e.claim))
        c.slot = c.slot or e.slot
        if e.kind == CLAIM_CREATED:
            c.created = e.t
            c.deadline = float(e.value) if e.value else None
        elif e.kind == CLAIM_PHASE:
            c.phases.append((e.t, e.value))
        elif e.kind == CLAIM_DELETING and c.deleting is None:
            c.deleting = e.t
        elif e.kind == CLAIM_GONE:
            c.gone = e.t
    return out


@dataclass(frozen=True)
class Job:
    claim: str
    slot: str
    kind: str
    created: float
    ended: float | None


def jobs_of(events: Iterable[Event]) -> list[Job]:
    created: list[Event] = []
    ended: dict[tuple[str, str, str], list[float]] = {}
    for e in events:
        if e.kind == JOB_CREATED:
            created.append(e)
        elif e.kind == JOB_ENDED:
            ended.setdefault((e.claim, e.slot, e.value), []).append(e.t)
    out = []
    for e in created:
        ends = sorted(t for t in ended.get((e.claim, e.slot, e.value), []) if t >= e.t)
        out.append(Job(e.claim, e.slot, e.value, e.t, ends[0] if ends else None))
    return out


def check_power_on_needs_claim(events: list[Event], grace: float = 2.0) -> list[Violation]:
    """1. A power-on lands only while a startup Job of its slot runs whose claim was live when the Job began
    (`grace`: a power command sent just before the Job was seen to end lands a moment later)."""
    claims, jobs = claims_of(events), jobs_of(events)
    out = []
    for e in events:
        if e.kind != POWER_ON:
            continue
        covering = [j for j in jobs if j.kind == "startup" and j.slot == e.slot and j.created <= e.t
                    and (j.ended is None or e.t <= j.ended + grace)
                    and j.claim in claims and claims[j.claim].live_at(j.created)]
        if not covering:
            out.append(Violation(1, e.t, f"power-on ({e.value}) landed on slot {e.slot}'s machine with no startup "
                                         f"Job of a live claim running"))
    return out


def check_no_power_off_under_live_claim(events: list[Event]) -> list[Violation]:
    """2. No power-off lands after a claim of the slot began its startup, while that claim is still live."""
    claims, jobs = claims_of(events), jobs_of(events)
    out = []
    for e in events:
        if e.kind != POWER_OFF:
            continue
        for j in jobs:
            c = claims.get(j.claim)
            if j.kind == "startup" and j.slot == e.slot and j.created < e.t and c is not None and c.live_at(e.t):
                out.append(Violation(2, e.t, f"power-off ({e.value}) landed on slot {e.slot}'s machine while claim "
                                             f"{c.name} was live and its startup Job had begun"))
                break
    return out


def check_one_job_and_one_live_claim(events: list[Event]) -> list[Violation]:
    """3. At most one startup Job per claim; never two live claims of one slot committed (booting or ready)
    at once -- the pass that launches one must have superseded the other first."""
    out = []
    starts: dict[str, list[float]] = {}
    for j in jobs_of(events):
        if j.kind == "startup":
            starts.setdefault(j.claim, []).append(j.created)
    for claim, times in starts.items():
        if len(times) > 1:
            out.append(Violation(3, times[1], f"claim {claim} has {len(times)} startup Jobs"))
    by_slot: dict[str, list[tuple[float, float, str]]] = {}
    for c in claims_of(events).values():
        began = c.first(COMMITTED)
        if began is not None and began < c.live_until():
            by_slot.setdefault(c.slot, []).append((began, c.live_until(), c.name))
    for slot, spans in by_slot.items():
        spans.sort()
        for i, (a_start, a_end, a) in enumerate(spans):
            for b_start, b_end, b in spans[i + 1:]:
                if b_start < a_end:
                    out.append(Violation(3, b_start, f"slot {slot}: claims {a} and {b} both live and committed"))
    return out


def check_writes(events: list[Event]) -> list[Violation]:
    """4. The operator never writes a slot's spec; status.attempt, once set, never changes."""
    out = [Violation(4, e.t, f"slot {e.slot}: an operator write changed more than its status and metadata ({e.value})")
           for e in events if e.kind == SLOT_SPEC_WRITE]
    attempts: dict[str, str] = {}
    for e in events:
        if e.kind != CLAIM_ATTEMPT or e.value in ("", "0"):
            continue
        before = attempts.setdefault(e.claim, e.value)
        if before != e.value:
            out.append(Violation(4, e.t, f"claim {e.claim}: status.attempt changed from {before} to {e.value}"))
    return out


def check_claims_end(events: list[Event], end: float, slack: float, release_bound: float) -> list[Violation]:
    """5. A claim is ready, terminal, deleted or gone by its deadline plus `slack` (one pass and the operator's
    downtime); a deleted claim whose work is done -- it was pending or is terminal, and every Job of it has
    ended (a failed claim's finalizer rightly waits for the shutdown Job it owns) -- is gone within
    `release_bound`. `end` is when the log ends: a bound not yet passed then is not judged."""
    out = []
    jobs: dict[str, list[Job]] = {}
    for j in jobs_of(events):
        jobs.setdefault(j.claim, []).append(j)
    for c in claims_of(events).values():
        if c.deadline is not None:
            settled = [t for t in (c.first(TERMINAL | {"ready"}), c.deleting, c.gone) if t is not None]
            at = min(settled) if settled else None
            limit = c.deadline + slack
            if (at is None and end > limit) or (at is not None and at > limit):
                out.append(Violation(5, limit, f"claim {c.name} was not ready or ended by its deadline + {slack:g}s"))
        if c.deleting is not None:
            done = c.deleting if c.phase_at(c.deleting) in TERMINAL | {"", "pending"} else c.first(TERMINAL)
            if done is None:
                continue  # its reversal still runs: judged by convergence (nothing Terminating at the end)
            own = [j.ended for j in jobs.get(c.name, []) if j.created < (c.gone or end)]
            if None in own:
                continue  # a Job of it still runs: its work is not done
            done = max([done, c.deleting, *own])
            gone = c.gone if c.gone is not None else end
            if gone > done + release_bound:
                out.append(Violation(5, done + release_bound, f"claim {c.name} stayed Terminating more than "
                                                              f"{release_bound:g}s after its work was done"))
    return out


def check_operator_alive(events: list[Event]) -> list[Violation]:
    """7. The operator never exits unless the campaign stopped it."""
    return [Violation(7, e.t, f"the operator exited on its own (code {e.value})")
            for e in events if e.kind == OPERATOR_EXIT]


def not_converged(claims: list[dict], power: dict[str, str]) -> list[str]:
    """6. Why the pool has not converged (empty: it has): every machine on iff its slot has a live claim that
    is ready; no live claim still pending or booting; no claim Terminating. `claims` are NodeClaim objects,
    `power` is each slot's machine's real power ("on" | "off")."""
    reasons = []
    ready_slots = set()
    for obj in claims:
        md, st = obj.get("metadata") or {}, obj.get("status") or {}
        name, phase, slot = md.get("name", ""), st.get("phase") or "", (obj.get("spec") or {}).get("slotRef", "")
        if md.get("deletionTimestamp"):
            reasons.append(f"claim {name} is Terminating")
        elif phase not in TERMINAL and phase != "ready":
            reasons.append(f"claim {name} is still {phase or 'unstamped'}")
        elif phase == "ready":
            ready_slots.add(slot)
    for slot, state in sorted(power.items()):
        if (state == "on") != (slot in ready_slots):
            reasons.append(f"slot {slot}: machine {state}, {'a' if slot in ready_slots else 'no'} ready live claim")
    return reasons


def held_by_load(reasons: list[str], events: list[Event], job_timeouts: list[tuple[float, str]],
                 since: float) -> bool:
    """For a pool that did not converge (`reasons` from not_converged): whether every slot holding it up had a
    lifecycle Job run out of its deadline after `since` (the faults stopping). Then the system was acting and
    the machine was too slow for its Jobs -- load, not a broken rule. A slot with no Job timing out (nothing
    tried, or a claim stuck) makes it a violation of invariant 6."""
    slots = {r.split()[1].rstrip(":") for r in reasons if r.startswith("slot ")}
    slot_of = {e.claim: e.slot for e in events if e.claim and e.slot}
    slots |= {slot_of.get(r.split()[1], "?") for r in reasons if r.startswith("claim ")}
    timed_out = {slot for t, slot in job_timeouts if t >= since}
    return bool(slots) and slots <= timed_out


def check_all(events: list[Event], end: float, slack: float, release_bound: float) -> list[Violation]:
    events = sorted(events, key=lambda e: e.t)
    return (check_power_on_needs_claim(events) + check_no_power_off_under_live_claim(events)
            + check_one_job_and_one_live_claim(events) + check_writes(events)
            + check_claims_end(events, end, slack, release_bound) + check_operator_alive(events))
