"""The real kube-apiserver's audit log, read into what the benchmarks read from the in-memory server's.

The in-memory API server hands the benchmarks its request log (homecluster_lab.apiserver.audit.AuditEntry)
and they look the object each write produced up by its resourceVersion. On the real control plane the same
facts come from the audit log (JSON lines, one ResponseComplete event per request):
- `user.username`, `userAgent`, `verb`, `objectRef` (resource, apiGroup, namespace, name, subresource),
  `responseStatus.code`, `requestReceivedTimestamp` (the entry's time, as on the in-memory server: when the
  server began handling the request) and `stageTimestamp` (when it answered: `done`);
- the object a write produced: `responseObject`, present because the benchmark's audit policy (POLICY) logs
  the writes of the kinds it attributes at level RequestResponse. Its resourceVersion is the entry's `rv`.

Pure: lines in, records out. `writer_by_user` names the writer from the authenticated user, which the real
control plane has and the in-memory one does not (there the user agent and the resource tell).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Iterable

from homecluster_lab.k8s.flags import AUDIT_POLICY

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})

# The lab's audit policy (flags.AUDIT_POLICY) with the responses of writes to the kinds the benchmarks
# attribute (claims, slots, Nodes, Jobs, Pods, Events). Never Secrets, ServiceAccount tokens or anything
# else that carries a credential: those stay at Metadata, as everything else does.
_RESPONSES = """\
  - level: RequestResponse
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: "infra.homecluster.dev"
        resources: ["nodeclaims", "nodeclaims/status", "nodes", "nodes/status"]
      - group: ""
        resources: ["nodes", "nodes/status", "pods", "pods/status", "events"]
      - group: "batch"
        resources: ["jobs", "jobs/status"]
"""
_CATCH_ALL = "  - level: Metadata\n"
assert AUDIT_POLICY.endswith(_CATCH_ALL), "flags.AUDIT_POLICY no longer ends with its Metadata rule"
POLICY = AUDIT_POLICY[: -len(_CATCH_ALL)] + _RESPONSES + _CATCH_ALL


@dataclass(frozen=True)
class AuditWrite:
    """One answered write, with the fields of the in-memory server's AuditEntry plus who and when done."""

    verb: str
    resource: str
    group: str
    namespace: str
    name: str
    subresource: str
    user_agent: str
    time: float  # requestReceivedTimestamp, seconds since the epoch
    code: int
    rv: str  # the produced object's resourceVersion ("" when the response carries none)
    user: str = ""
    done: float | None = None  # stageTimestamp of ResponseComplete: time - done is the server's own time

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS


def timestamp(text: str) -> float:
    """RFC 3339 with microseconds, as kube-apiserver writes it ("2026-12-01T21:51:27.123456Z")."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def parse_line(line: str) -> tuple[AuditWrite, dict | None] | None:
    """(the write, the object it produced or None), or None for anything that is not an answered write on a
    resource (reads, non-resource URLs, other stages, blank or cut lines)."""
    line = line.strip()
    if not line:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None  # the last line of a log still being written
    if not isinstance(event, dict) or event.get("stage") != "ResponseComplete":
        return None
    verb, ref = event.get("verb"), event.get("objectRef")
    if verb not in WRITE_VERBS or not isinstance(ref, dict) or not ref.get("resource"):
        return None
    response = event.get("responseObject")
    obj = response if isinstance(response, dict) and response.get("kind") not in (None, "Status") else None
    rv = str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")
    write = AuditWrite(
        verb=verb, resource=ref["resource"], group=ref.get("apiGroup") or "", namespace=ref.get("namespace") or "",
        name=ref.get("name") or "", subresource=ref.get("subresource") or "",
        user_agent=event.get("userAgent") or "", time=timestamp(event["requestReceivedTimestamp"]),
        code=int((event.get("responseStatus") or {}).get("code") or 0), rv=rv,
        user=(event.get("user") or {}).get("username") or "",
        done=timestamp(event["stageTimestamp"]) if event.get("stageTimestamp") else None)
    return write, obj


def read(lines: Iterable[str]) -> tuple[list[AuditWrite], dict[str, dict]]:
    """Every answered write and the objects they produced by resourceVersion (what the in-memory benchmark
    gets from its audit log and its watches)."""
    writes: list[AuditWrite] = []
    objects: dict[str, dict] = {}
    for line in lines:
        parsed = parse_line(line)
        if parsed is None:
            continue
        write, obj = parsed
        if obj is not None and write.rv:
            if write.rv in objects:
                # kube-apiserver answers the patch that removes an object's last finalizer with the object
                # at the resourceVersion it had before (the deletion's own is not returned): keep both
                write = replace(write, rv=f"{write.rv}+{sum(1 for k in objects if k.startswith(write.rv + '+')) + 1}")
            objects[write.rv] = obj
        writes.append(write)
    return writes, objects


def writer_by_user(user: str, operator_account: str, job_account: str, runner: str, cni_user: str) -> str | None:
    """The writer's name from the authenticated user, or None to fall back on the user agent."""
    if not user:
        return None
    if user.startswith("system:serviceaccount:"):
        account = user.rsplit(":", 1)[1]
        if account == operator_account:
            return None  # the operator and its provider share a client: the user agent and the verb tell
        if account == job_account:
            return "job pod (playbook)"
        if user.startswith("system:serviceaccount:kube-system:"):
            return account  # job-controller, ttl-after-finished-controller, generic-garbage-collector, ...
        return f"serviceaccount {account}"
    if user == f"system:node:{runner}":
        return "runner kubelet"
    if user.startswith("system:node:"):
        return "kubelet"
    if user == cni_user:
        return "cni (readiness taint)"
    if user == "system:kube-scheduler":
        return "scheduler"
    if user.startswith("system:kube-controller-manager"):
        return "controller manager"
    if user.startswith("system:apiserver") or user == "system:kube-apiserver":
        return "api server"
    return "lab (admin)"
