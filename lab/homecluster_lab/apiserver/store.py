"""The object store: one monotonic resourceVersion counter, a bounded event history, and watchers.

Single-threaded by design: it is only touched from the server's event loop, so a write is atomic between
awaits and watchers see events in resourceVersion order. The history plays the role of etcd's watch window:
a watch from a resourceVersion older than the oldest kept event gets 410 Gone, as after a compaction.
"""
from __future__ import annotations

import asyncio
import copy
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterator

from .resources import Key

ObjKey = tuple[str, str]  # (namespace or "", name)


@dataclass
class Event:
    rv: int
    key: Key
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]
    old: dict[str, Any] | None


@dataclass(eq=False)
class Watcher:
    """One watch stream's subscription: the store appends the events it wants, the stream takes them.

    A deque plus a wake-up Event rather than an asyncio.Queue: the stream takes everything pending at once
    with `take()` (no await, so nothing taken can be dropped by a timeout or a cancellation racing a
    `get()`), and waits on `wakeup` only when nothing is pending -- a missed wake-up costs one poll, never an
    event. The backlog is bounded: a stream that falls `max_backlog` events behind is marked `overflowed` and
    must end (as the real server ends a watch whose buffer fills); its client resumes from the last
    resourceVersion it was sent, from the history.
    """
    key: Key
    namespace: str | None
    max_backlog: int = 100000
    pending: deque[Event] = field(default_factory=deque)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False
    overflowed: bool = False

    def wants(self, event: Event) -> bool:
        if event.key != self.key:
            return False
        if self.namespace is None:
            return True
        return (event.obj.get("metadata") or {}).get("namespace") == self.namespace

    def offer(self, event: Event) -> None:
        """Called by the store for every event this watcher wants, in resourceVersion order."""
        if self.closed or self.overflowed:
            return
        if len(self.pending) >= self.max_backlog:
            self.overflowed = True
            self.pending.clear()  # the stream ends; nothing after its last sent resourceVersion may be skipped
        else:
            self.pending.append(event)
        self.wakeup.set()

    def take(self, limit: int = 1000) -> list[Event]:
        """Up to `limit` pending events, oldest first, removed from the backlog."""
        n = min(limit, len(self.pending))
        return [self.pending.popleft() for _ in range(n)]

    def close(self) -> None:
        self.closed = True
        self.pending.clear()
        self.wakeup.set()


class TooOld(Exception):
    def __init__(self, requested: int, oldest: int):
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested, self.oldest = requested, oldest


class Store:
    def __init__(self, history_limit: int = 10000):
        self.rv = 0
        self._objects: dict[Key, dict[ObjKey, dict[str, Any]]] = {}
        self._uids: dict[str, tuple[Key, ObjKey]] = {}
        self.history: deque[Event] = deque(maxlen=history_limit)
        self._compacted_at = 0  # events with rv <= this are no longer in the history
        self.watchers: set[Watcher] = set()

    # reads -----------------------------------------------------------------------------------------------
    def get(self, key: Key, namespace: str, name: str) -> dict[str, Any] | None:
        obj = self._objects.get(key, {}).get((namespace or "", name))
        return copy.deepcopy(obj) if obj is not None else None

    def list(self, key: Key, namespace: str | None = None) -> list[dict[str, Any]]:
        objs = self._objects.get(key, {})
        out = [copy.deepcopy(o) for (ns, _), o in sorted(objs.items()) if namespace is None or ns == namespace]
        return out

    def peek_kind(self, key: Key) -> list[dict[str, Any]]:
        """The stored objects of one kind, not copied (callers must not mutate): for scans that only read, such as
        the lab controller's five passes a second, where a copy of every CRD each time was most of their cost."""
        return list(self._objects.get(key, {}).values())

    def iter_all(self) -> Iterator[tuple[Key, dict[str, Any]]]:
        """Every stored object (not copied: callers must not mutate)."""
        for key, objs in list(self._objects.items()):
            for obj in list(objs.values()):
                yield key, obj

    def by_uid(self, uid: str) -> tuple[Key, dict[str, Any]] | None:
        where = self._uids.get(uid)
        if where is None:
            return None
        obj = self._objects.get(where[0], {}).get(where[1])
        return (where[0], obj) if obj is not None else None

    def count(self, key: Key) -> int:
        return len(self._objects.get(key, {}))

    # writes ----------------------------------------------------------------------------------------------
    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def put(self, key: Key, obj: dict[str, Any]) -> dict[str, Any]:
        """Store obj under a new resourceVersion (ADDED or MODIFIED); returns a copy of what is stored."""
        meta = obj["metadata"]
        okey = (meta.get("namespace") or "", meta["name"])
        old = self._objects.get(key, {}).get(okey)
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        stored = copy.deepcopy(obj)
        self._objects.setdefault(key, {})[okey] = stored
        self._uids[meta["uid"]] = (key, okey)
        self._emit(Event(rv, key, "MODIFIED" if old is not None else "ADDED", stored, old))
        return copy.deepcopy(stored)

    def remove(self, key: Key, namespace: str, name: str) -> dict[str, Any] | None:
        okey = (namespace or "", name)
        old = self._objects.get(key, {}).pop(okey, None)
        if old is None:
            return None
        self._uids.pop(old["metadata"].get("uid", ""), None)
        rv = self.next_rv()
        final = copy.deepcopy(old)
        final["metadata"]["resourceVersion"] = str(rv)
        self._emit(Event(rv, key, "DELETED", final, old))
        return copy.deepcopy(final)

    def drop_resource(self, key: Key) -> None:
        for (ns, name) in list(self._objects.get(key, {})):
            self.remove(key, ns, name)
        self._objects.pop(key, None)

    # watch -----------------------------------------------------------------------------------------------
    def _emit(self, event: Event) -> None:
        if self.history.maxlen is not None and len(self.history) == self.history.maxlen:
            self._compacted_at = self.history[0].rv
        self.history.append(event)
        for w in list(self.watchers):
            if w.wants(event):
                w.offer(event)

    def compact(self) -> None:
        """Forget the event history (as etcd compaction does): older resourceVersions now answer 410."""
        self.history.clear()
        self._compacted_at = self.rv

    def events_since(self, key: Key, rv: int) -> list[Event]:
        if rv < self._compacted_at:
            raise TooOld(rv, self._compacted_at + 1)
        return [e for e in self.history if e.rv > rv and e.key == key]

    def subscribe(self, key: Key, namespace: str | None) -> Watcher:
        # A stream further behind than the history is long could not resume from it anyway (410 Gone).
        w = Watcher(key, namespace, max_backlog=max(self.history.maxlen or 0, 1000))
        self.watchers.add(w)
        return w

    def unsubscribe(self, w: Watcher) -> None:
        w.close()
        self.watchers.discard(w)
