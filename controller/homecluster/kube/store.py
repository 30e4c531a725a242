"""The operator's view of the cluster: the provider's Cache plus the lifecycle Jobs, fed by events and writes.

One cache serves the claim controller, the webhook and the autoscaler provider, so all three read
the same world. This wrapper adds what only the operator needs:

- Jobs (the provider never reads them), indexed by the slot label the Job builders put on them;
- ordering: a watch event older than what we hold is ignored (resourceVersions compared as numbers
  when both are numeric), so our own write's result -- stored at once, write-through -- is never
  replaced by the stale event that a watch delivers late. A deleted object leaves a tombstone so a
  late ADDED/MODIFIED of it does not resurrect it;
- a full list of a kind (the controller's poll) drops what it shows gone, whose DELETED event fell between
  two watch streams and never came (`forget_unlisted`);
- the mapping from any object to the slot whose pass it concerns.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from homecluster import names
from homecluster.jobs import names_slot
from homecluster.kube.cache import CLAIMS, GROUPS, NODES, SLOTS, Cache, Kind, key_of
from homecluster.kube.client import JOBS
from homecluster.kube.leases import Leases
from homecluster.model.boundary import NodeSelector, Refusal, control_plane_role, slot_node_name, slot_provider_id
from homecluster.model.identity import candidates, claimants, resolved_node, slot_refusal

KINDS = (GROUPS, SLOTS, CLAIMS, NODES, JOBS)  # kube.client's Resources; the store files each under its key
Obj = Mapping[str, Any]


def _meta(obj: Obj, key: str) -> str:
    return str((obj.get("metadata") or {}).get(key) or "")


def newer_or_same(held: str, incoming: str) -> bool:
    """True when `held` is at least as new as `incoming` (so `incoming` should be ignored).

    resourceVersions are opaque strings by contract; every real server (etcd) and the lab use
    integers, so we compare numerically when both are numeric and otherwise never ignore.
    """
    if held.isdigit() and incoming.isdigit():
        return int(held) >= int(incoming)
    return False


# how many deletions the store remembers (a tombstone: kind, name, resourceVersion) so an event older than one
# does not bring the object back; the oldest is forgotten first. Claims and Jobs get new names, so without a
# bound every claim and Job ever deleted stayed in memory; a stale event comes seconds late, not 10,000 deletions
MAX_TOMBSTONES = 10_000


class Store:
    """Thread-safe. `cache` is the provider's Cache (four kinds); Jobs live here."""

    def __init__(self, cache: Cache | None = None, managed_node_selector: NodeSelector | None = None) -> None:
        self.cache = cache or Cache()
        if managed_node_selector is not None:
            self.managed_node_selector = managed_node_selector
        self._lock = threading.RLock()
        self._jobs: dict[str, Obj] = {}
        self._tombstones: dict[tuple[str, str], str] = {}
        self._synced_jobs = False
        # the kubelets' Leases (kube-node-lease): liveness only, never a pass of their own (lifecycle.facts)
        self.leases = Leases()

    @property
    def managed_node_selector(self) -> NodeSelector | None:
        """A Node must match it before the operator (and the provider: it lives on the shared cache) treats it
        as a slot's machine (model.boundary); None: any Node but a control-plane one."""
        return self.cache.managed_node_selector

    @managed_node_selector.setter
    def managed_node_selector(self, selector: NodeSelector | None) -> None:
        self.cache.managed_node_selector = selector

    # ---- feeding ----------------------------------------------------------------------
    def _held(self, kind: str, name: str) -> Obj | None:
        return self._jobs.get(name) if kind == JOBS.key else self.cache.get(kind, name)

    def apply(self, kind: Kind, obj: Obj, deleted: bool = False) -> bool:
        """Apply one watch event or write result; False when it was older than what we hold."""
        kind, name, rv = key_of(kind), _meta(obj, "name"), _meta(obj, "resourceVersion")
        if not name:
            return False
        with self._lock:
            held = self._held(kind, name)
            if held is not None and rv and newer_or_same(_meta(held, "resourceVersion"), rv) and not deleted:
                return False
            stone = self._tombstones.get((kind, name))
            if held is None and stone and rv and newer_or_same(stone, rv):
                return False
            if deleted:
                if held is not None and rv and not newer_or_same(rv, _meta(held, "resourceVersion")):
                    return False  # a delete older than a newer incarnation we already hold
                self._bury(kind, name, rv)
                if kind == JOBS.key:
                    self._jobs.pop(name, None)
                else:
                    self.cache.delete(kind, name)
                return True
            self._tombstones.pop((kind, name), None)
            if kind == JOBS.key:
                self._jobs[name] = obj
            else:
                self.cache.upsert(kind, obj)
            return True

    def _bury(self, kind: str, name: str, rv: str) -> None:
        """Leave a tombstone at `rv` (the newest last), forgetting the oldest beyond MAX_TOMBSTONES."""
        self._tombstones.pop((kind, name), None)
        self._tombstones[(kind, name)] = rv
        while len(self._tombstones) > MAX_TOMBSTONES:
            del self._tombstones[next(iter(self._tombstones))]

    def holds(self, kind: Kind, obj: Obj) -> bool:
        """True when the store holds `obj`'s name at its resourceVersion or newer (an event of it is no news)."""
        rv = _meta(obj, "resourceVersion")
        with self._lock:
            held = self._held(key_of(kind), _meta(obj, "name"))
            return held is not None and bool(rv) and newer_or_same(_meta(held, "resourceVersion"), rv)

    def replace(self, kind: Kind, objects: list[Obj]) -> None:
        """A full list: replace the kind and mark it synced."""
        with self._lock:
            if key_of(kind) == JOBS.key:
                self._jobs = {_meta(o, "name"): o for o in objects}
                self._synced_jobs = True
            else:
                self.cache.replace(kind, objects)

    def forget_unlisted(self, kind: Kind, listed: Iterable[str], list_rv: str,
                        among: Iterable[str] | None = None) -> list[Obj]:
        """Drop the objects of `kind` a full list of them, taken at resourceVersion `list_rv`, shows gone; return
        them. `among`: only these names are in question (a list of one name, by field selector).

        An object held here, absent from the list and not newer than it, was deleted before the list was taken,
        though no watch event said so: kopf starts each watch with a list of its own, so an object deleted between
        two lists (the operator's first one and its watch's, or a watch's again after 410 Gone) never gets its
        DELETED event. One newer than the list (created since, and stored by our write) is kept. Each one dropped
        leaves a tombstone at `list_rv`, so no event of it from before the list brings it back. resourceVersions
        that are not numbers cannot be compared: nothing is dropped then."""
        kind, names = key_of(kind), set(listed)
        with self._lock:
            held = list(self._jobs.values()) if kind == JOBS.key else self.cache.all(kind)
            asked = None if among is None else set(among)
            gone = [o for o in held if _meta(o, "name") not in names
                    and (asked is None or _meta(o, "name") in asked)
                    and newer_or_same(list_rv, _meta(o, "resourceVersion"))]
            for obj in gone:
                name = _meta(obj, "name")
                if kind == JOBS.key:
                    self._jobs.pop(name, None)
                else:
                    self.cache.delete(kind, name)
                self._bury(kind, name, list_rv)
            return gone

    @property
    def synced(self) -> bool:
        return self._synced_jobs and self.cache.synced

    # ---- reads ------------------------------------------------------------------------
    def slot(self, name: str) -> Obj | None:
        return self.cache.get(SLOTS, name)

    def group(self, name: str) -> Obj | None:
        return self.cache.get(GROUPS, name) if name else None

    def claim(self, name: str) -> Obj | None:
        return self.cache.get(CLAIMS, name)

    def claims_of_slot(self, slot: str) -> list[Obj]:
        return self.cache.claims_of_slot(slot)

    def slots(self) -> list[Obj]:
        """Every slot we know of."""
        return self.cache.all(SLOTS)

    def never_slot_nodes(self) -> list[str]:
        """The existing Nodes the boundary never takes as a slot's machine, whatever a slot declares: a
        control-plane Node, one outside --managed-node-selector (model.boundary)."""
        with self._lock:
            selector = self.managed_node_selector
            return [_meta(n, "name") for n in self.cache.all(NODES) if control_plane_role(n) is not None
                    or (selector is not None and selector.requirements and not selector.matches(n))]

    def registered_node_names(self) -> dict[str, str]:
        """slot name -> the name of the Node found for it by providerID, where that is not the name the slot
        declares (its machine registered under another name): the Jobs avoid those Nodes too (jobs.placement)."""
        with self._lock:
            out = {}
            for slot in self.cache.all(SLOTS):
                node = self.cache.node_by_provider_id(slot_provider_id(slot))
                if node is not None and _meta(node, "name") != slot_node_name(slot):
                    out[_meta(slot, "name")] = _meta(node, "name")
            return out

    def slot_names(self) -> list[str]:
        """Every slot we know of, plus slots named by claims whose slot does not exist."""
        with self._lock:
            named = {(c.get("spec") or {}).get("slotRef") for c in self.cache.all(CLAIMS)}
            return sorted({_meta(s, "name") for s in self.cache.all(SLOTS)} | {n for n in named if n})

    def declared_node(self, slot: Obj) -> Obj | None:
        """The corev1 Node the slot finds: by its providerID, else by its node name (not yet vetted)."""
        return resolved_node(slot, self.cache)

    def node_refusal(self, slot: Obj) -> Refusal | None:
        """Why the slot's Node (or its declaration) is refused: model.boundary and model.identity (a Node an
        earlier slot resolves to is that slot's: Conflict); None when accepted."""
        with self.cache.lock:
            return slot_refusal(slot, self.cache.all(SLOTS), self.cache, self.managed_node_selector)

    def node_of_slot(self, slot: Obj) -> Obj | None:
        """The slot's corev1 Node, when the boundary accepts it (never a control-plane Node, a machine another
        slot declares or resolves to first, or one outside --managed-node-selector): None otherwise."""
        return None if self.node_refusal(slot) is not None else self.declared_node(slot)

    def slots_resolving_to(self, node: Obj | None) -> list[Obj]:
        """Every slot that finds `node`, the one that keeps it first (model.identity.claimants)."""
        with self.cache.lock:
            return claimants(node, self.cache.all(SLOTS), self.cache)

    def jobs_of_slot(self, slot: str) -> list[Obj]:
        """The slot's Jobs: its label value, confirmed by the full name (a cut label value is not unique)."""
        with self._lock:
            return [j for j in self._jobs.values() if names_slot(j, slot)]

    def job(self, name: str) -> Obj | None:
        return self._jobs.get(name)

    # ---- object -> slot ---------------------------------------------------------------
    def slots_for(self, kind: Kind, obj: Obj) -> list[str]:
        """The slot names whose pass an event about `obj` concerns."""
        kind = key_of(kind)
        # a slot: and every slot declaring or resolving to the same machine (which one is refused may change)
        if kind == SLOTS.key:
            same = {slot_provider_id(obj), slot_node_name(obj)}
            sharing = {_meta(s, "name") for s in self.slots_resolving_to(self.declared_node(obj))}
            return sorted({_meta(obj, "name")} | sharing | {_meta(s, "name") for s in self.cache.all(SLOTS)
                                                            if {slot_provider_id(s), slot_node_name(s)} & same})
        if kind == CLAIMS.key:
            slot = (obj.get("spec") or {}).get("slotRef")
            return [slot] if slot else []
        if kind == GROUPS.key:
            return [_meta(s, "name") for s in self.cache.slots_of_group(_meta(obj, "name"))]
        if kind == NODES.key:  # every slot that may find it: the one that keeps it, and the refused ones
            return sorted({_meta(s, "name") for s in candidates(obj, self.cache.all(SLOTS))})
        if kind == JOBS.key:
            value = ((obj.get("metadata") or {}).get("labels") or {}).get(names.LABEL_SLOT)
            if not value:
                return []
            return [n for n in self.slot_names() if names_slot(obj, n)]
        return []
