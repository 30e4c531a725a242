"""What the campaign records while it runs: the API server's store (claims, Jobs), the machines' power logs,
the request log (the operator's writes to slots), as chaos_invariants.Event lists.

The recorder subscribes to the in-memory store directly, not through a watch stream: the campaign's own
faults end and delay watch streams, and the record must not miss what they hide from the operator. Store
events are stamped with time.time() when the store emits them (the write's moment), machine power events
carry the time.time() the machine stamped.
"""
from __future__ import annotations

from typing import Any

from chaos_invariants import (CLAIM_ATTEMPT, CLAIM_CREATED, CLAIM_DELETING, CLAIM_GONE, CLAIM_PHASE, JOB_CREATED,
                              JOB_ENDED, POWER_OFF, POWER_ON, SLOT_SPEC_WRITE, Event)

from homecluster import names
from homecluster_lab.machines.machine import BMC_SOURCES
from homecluster.model.timestamps import parse_time

ON_ACTIONS = {"on", "noop-on"}
OFF_ACTIONS = {"off", "soft-off", "noop-off", "noop-soft-off", "ignored-soft-off"}
OPERATOR_AGENTS = ("homecluster-operator", "kopf/")


def _now() -> float:
    import time
    return time.time()


def claim_events(t: float, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Event]:
    """Events for one store event of a NodeClaim (pure)."""
    md, spec, st = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    name, slot = md.get("name", ""), spec.get("slotRef", "")
    out = []
    if etype == "DELETED":
        return [Event(t, CLAIM_GONE, slot, name)]
    old = old if etype == "MODIFIED" else None
    omd, ost = (old or {}).get("metadata") or {}, (old or {}).get("status") or {}
    if old is None:
        deadline = spec.get("deadlineAt")
        at = parse_time(deadline) if isinstance(deadline, str) else None
        out.append(Event(t, CLAIM_CREATED, slot, name, str(at.timestamp()) if at else ""))
    if st.get("phase") and st.get("phase") != ost.get("phase"):
        out.append(Event(t, CLAIM_PHASE, slot, name, st["phase"]))
    if st.get("attempt") is not None and st.get("attempt") != ost.get("attempt"):
        out.append(Event(t, CLAIM_ATTEMPT, slot, name, str(st["attempt"])))
    if md.get("deletionTimestamp") and not omd.get("deletionTimestamp"):
        out.append(Event(t, CLAIM_DELETING, slot, name))
    return out


def _job_done(obj: dict[str, Any] | None) -> bool:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conds)


def _timed_out(obj: dict[str, Any] | None) -> bool:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Failed" and c.get("status") == "True" and c.get("reason") == "DeadlineExceeded"
               for c in conds)


def job_events(t: float, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Event]:
    """Events for one store event of a Job (pure); Jobs without the lifecycle labels are none of ours."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    kind = labels.get(names.LABEL_JOB_KIND)
    if kind not in ("startup", "shutdown"):
        return []
    slot, claim = labels.get(names.LABEL_SLOT, ""), labels.get(names.LABEL_CLAIM, "")
    if etype == "ADDED":
        return [Event(t, JOB_CREATED, slot, claim, kind)]
    if (etype == "DELETED" and not _job_done(old)) or (etype == "MODIFIED" and _job_done(obj) and not _job_done(old)):
        return [Event(t, JOB_ENDED, slot, claim, kind)]
    return []


def _generation(obj: dict[str, Any] | None) -> int:
    return int(((obj or {}).get("metadata") or {}).get("generation") or 0)


def slot_change(obj: dict[str, Any], old: dict[str, Any] | None) -> tuple[str, int, int]:
    """(slot, generation before, after) for one store event of a slot (pure; a creation: before = after). The
    API server bumps metadata.generation on every change outside metadata and status, so a move is a spec write."""
    return (obj.get("metadata") or {}).get("name", ""), _generation(old if old is not None else obj), _generation(obj)


class StoreRecorder:
    """A subscriber of the lab API server's store (it has the `wants`/`offer` of store.Watcher)."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.claims_key = api.resource(f"{names.CLAIM_PLURAL}.{names.API_GROUP}").key
        self.jobs_key = api.resource("jobs.batch").key
        self.slots_key = api.resource(f"{names.SLOT_PLURAL}.{names.API_GROUP}").key
        # resourceVersion a slot's change was stored under -> (slot, generation before, after): what each write
        # in the request log did to the slot (its entry carries the resourceVersion it left); from the lab's start
        self.slot_changes: dict[str, tuple[str, int, int]] = {}
        self.events: list[Event] = []
        self.job_timeouts: list[tuple[float, str]] = []  # (when, slot): a lifecycle Job past its deadline
        self.closed = False

    def __enter__(self) -> "StoreRecorder":
        for event in list(self.api.store.history):  # the slots' changes before the campaign began (the operator
            if event.key == self.slots_key:  # adds its finalizer when it first observes them): from the history
                self.slot_changes[str(event.rv)] = slot_change(event.obj, event.old)
        self.api.store.watchers.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.api.store.watchers.discard(self)

    def wants(self, event: Any) -> bool:
        return event.key in (self.claims_key, self.jobs_key, self.slots_key)

    def offer(self, event: Any) -> None:
        if event.key == self.slots_key:
            self.slot_changes[str(event.rv)] = slot_change(event.obj, event.old)
            return
        convert = claim_events if event.key == self.claims_key else job_events
        self.events.extend(convert(_now(), event.type, event.obj, event.old))
        if event.key == self.jobs_key and _timed_out(event.obj) and not _timed_out(event.old):
            labels = (event.obj.get("metadata") or {}).get("labels") or {}
            self.job_timeouts.append((_now(), labels.get(names.LABEL_SLOT, "")))


