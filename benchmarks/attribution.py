"""Who made each write, to which slot, what it did, and which writes are events (pure: no I/O).

The definitions are controller_latency's (its docstring). A write is the in-memory server's AuditEntry or
the real audit log's realaudit.AuditWrite: the same fields, plus the user and the answer's time on the real one.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from homecluster import names
from homecluster.jobs.manifest import DEFAULT_SERVICE_ACCOUNT
from homecluster_lab import topology
# the real control plane's users: the operator's and the Jobs' ServiceAccounts, the runner node that runs the
# Job pods, the identity that clears the readiness taint
from homecluster_lab.k8s.install import CNI_USER, OPERATOR_ACCOUNT
from homecluster_lab.k8s.labcluster import RUNNER

import realaudit

if TYPE_CHECKING:
    from lifecycle_run import Recording

OPERATOR_UA = "homecluster-operator"
DELETED = "__deleted__"


# ---- attribution (pure) ----------------------------------------------------------------------------------
def dig(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


@dataclass(frozen=True)
class Write:
    time: float
    writer: str  # operator | provider | executor | kubelet | job pod | helper | other
    what: str  # resource[/subresource] verb
    label: str  # what the write did, for the operator's writes (seed, booting, slot ready, ...)
    slot: str | None
    obj: dict | None
    prev: dict | None
    done: float | None = None  # when the server answered (the real audit log's stageTimestamp; None in memory)


def _resource(e: Any) -> str:
    core = "" if e.group in ("", None) else f".{e.group.split('.')[0]}"
    base = e.resource + ("" if e.group in ("", "batch", "coordination.k8s.io") else core)
    if e.resource == "nodes" and e.group == names.API_GROUP:
        base = "slots"
    elif e.resource == "nodes":
        base = "corev1 nodes"
    return base + (f"/{e.subresource}" if e.subresource else "")


def writer_of(e: Any, obj: dict | None, prev: dict | None) -> str:
    """Who wrote: by the authenticated user on the real control plane; by user agent, and by resource where
    two lab parts share the kubernetes client's agent, on the in-memory one (it has no users)."""
    by_user = realaudit.writer_by_user(getattr(e, "user", ""), OPERATOR_ACCOUNT, DEFAULT_SERVICE_ACCOUNT,
                                       RUNNER, CNI_USER)
    if by_user is not None:
        return by_user
    if OPERATOR_UA in e.user_agent:
        return "provider" if e.resource == "nodeclaims" and e.verb in ("create", "delete") else "operator"
    if "lab-test-helper" in e.user_agent:
        return "helper"
    if "lab-controller-manager" in e.user_agent:
        return "garbage collector"
    if e.resource in ("jobs", "pods") and e.subresource != "eviction":
        return "executor"
    if e.resource == "leases" or (e.resource == "nodes" and e.group == ""):
        cordon = bool(dig(obj, "spec", "unschedulable")) != bool(dig(prev, "spec", "unschedulable"))
        return "job pod (playbook)" if cordon and e.subresource == "" else "kubelet"
    if e.subresource == "eviction":
        return "job pod (playbook)"
    return "other"


def slot_of(e: Any, obj: dict | None, claim_slot: dict[str, str], slots: set[str]) -> str | None:
    name = e.name or dig(obj, "metadata", "name", default="")
    if e.resource == "nodeclaims":
        return dig(obj, "spec", "slotRef") or claim_slot.get(name)
    if e.resource in ("nodes", "leases"):
        return name if name in slots else None
    if e.resource in ("jobs", "pods"):
        return dig(obj, "metadata", "labels", names.LABEL_SLOT)
    if e.resource == "events":
        return claim_slot.get(dig(obj, "involvedObject", "name", default=""))
    return None


def _claim_label(e: Any, obj: dict | None, prev: dict | None) -> str:
    if e.subresource == "status":
        before, after = dig(prev, "status", default={}) or {}, dig(obj, "status", default={}) or {}
        if after.get("phase") != before.get("phase"):
            return "claim seed" if not before.get("attempt") and after.get("attempt") else f"claim {after.get('phase')}"
        if after.get("shutdownAttempts") != before.get("shutdownAttempts"):
            return "claim shutdownAttempts"
        return "claim status other"
    if obj is not None and obj.get(DELETED):
        return "claim finalizer release"  # the last finalizer went: the object was deleted by this write
    fin_before = set(dig(prev, "metadata", "finalizers", default=[]) or [])
    fin_after = set(dig(obj, "metadata", "finalizers", default=[]) or [])
    if fin_after - fin_before:
        return "claim finalizer add"
    if fin_before - fin_after:
        return "claim finalizer release"
    if dig(prev, "spec", "deadlineAt") and not dig(obj, "spec", "deadlineAt"):
        return "claim deadline clear"
    return "claim spec other"


def label_of(e: Any, obj: dict | None, prev: dict | None) -> str:
    if OPERATOR_UA not in e.user_agent:
        return f"{_resource(e)} {e.verb}"
    if e.resource == "nodeclaims":
        return f"claim {e.verb}" if e.verb in ("create", "delete") else _claim_label(e, obj, prev)
    if e.resource == "nodes" and e.group == names.API_GROUP:
        before, after = dig(prev, "status", default={}) or {}, dig(obj, "status", default={}) or {}
        if after.get("lastClaim") != before.get("lastClaim"):
            return "slot lastClaim"
        if after.get("phase") != before.get("phase"):
            return f"slot {after.get('phase')}"
        if after.get("powerState") != before.get("powerState"):
            return f"slot power {after.get('powerState')}"
        return "slot status other"
    if e.resource == "nodes":
        return "node cordon" if dig(obj, "spec", "unschedulable") and not dig(prev, "spec", "unschedulable") \
            else "node gate"
    if e.resource == "jobs":
        return f"{dig(obj, 'metadata', 'labels', names.LABEL_JOB_KIND, default='?')} Job {e.verb}"
    return f"{e.resource} {e.verb}"


