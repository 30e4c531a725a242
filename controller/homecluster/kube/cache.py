"""The provider's in-memory view of the pool: Groups, slots, NodeClaims and corev1 Nodes.

Why: cluster-autoscaler calls the read RPCs many times per loop (GetOptions once per option per
use, NodeGroupForNode for every node it looks at) and expects answers well inside its 5 s
grpc_timeout, so a read RPC must never call the API server. The cache is fed by upsert/delete
calls -- from kopf watch events in the operator, or from the lab's watches
(homecluster_lab.provider.watch) in the lab and tests -- and reads only look at memory.

Objects are stored as the dicts the API returns (camelCase). Indexes kept on every change:
slots by group (spec.groupRef), claims by slot (spec.slotRef), corev1 Nodes by spec.providerID
and by name.

Thread-safe: one re-entrant lock guards every change and every read that needs a consistent
view (`with cache.lock:`). `version` increases on every change the provider's answers depend on
(every change, except corev1 Node updates that keep the node's providerID and labels), so derived answers
can be memoized against it. `synced` says, per kind, whether a full list has been loaded; the
provider answers nothing before all four are synced.

A kind is named by its kube.client Resource (GROUPS, SLOTS, CLAIMS, NODES, re-exported here), the same name the
client lists and patches with; its key ("claims") names it too, for the tests and the lab.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from homecluster.kube.client import CLAIMS, GROUPS, NODES, SLOTS, Resource
from homecluster.model.objects import dig
from homecluster.model.objects import required_name as _name
from homecluster.model.objects import spec_text as _spec

Obj = Mapping[str, Any]
Kind = Resource | str  # a Resource, or its key

KINDS = (GROUPS, SLOTS, CLAIMS, NODES)
__all__ = ["CLAIMS", "GROUPS", "KINDS", "NODES", "SLOTS", "Cache", "Kind", "Obj", "key_of"]


_KEYS = frozenset(k.key for k in KINDS)


def key_of(kind: Kind) -> str:
    """The key a kind is filed under: a Resource's own, or the key itself."""
    return kind.key if isinstance(kind, Resource) else kind


def _key(kind: Kind) -> str:
    """The key of the cached kind named; a clear error for any other (Jobs live in kube.store, not here)."""
    key = key_of(kind)
    if key not in _KEYS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(sorted(_KEYS))}")
    return key


def _node_identity_changed(old: Obj, new: Obj) -> bool:
    """Whether a corev1 Node update changes what the provider reads of it: its providerID, and its labels (the slot
    boundary reads the control-plane labels and --managed-node-selector). Status heartbeats, the bulk of Node
    updates, change neither, so they do not invalidate derived answers."""
    return (_spec(old, "providerID") != _spec(new, "providerID")
            or _labels(old) != _labels(new))


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