class PowerRecorder:
    """Reads each machine's power log (its `events` deque) and keeps the commands that came from the network."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._seen: dict[str, int] = {}  # slot -> how many of its machine's events were read (they never shrink
        self._last: dict[str, Any] = {}  # below maxlen, so the last one read marks where to go on)

    def poll(self, machines: dict[str, Any]) -> None:
        for slot, machine in machines.items():
            log = list(machine.events)
            last = self._last.get(slot)
            start = 0
            if last is not None:
                start = next((i + 1 for i in range(len(log) - 1, -1, -1) if log[i] is last), 0)
            for e in log[start:]:
                if e.source in BMC_SOURCES and e.action in ON_ACTIONS:
                    self.events.append(Event(e.at, POWER_ON, slot, "", f"{e.source}:{e.action}"))
                elif e.source in BMC_SOURCES and e.action in OFF_ACTIONS:
                    self.events.append(Event(e.at, POWER_OFF, slot, "", f"{e.source}:{e.action}"))
            if log:
                self._last[slot] = log[-1]


def slot_spec_writes(audit: Any, changes: dict[str, tuple[str, int, int]]) -> list[Event]:
    """The operator's writes to slots that changed a slot's spec (invariant 4), from the request log and the
    store's record of what each write left (StoreRecorder.slot_changes). A create or a delete is kept whatever
    it did; a patch or an update of the main resource (the slot's finalizer: metadata.finalizers only,
    lifecycle/slotremoval.py) is kept when the change stored under the resourceVersion it left moved
    metadata.generation, which the API server bumps on any change outside metadata and status. One refused
    (4xx, 5xx) stored nothing; one that changed nothing answers with the resourceVersion it found (recorded
    too: every change of a slot is, creations included); one whose resourceVersion the record does not hold is
    kept, saying so -- never dropped unread. A write that changed nothing would be blamed for the change stored
    under the resourceVersion it found if that moved the generation; in the campaign only the operator and the
    GitOps loop (which re-applies the same spec) write a slot, so no other write moves it."""
    out = []
    for e in audit.writes(names.SLOT_PLURAL):
        if e.group != names.API_GROUP or e.subresource == "status" or \
                not any(agent in e.user_agent for agent in OPERATOR_AGENTS):
            continue
        if e.verb not in ("patch", "update"):
            out.append(Event(e.time, SLOT_SPEC_WRITE, e.name, "", f"{e.user_agent}: {e.verb}"))
            continue
        if e.code >= 300:
            continue
        change = changes.get(e.rv)
        if change is None or change[0] != e.name:  # never dropped unread: a write whose result was not recorded
            out.append(Event(e.time, SLOT_SPEC_WRITE, e.name, "", f"{e.user_agent}: {e.verb} left resourceVersion "
                                                                  f"{e.rv or '?'}, which the record does not hold"))
        elif change[1] != change[2]:
            out.append(Event(e.time, SLOT_SPEC_WRITE, e.name, "",
                             f"{e.user_agent}: {e.verb} moved metadata.generation {change[1]} -> {change[2]}"))
    return out


def record_line(e: Event) -> str:
    return f"  {e.t:.3f} {e.kind} slot={e.slot} claim={e.claim} {e.value}\n"


def read_record(text: str) -> list[Event]:
    """The events of a kept run's chaos-record.txt (chaos_driver writes it), to check them again."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("record:"):
            inside = True
        elif line.startswith("machine "):
            inside = False
        elif inside and line.strip():
            t, kind, slot, claim, *value = line.split()
            out.append(Event(float(t), kind, slot.partition("=")[2], claim.partition("=")[2], " ".join(value)))
    return out
