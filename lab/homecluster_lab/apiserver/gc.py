"""The controllers a real cluster runs behind the API server, reduced to what clients observe:

- garbage collection: an object whose owners (by uid) are all gone is deleted (background propagation);
- foreground deletion: an owner marked `foregroundDeletion` waits until its dependents are gone;
- orphan deletion: an owner marked `orphan` is removed from its dependents' ownerReferences, then goes;
- namespace termination: a deleted namespace's content is deleted, then the namespace;
- CRD cleanup: a deleted CRD's custom resources are deleted, then the CRD (and its endpoints);
- disruption: PodDisruptionBudget status kept current.

One pass is a pure scan plus store writes; `run()` repeats it every `interval` seconds. Each write is recorded
in the request log with the user agent "lab-controller-manager", so benchmarks can tell it from components.
"""
from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any, Callable

from .engine import CRD_CLEANUP, CRD_KEY, FOREGROUND, NS_KEY, ORPHAN, Engine

log = logging.getLogger(__name__)
USER_AGENT = "lab-controller-manager"


class Collector:
    def __init__(self, engine: Engine, record: Callable[[str, Any, dict[str, Any], str], None],
                 interval: float = 0.2):
        self.engine, self.record, self.interval = engine, record, interval

    async def run(self) -> None:
        while True:
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - a bug here must not stop the server; it is logged
                log.exception("lab controller pass failed")
            await asyncio.sleep(self.interval)

    def run_once(self) -> None:
        store = self.engine.store
        all_objects = list(store.iter_all())
        uids = {o["metadata"].get("uid") for _, o in all_objects}
        dependents: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
        for key, obj in all_objects:
            for ref in obj["metadata"].get("ownerReferences") or []:
                dependents.setdefault(ref.get("uid"), []).append((key, obj))
        for key, obj in all_objects:
            md = obj["metadata"]
            refs = md.get("ownerReferences") or []
            if refs and not any(r.get("uid") in uids for r in refs) and not md.get("deletionTimestamp"):
                self._delete(key, obj, "Background")
            if md.get("deletionTimestamp") and FOREGROUND in (md.get("finalizers") or []):
                waiting = [(k, d) for k, d in dependents.get(md["uid"], []) if store.by_uid(d["metadata"]["uid"])]
                for dkey, dep in waiting:
                    if not dep["metadata"].get("deletionTimestamp"):
                        self._delete(dkey, dep, "Foreground")
                if not waiting:
                    self._drop_finalizer(key, obj, FOREGROUND)
            if md.get("deletionTimestamp") and ORPHAN in (md.get("finalizers") or []):
                self.engine.orphan_dependents(md["uid"])
                self._drop_finalizer(key, obj, ORPHAN)
        for ns in store.peek_kind(NS_KEY):
            if ns["metadata"].get("deletionTimestamp"):
                self._terminate_namespace(ns)
        for crd in store.peek_kind(CRD_KEY):
            if crd["metadata"].get("deletionTimestamp") and CRD_CLEANUP in (crd["metadata"].get("finalizers") or []):
                self._cleanup_crd(crd)
        self.engine.refresh_pdbs()

    def _delete(self, key: Any, obj: dict[str, Any], policy: str) -> None:
        rt = self.engine.registry.by_key(key)
        current = self.engine.store.get(key, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if rt is None or current is None:
            return
        result = self.engine.delete_now(rt, rt.storage_version, current, policy)
        self.record("delete", rt, current, result.rv)

    def _drop_finalizer(self, key: Any, obj: dict[str, Any], finalizer: str) -> None:
        rt = self.engine.registry.by_key(key)
        current = self.engine.store.get(key, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if rt is None or current is None:
            return
        new = copy.deepcopy(current)
        new["metadata"]["finalizers"] = [f for f in current["metadata"].get("finalizers") or [] if f != finalizer]
        result = self.engine._commit(rt, rt.storage_version, current, new, _internal(), [])
        self.record("update", rt, current, result.rv)

    def _terminate_namespace(self, ns: dict[str, Any]) -> None:
        name = ns["metadata"]["name"]
        remaining = 0
        for rt in self.engine.registry.all():
            if not rt.namespaced:
                continue
            for obj in self.engine.store.list(rt.key, name):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    self._delete(rt.key, obj, "Background")
        if remaining == 0:
            rt = self.engine.registry.by_key(NS_KEY)
            assert rt is not None
            final = self.engine.store.remove(NS_KEY, "", name)
            if final is not None:
                self.record("delete", rt, ns, final["metadata"]["resourceVersion"])

    def _cleanup_crd(self, crd: dict[str, Any]) -> None:
        key = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
        rt = self.engine.registry.by_key(key)
        instances = self.engine.store.list(key) if rt is not None else []
        for obj in instances:
            if not obj["metadata"].get("deletionTimestamp"):
                self._delete(key, obj, "Background")
        if not instances:
            self._drop_finalizer(CRD_KEY, crd, CRD_CLEANUP)


def _internal():  # local import avoids a cycle in type checkers' eyes; WriteOptions is a plain dataclass
    from .engine import WriteOptions
    return WriteOptions(user="system:serviceaccount:kube-system:generic-garbage-collector")