class Cache:
    """Thread-safe store of the four kinds with the indexes the provider reads."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.version = 0
        self._objects: dict[str, dict[str, Obj]] = {kind.key: {} for kind in KINDS}
        self._synced: dict[str, bool] = {kind.key: False for kind in KINDS}
        self._slots_by_group: dict[str, set[str]] = defaultdict(set)
        self._claims_by_slot: dict[str, set[str]] = defaultdict(set)
        self._nodes_by_provider_id: dict[str, set[str]] = defaultdict(set)
        self._sync_listeners: list[Callable[[bool], None]] = []
        # --managed-node-selector (a model.boundary.NodeSelector; None: any Node but a control-plane one):
        # read by the operator's store and by the provider's node -> slot resolution alike
        self.managed_node_selector: Any = None

    # ---- writes -------------------------------------------------------------------------
    def upsert(self, kind: Kind, obj: Obj) -> None:
        """Insert or replace one object (a watch ADDED/MODIFIED event, or our own write's result)."""
        kind, name = _key(kind), _name(obj)
        with self.lock:
            old = self._objects[kind].get(name)
            self._unindex(kind, name)
            self._objects[kind][name] = obj
            self._index(kind, name, obj)
            if not (kind == NODES.key and old is not None and not _node_identity_changed(old, obj)):
                self.version += 1

    def delete(self, kind: Kind, name: str) -> None:
        """Forget one object (a watch DELETED event). Unknown names are ignored."""
        kind = _key(kind)
        with self.lock:
            if name in self._objects[kind]:
                self._unindex(kind, name)
                del self._objects[kind][name]
                self.version += 1

    def replace(self, kind: Kind, objects: Iterable[Obj], *, synced: bool = True) -> None:
        """Replace every object of a kind (a full list), then mark the kind synced."""
        kind = _key(kind)
        items = [(_name(o), o) for o in objects]
        with self.lock:
            for name in list(self._objects[kind]):
                self._unindex(kind, name)
            self._objects[kind] = {}
            for name, obj in items:
                self._objects[kind][name] = obj
                self._index(kind, name, obj)
            self.version += 1
        self.set_synced(kind, synced)

    def set_synced(self, kind: Kind, synced: bool = True) -> None:
        """Mark a kind as fully listed (or not); listeners hear when the whole cache flips."""
        kind = _key(kind)
        with self.lock:
            before = self.synced
            self._synced[kind] = synced
            after = self.synced
            listeners = list(self._sync_listeners) if before != after else []
        for listener in listeners:
            listener(after)

    def on_synced_change(self, listener: Callable[[bool], None]) -> None:
        """Call listener(synced) whenever `synced` (all kinds) flips. May be called from any thread."""
        with self.lock:
            self._sync_listeners.append(listener)

    # ---- reads --------------------------------------------------------------------------
    @property
    def synced(self) -> bool:
        return all(self._synced.values())

    def synced_kinds(self) -> dict[str, bool]:
        """Key ("claims") -> whether that kind is fully listed."""
        with self.lock:
            return dict(self._synced)

    def get(self, kind: Kind, name: str) -> Obj | None:
        return self._objects[_key(kind)].get(name)

    def all(self, kind: Kind) -> list[Obj]:
        kind = _key(kind)
        with self.lock:
            return list(self._objects[kind].values())

    def group_names(self) -> list[str]:
        with self.lock:
            return sorted(self._objects[GROUPS.key])

    def slots_of_group(self, group: str) -> list[Obj]:
        """The group's slots, sorted by name (deterministic answers)."""
        with self.lock:
            return [self._objects[SLOTS.key][n] for n in sorted(self._slots_by_group.get(group, ()))]

    def claims_of_slot(self, slot: str) -> list[Obj]:
        with self.lock:
            return [self._objects[CLAIMS.key][n] for n in sorted(self._claims_by_slot.get(slot, ()))]

    def node_by_provider_id(self, provider_id: str) -> Obj | None:
        """The corev1 Node that says this providerID. Of two that do (a machine reinstalled under a new name, its
        old Node not deleted yet), the one created last (then the last by name); deleting it leaves the other."""
        with self.lock:
            names = self._nodes_by_provider_id.get(provider_id)
            if not names:
                return None
            nodes = self._objects[NODES.key]
            return nodes[max(names, key=lambda n: (str(dig(nodes[n], "metadata", "creationTimestamp") or ""), n))]

    def node_by_name(self, name: str) -> Obj | None:
        return self._objects[NODES.key].get(name)

    # ---- indexes ------------------------------------------------------------------------
    def _index(self, kind: str, name: str, obj: Obj) -> None:
        if kind == SLOTS.key:
            group = _spec(obj, "groupRef")
            if group:
                self._slots_by_group[group].add(name)
        elif kind == CLAIMS.key:
            slot = _spec(obj, "slotRef")
            if slot:
                self._claims_by_slot[slot].add(name)
        elif kind == NODES.key:
            provider_id = _spec(obj, "providerID")
            if provider_id:
                self._nodes_by_provider_id[provider_id].add(name)

    def _unindex(self, kind: str, name: str) -> None:
        old = self._objects[kind].get(name)
        if old is None:
            return
        if kind == SLOTS.key:
            group = _spec(old, "groupRef")
            self._slots_by_group.get(group, set()).discard(name)
        elif kind == CLAIMS.key:
            self._claims_by_slot.get(_spec(old, "slotRef"), set()).discard(name)
        elif kind == NODES.key:
            provider_id = _spec(old, "providerID")
            names = self._nodes_by_provider_id.get(provider_id)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._nodes_by_provider_id[provider_id]
