"""What the GitOps tests (test_k8s_gitops.py) measure on a lab whose pool the real Flux owns.

- `PowerWatch`: samples every machine's power and the slot's claims; a flap is a machine turned off while
  a claim of its slot is live and not being deleted, or turned on while its slot has no claim at all
  (the predecessor's Argo CD fight, seen from the machines);
- `flux_applies(log)`: kustomize-controller's "server-side apply completed" lines (one per reconcile that
  applied): the reconciles, and each object's action ("unchanged", "configured", "created");
- `spec_writes(events, user)`: the writes of one identity to our slots' or Groups' main resource (not
  /status) in the audit log;
- `ownership_findings(obj)`: managedFields entries that break "Flux owns spec, the operator status only" (and the
  slot's finalizer, metadata.finalizers alone).
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLUX_MANAGER = "kustomize-controller"
LIVE = ("pending", "booting", "ready")
OUR_KINDS = ("nodes", "groups")  # infra.homecluster.dev resources Git owns


@dataclass
class PowerWatch:
    slots: list[str]
    power: Callable[[str], str]
    claims: Callable[[], list[dict[str, Any]]]
    interval: float = 0.1
    transitions: list[tuple[float, str, str]] = field(default_factory=list)
    flaps: list[str] = field(default_factory=list)
    _task: asyncio.Task | None = None

    def _claims_of(self, slot: str) -> list[dict[str, Any]]:
        return [c for c in self.claims() if c["spec"].get("slotRef") == slot]

    def _step(self, last: dict[str, str]) -> None:
        for slot in self.slots:
            now = self.power(slot)
            if now == last.get(slot):
                continue
            claims = self._claims_of(slot)
            self.transitions.append((time.monotonic(), slot, now))
            if slot in last and now == "off":
                held = [c["metadata"]["name"] for c in claims if (c.get("status") or {}).get("phase") in LIVE
                        and not c["metadata"].get("deletionTimestamp")]
                if held:
                    self.flaps.append(f"{slot} turned off while claim {held} held it")
            if slot in last and now == "on" and not claims:
                self.flaps.append(f"{slot} turned on with no claim for it")
            last[slot] = now

    async def _run(self) -> None:
        last: dict[str, str] = {}
        while True:
            self._step(last)
            await asyncio.sleep(self.interval)

    def __enter__(self) -> "PowerWatch":
        self._task = asyncio.create_task(self._run(), name="power watch")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def flux_applies(log: Path, since_line: int = 0) -> list[dict[str, Any]]:
    """The "server-side apply completed" records of kustomize-controller's JSON log, from line `since_line`."""
    out = []
    for line in log.read_text(errors="replace").splitlines()[since_line:]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("msg") == "server-side apply completed":
            out.append(record)
    return out


def changed(applies: list[dict[str, Any]], names: set[str]) -> list[str]:
    """Each action other than "unchanged" on one of our objects (`Kind/name` ending in a name of `names`)."""
    return [f"{key}: {action} at {record.get('revision')}" for record in applies
            for key, action in (record.get("output") or {}).items()
            if key.rsplit("/", 1)[-1] in names and action != "unchanged"]


def log_lines(path: Path) -> int:
    return len(path.read_text(errors="replace").splitlines()) if path.exists() else 0


def spec_writes(events: list[Any], user: str) -> list[str]:
    """Writes by `user` to the main resource (not a subresource) of our slots and Groups."""
    return [f"{e.verb} {e.uri} ({e.code})" for e in events
            if e.user == user and e.group == "infra.homecluster.dev" and e.resource in OUR_KINDS
            and not e.subresource and e.verb in ("create", "update", "patch", "delete")]


def finalizers_only(fields: dict[str, Any]) -> bool:
    """A managedFields entry that owns metadata.finalizers and nothing else (the operator's slot finalizer)."""
    return set(fields) == {"f:metadata"} and set(fields["f:metadata"]) == {"f:finalizers"}


def ownership_findings(obj: dict[str, Any]) -> list[str]:
    """Flux's field manager owns every spec field; every other manager writes through /status only, but for
    metadata.finalizers (the operator's slot finalizer, lifecycle/slotremoval.py)."""
    name = f"{obj['kind']}/{obj['metadata']['name']}"
    findings = []
    for entry in obj["metadata"].get("managedFields") or []:
        manager, fields = entry.get("manager"), entry.get("fieldsV1") or {}
        if manager == FLUX_MANAGER:
            if entry.get("subresource"):
                findings.append(f"{name}: Flux wrote /{entry['subresource']}")
            continue
        if "f:spec" in fields:
            findings.append(f"{name}: {manager} ({entry.get('operation')}) owns spec fields {sorted(fields['f:spec'])}")
        if entry.get("subresource") != "status" and not finalizers_only(fields):
            findings.append(f"{name}: {manager} ({entry.get('operation')}) wrote the main resource: {sorted(fields)}")
    if not any(e.get("manager") == FLUX_MANAGER and "f:spec" in (e.get("fieldsV1") or {})
               for e in obj["metadata"].get("managedFields") or []):
        findings.append(f"{name}: Flux owns no spec field")
    return findings
