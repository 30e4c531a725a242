"""The request log: every request the server answered, reads included, for tests and benchmarks.

Benchmarks count the requests a component causes (e.g. "list+watch only, no GET per RPC"); tests assert
which writes happened and in what order. `writes()` is the audit log proper.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class AuditEntry:
    verb: str  # get list watch create update patch delete deletecollection (discovery requests: "discovery")
    resource: str  # plural ("" for discovery)
    group: str
    namespace: str
    name: str
    subresource: str
    user_agent: str
    time: float  # time.time() when the server began handling the request (a watch: when it started)
    code: int
    rv: str  # the object's resourceVersion after a write, or the list's resourceVersion; "" otherwise
    dry_run: bool = False
    field_selector: str = ""  # a list's or watch's fieldSelector, as the client sent it

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS


class AuditLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: list[AuditEntry] = []

    def record(self, entry: AuditEntry) -> None:
        with self._lock:
            self.entries.append(entry)

    def clear(self) -> None:
        with self._lock:
            self.entries.clear()

    def writes(self, resource: str | None = None, *, include_dry_run: bool = False) -> list[AuditEntry]:
        """Writes that reached the store (or were refused): dry runs are left out unless asked for."""
        return [e for e in self.select(resource) if e.is_write and (include_dry_run or not e.dry_run)]

    def select(self, resource: str | None = None, verbs: Iterable[str] | None = None,
               user_agent: str | None = None) -> list[AuditEntry]:
        """Entries filtered by plural, verbs and a user-agent substring."""
        verbs = set(verbs) if verbs is not None else None
        with self._lock:
            entries = list(self.entries)
        return [e for e in entries
                if (resource is None or e.resource == resource)
                and (verbs is None or e.verb in verbs)
                and (user_agent is None or user_agent in e.user_agent)]

    def count(self, resource: str | None = None, verbs: Iterable[str] | None = None,
              user_agent: str | None = None) -> int:
        return len(self.select(resource, verbs, user_agent))