def attribute(rec: Recording) -> list[Write]:
    """Every successful write, with its writer, its slot, the object it produced and the one before."""
    slots = set(rec.slots)
    claim_slot: dict[str, str] = {}
    last_by_key: dict[tuple[str, str, str], dict] = {}
    out = []
    for e in sorted(rec.writes, key=lambda x: (x.time, int(x.rv) if x.rv.isdigit() else 0)):
        obj = rec.objects.get(e.rv)
        name = e.name or dig(obj, "metadata", "name", default="")
        key = (e.resource, e.group, name)
        prev = last_by_key.get(key)
        if obj is not None:
            last_by_key[key] = obj
        if e.resource == "nodeclaims" and dig(obj, "spec", "slotRef"):
            claim_slot[name] = obj["spec"]["slotRef"]
        what = f"{_resource(e)} {e.verb}"
        out.append(Write(e.time, writer_of(e, obj, prev), what, label_of(e, obj, prev),
                         slot_of(e, obj, claim_slot, slots), obj, prev, getattr(e, "done", None)))
    return out


# ---- events and latencies (pure) -------------------------------------------------------------------------
def _node_facts(node: dict | None) -> tuple:
    if node is None:
        return (False,)
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in dig(node, "status", "conditions", default=[]) or [])
    # the node lifecycle controller's own taints (node.kubernetes.io/not-ready, unreachable, ...) are not read
    taints = tuple(sorted(t.get("key", "") for t in dig(node, "spec", "taints", default=[]) or []
                          if not t.get("key", "").startswith("node.kubernetes.io/")))
    return (True, ready, taints, bool(dig(node, "spec", "unschedulable")), bool(dig(node, "spec", "providerID")))


def _job_outcome(job: dict | None) -> str:
    for c in dig(job, "status", "conditions", default=[]) or []:
        if c.get("status") == "True" and c.get("type") in ("Complete", "Failed"):
            return c["type"]
    return "running"


def is_event(w: Write) -> bool:
    """A write that changes a fact the controller reads (see the module docstring)."""
    if w.what.startswith(("nodeclaims", "slots")):
        return True
    if w.what.startswith("corev1 nodes"):
        return _node_facts(w.obj) != _node_facts(w.prev)
    if w.what.startswith("jobs"):
        return w.prev is None or _job_outcome(w.obj) != _job_outcome(w.prev)
    return False


def usable(node: dict | None) -> bool:
    facts = _node_facts(node)
    return len(facts) > 1 and facts[1] and topology.READINESS_TAINT not in facts[2] and not facts[3]


def step_causes(writes: list[Write], since: float = 0.0) -> list[tuple[float, Write, Write]]:
    """(seconds since the latest preceding event on the slot's dependencies, the operator write, that event),
    for the writes at or after `since` (the lab's own start-up, before the operator ran, is not a reaction)."""
    latest: dict[str, Write] = {}
    out = []
    for w in writes:
        if w.slot is None:
            continue
        if w.writer == "operator" and w.slot in latest and w.time >= since:
            out.append((w.time - latest[w.slot].time, w, latest[w.slot]))
        if is_event(w) or w.writer == "operator":
            latest[w.slot] = w
    return out


def step_latencies(writes: list[Write], since: float = 0.0) -> list[tuple[float, Write]]:
    """step_causes without the causes."""
    return [(dt, w) for dt, w, _ in step_causes(writes, since)]


def transition_latencies(writes: list[Write]) -> dict[str, list[float]]:
    """The latencies from an outside cause, per transition (see the module docstring)."""
    by_slot: dict[str, list[Write]] = defaultdict(list)
    for w in writes:
        if w.slot is not None:
            by_slot[w.slot].append(w)
    out: dict[str, list[float]] = defaultdict(list)
    for seq in by_slot.values():
        created = next((w.time for w in seq if w.label == "claim create"), None)
        deleted = next((w.time for w in seq if w.label == "claim delete"), None)
        usable_at = next((w.time for w in seq if w.what.startswith("corev1 nodes") and usable(w.obj)), None)
        for w in seq:
            if w.writer != "operator":
                continue
            if created is not None and w.label in ("claim seed", "claim booting") and \
                    (deleted is None or w.time < deleted):
                out[f"{w.label.split()[1]} <- claim created"].append(w.time - created)
            if w.label == "claim ready" and usable_at is not None:
                out["ready <- Node usable"].append(w.time - usable_at)
        if deleted is not None:
            first = next((w for w in seq if w.writer == "operator" and w.time > deleted), None)
            if first is not None:
                out[f"release ({first.label}) <- claim deleted"].append(first.time - deleted)
            done = next((w for w in seq if w.label == "claim completed"), None)
            if done is not None:
                off = [w.time for w in seq if deleted < w.time < done.time and w.what.startswith("corev1 nodes")
                       and _node_facts(w.obj)[1:2] == (False,)]
                ended = [w.time for w in seq if deleted < w.time < done.time and w.what.startswith("jobs")
                         and _job_outcome(w.obj) != "running" and _job_outcome(w.prev) == "running"]
                if off and ended:
                    out["completed <- Node off + shutdown Job ended"].append(done.time - max(off[0], ended[-1]))
    return out
