"""The API semantics between HTTP and the store: create, update, patch, delete, evict, list.

Each write runs the real server's pipeline: decode, strategy rules (objects.py), schema defaulting, pruning
and validation for custom resources (crds.py), validating admission webhooks (admission.py), then one store
write. Webhook calls are awaited, so a write re-checks that the object did not change meanwhile: a patch
without a resourceVersion is then recomputed (as the real server's GuaranteedUpdate retries), an update that
named a resourceVersion gets 409.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml

from . import crds, disruption, errors, meta, objects, patches
from .admission import AdmissionRequest, WebhookCaller, webhook_matches
from .resources import Registry, ResourceType
from .selectors import FieldRequirement, LabelRequirement, fields_match, labels_match
from .store import Store

PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
NS_KEY, CRD_KEY, VWC_KEY = ("", "namespaces"), ("apiextensions.k8s.io", "customresourcedefinitions"), \
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
PODS_KEY, PDB_KEY = ("", "pods"), ("policy", "poddisruptionbudgets")
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"  # the collector removes the owner's references from its dependents, then this finalizer
CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"


@dataclass
class WriteOptions:
    dry_run: bool = False
    field_validation: str = "Strict"
    user: str = "lab-admin"


@dataclass
class Result:
    code: int
    body: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    rv: str = ""


class Engine:
    def __init__(self, registry: Registry, store: Store, webhooks: WebhookCaller,
                 on_crd_change: Callable[[], None] | None = None):
        self.registry, self.store, self.webhooks = registry, store, webhooks
        self.on_crd_change = on_crd_change or (lambda: None)

    # reads -------------------------------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt.key, namespace, name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return obj

    def list(self, rt: ResourceType, namespace: str | None, labels: list[LabelRequirement],
             fields: list[FieldRequirement]) -> tuple[list[dict[str, Any]], str]:
        items = [o for o in self.store.list(rt.key, namespace)
                 if labels_match(labels, o) and fields_match(fields, o)]
        return items, str(self.store.rv)

    # helpers -----------------------------------------------------------------------------------------------
    def _namespace_for_create(self, rt: ResourceType, namespace: str, name: str) -> dict[str, str]:
        if not rt.namespaced:
            return {}
        ns = self.store.get(NS_KEY, "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(rt.plural, rt.group, name,
                                   f"unable to create new content in namespace {namespace} because it is being "
                                   "terminated")
        return ns["metadata"].get("labels") or {}

    def _namespace_labels(self, rt: ResourceType, namespace: str) -> dict[str, str]:
        if not rt.namespaced:
            return {}
        ns = self.store.get(NS_KEY, "", namespace)
        return (ns or {}).get("metadata", {}).get("labels") or {}

    async def _admit(self, req: AdmissionRequest) -> None:
        for cfg in self.store.list(VWC_KEY):
            for hook in cfg.get("webhooks") or []:
                if webhook_matches(hook, req):
                    await self.webhooks.call(cfg["metadata"]["name"], hook, req)

    def _schema(self, rt: ResourceType, version: str, obj: dict[str, Any], old: dict[str, Any] | None,
                opts: WriteOptions) -> tuple[dict[str, Any], list[str]]:
        if rt.crd_name:
            return crds.admit_custom(rt, version, obj, old, opts.field_validation)
        if rt.key == CRD_KEY:
            causes = crds.crd_errors(obj)
            if causes:
                raise errors.invalid(rt.kind, rt.group, obj["metadata"]["name"], causes)
        return obj, []

    # create ------------------------------------------------------------------------------------------------
    async def create(self, rt: ResourceType, version: str, namespace: str, body: Any, opts: WriteOptions,
                     subresource: str = "") -> Result:
        obj = objects.prepare_create(rt, version, namespace, body)
        name = obj["metadata"]["name"]
        ns_labels = self._namespace_for_create(rt, namespace, name)
        obj, warnings = self._schema(rt, version, obj, None, opts)
        if self.store.get(rt.key, namespace, name) is not None:
            raise errors.already_exists(rt.plural, rt.group, name)
        await self._admit(AdmissionRequest(rt, version, "", "CREATE", namespace, name, obj, None, opts.dry_run,
                                           opts.user, ns_labels, {"kind": "CreateOptions",
                                                                  "apiVersion": "meta.k8s.io/v1"}))
        if self.store.get(rt.key, namespace, name) is not None:
            raise errors.already_exists(rt.plural, rt.group, name)
        obj["apiVersion"] = rt.api_version()
        if rt.key == CRD_KEY:
            obj["status"] = crds.established_status(obj)
        if opts.dry_run:
            return Result(201, objects.for_version(obj, rt, version), warnings)
        stored = self.store.put(rt.key, obj)
        if rt.key == CRD_KEY:
            self.register_crd(stored)
        return Result(201, objects.for_version(stored, rt, version), warnings, stored["metadata"]["resourceVersion"])

    def register_crd(self, crd: dict[str, Any]) -> None:
        self.registry.add(crds.resource_type(crd))
        self.on_crd_change()

    # update and patch ----------------------------------------------------------------------------------------
    async def update(self, rt: ResourceType, version: str, namespace: str, name: str, body: Any,
                     opts: WriteOptions, subresource: str = "") -> Result:
        if isinstance(body, dict) and not isinstance(body.get("metadata", {}), dict):
            raise errors.bad_request("metadata must be an object")
        return await self._write(rt, version, namespace, name, lambda old: copy.deepcopy(body), opts, subresource,
                                 retry=not (isinstance(body, dict) and (body.get("metadata") or {})
                                            .get("resourceVersion")))

    async def patch(self, rt: ResourceType, version: str, namespace: str, name: str, content_type: str,
                    raw: bytes, opts: WriteOptions, subresource: str = "") -> Result:
        kind = content_type.split(";")[0].strip()
        accepted = [t for t in PATCH_TYPES if rt.strategic_merge or t != "application/strategic-merge-patch+json"]
        if kind not in accepted:
            raise errors.unsupported_media_type(accepted)
        try:
            doc = yaml.safe_load(raw) if kind == "application/apply-patch+yaml" else json.loads(raw or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from exc

        if kind == "application/apply-patch+yaml" and isinstance(doc, dict):
            body_name = (doc.get("metadata") or {}).get("name")
            if body_name and body_name != name:
                raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on the URL "
                                         f"({name})")
        if kind == "application/json-patch+json" and not isinstance(doc, list):
            raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")

        def compute(old: dict[str, Any]) -> Any:
            try:
                if kind == "application/json-patch+json":
                    return patches.json_patch(old, doc)
                if kind == "application/merge-patch+json":
                    return patches.merge_patch(old, doc)
                if not isinstance(doc, dict):
                    raise errors.bad_request("a strategic merge or apply patch must be an object")
                if rt.strategic_merge:
                    return patches.strategic_merge(old, doc)
                return patches.merge_patch(old, doc)
            except patches.PatchError as exc:
                if kind == "application/json-patch+json":
                    raise errors.patch_rejected() from exc
                raise errors.bad_request(str(exc)) from exc

        if kind == "application/apply-patch+yaml" and self.store.get(rt.key, namespace, name) is None:
            if subresource:
                raise errors.not_found(rt.plural, rt.group, name)
            body = copy.deepcopy(doc) if isinstance(doc, dict) else doc
            if isinstance(body, dict):
                body.setdefault("metadata", {}).setdefault("name", name)
            return await self.create(rt, version, namespace, body, opts)
        guarded = isinstance(doc, dict) and bool((doc.get("metadata") or {}).get("resourceVersion"))
        return await self._write(rt, version, namespace, name, compute, opts, subresource, retry=not guarded)

    @staticmethod
    def check_patch_options(content_type: str, field_manager: str | None, force: str | None) -> None:
        """A PATCH's query options as kube-apiserver validates them (PatchOptions): an apply names its field
        manager; `force` is for applies only."""
        apply = content_type.split(";")[0].strip() == "application/apply-patch+yaml"
        if apply and not field_manager:
            raise errors.invalid("PatchOptions", "meta.k8s.io", "", [{
                "reason": "FieldValueRequired", "field": "fieldManager",
                "message": "Required value: is required for apply patch"}])
        if not apply and force is not None:
            raise errors.invalid("PatchOptions", "meta.k8s.io", "", [{
                "reason": "FieldValueForbidden", "field": "force",
                "message": "Forbidden: may not be specified for non-apply patch"}])

    async def _write(self, rt: ResourceType, version: str, namespace: str, name: str,
                     compute: Callable[[dict[str, Any]], Any], opts: WriteOptions, subresource: str,
                     retry: bool) -> Result:
        if subresource and subresource != "status":
            raise errors.method_not_allowed()
        if subresource == "status" and not rt.status_subresource:
            raise errors.not_found(rt.plural, rt.group, name)
        for _ in range(10):
            old = self.get(rt, namespace, name)
            new = objects.prepare_update(rt, old, compute(old), subresource)
            new, warnings = self._schema(rt, version, new, old, opts)
            await self._admit(AdmissionRequest(rt, version, subresource, "UPDATE", namespace, name, new, old,
                                               opts.dry_run, opts.user, self._namespace_labels(rt, namespace),
                                               {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}))
            current = self.store.get(rt.key, namespace, name)
            if current is None:
                raise errors.not_found(rt.plural, rt.group, name)
            if current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
                if retry:
                    continue
                raise errors.conflict(rt.plural, rt.group, name)
            return self._commit(rt, version, old, new, opts, warnings)
        raise errors.conflict(rt.plural, rt.group, name)

    def _commit(self, rt: ResourceType, version: str, old: dict[str, Any], new: dict[str, Any],
                opts: WriteOptions, warnings: list[str]) -> Result:
        if objects.unchanged(old, new):
            return Result(200, objects.for_version(old, rt, version), warnings, old["metadata"]["resourceVersion"])
        if opts.dry_run:
            return Result(200, objects.for_version(new, rt, version), warnings)
        md = new["metadata"]
        if md.get("deletionTimestamp") and not md.get("finalizers") and \
                not (rt.key == NS_KEY and (new.get("spec") or {}).get("finalizers")):
            final = self.store.remove(rt.key, md.get("namespace", ""), md["name"])
            self._after_removal(rt, final)
            return Result(200, objects.for_version(new, rt, version), warnings, final["metadata"]["resourceVersion"])
        stored = self.store.put(rt.key, new)
        if rt.key == CRD_KEY and not md.get("deletionTimestamp"):
            self.register_crd(stored)
        return Result(200, objects.for_version(stored, rt, version), warnings, stored["metadata"]["resourceVersion"])

    def _after_removal(self, rt: ResourceType, final: dict[str, Any] | None) -> None:
        if final is not None and rt.key == CRD_KEY:
            spec = final["spec"]
            key = (spec["group"], spec["names"]["plural"])
            self.store.drop_resource(key)
            self.registry.remove(key)
            self.on_crd_change()

    # delete --------------------------------------------------------------------------------------------------
    async def delete(self, rt: ResourceType, version: str, namespace: str, name: str, options: dict[str, Any],
                     opts: WriteOptions) -> Result:
        old = self.get(rt, namespace, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
            raise errors.conflict(rt.kind, rt.group, name,
                                  f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                                  f"({old['metadata']['uid']}). The object might have been deleted and then recreated")
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.kind, rt.group, name,
                                  f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not match "
                                  f"the ResourceVersion in record ({old['metadata']['resourceVersion']}). The object "
                                  "might have been modified")
        if rt.key == NS_KEY and name in PROTECTED_NAMESPACES:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
        await self._admit(AdmissionRequest(rt, version, "", "DELETE", namespace, name, None, old, opts.dry_run,
                                           opts.user, self._namespace_labels(rt, namespace),
                                           {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}))
        old = self.get(rt, namespace, name)
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        policy = policy or rt.default_propagation
        warnings = []
        if rt.key == ("batch", "jobs") and not options.get("propagationPolicy") \
                and options.get("orphanDependents") is None:
            warnings.append("child pods are preserved by default when jobs are deleted; set "
                            "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to "
                            "suppress this warning")
        if policy not in ("Orphan", "Background", "Foreground"):
            raise errors.invalid("DeleteOptions", "", "", [{
                "reason": "FieldValueNotSupported", "field": "propagationPolicy",
                "message": f'Unsupported value: "{policy}": supported values: "Foreground", "Background", '
                           '"Orphan", "nil"'}], message=f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy:'
                                                  f' Unsupported value: "{policy}": supported values: "Foreground", '
                                                  '"Background", "Orphan", "nil"')
        if opts.dry_run:
            return Result(200, objects.for_version(old, rt, version), warnings)
        return self.delete_now(rt, version, old, policy, warnings)

    def delete_now(self, rt: ResourceType, version: str, old: dict[str, Any], policy: str,
                   warnings: list[str] | None = None) -> Result:
        """The store side of a delete (no admission): used by the API and by the garbage collector."""
        warnings = warnings or []
        md = copy.deepcopy(old["metadata"])
        finalizers = list(md.get("finalizers") or [])
        if policy == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        if policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if rt.key == CRD_KEY and CRD_CLEANUP not in finalizers:
            finalizers.append(CRD_CLEANUP)
        spec_finalizers = (old.get("spec") or {}).get("finalizers") if rt.key == NS_KEY else None
        if finalizers or spec_finalizers or rt.key == NS_KEY:
            new = copy.deepcopy(old)
            new["metadata"]["finalizers"] = finalizers
            if not finalizers:
                new["metadata"].pop("finalizers")
            if not new["metadata"].get("deletionTimestamp"):
                new["metadata"]["deletionTimestamp"] = meta.timestamp()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                new["metadata"]["generation"] = int(md.get("generation", 1)) + 1
            if rt.key == NS_KEY:
                new.setdefault("spec", {})["finalizers"] = ["kubernetes"]
                new.setdefault("status", {})["phase"] = "Terminating"
            if new == old:
                return Result(200, objects.for_version(old, rt, version), warnings, md["resourceVersion"])
            stored = self.store.put(rt.key, new)
            return Result(200, objects.for_version(stored, rt, version), warnings,
                          stored["metadata"]["resourceVersion"])
        final = self.store.remove(rt.key, md.get("namespace", ""), md["name"])
        self._after_removal(rt, final)
        assert final is not None
        if rt.key in (PODS_KEY, ("", "services"), NS_KEY):  # the rest (custom resources too) answer a Status
            return Result(200, objects.for_version(final, rt, version), warnings, final["metadata"]["resourceVersion"])
        return Result(200, errors.status_success(md["name"], rt.group, rt.plural, md["uid"]), warnings,
                      final["metadata"]["resourceVersion"])

    def orphan_dependents(self, uid: str) -> None:
        """Remove the owner `uid` from its dependents' ownerReferences (the collector, for the `orphan` finalizer)."""
        for key, obj in list(self.store.iter_all()):
            refs = obj["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs):
                new = copy.deepcopy(obj)
                kept = [r for r in refs if r.get("uid") != uid]
                if kept:
                    new["metadata"]["ownerReferences"] = kept
                else:
                    new["metadata"].pop("ownerReferences")
                self.store.put(key, new)

    async def delete_collection(self, rt: ResourceType, version: str, namespace: str | None,
                                labels: list[LabelRequirement], fields: list[FieldRequirement],
                                options: dict[str, Any], opts: WriteOptions) -> Result:
        items, _ = self.list(rt, namespace, labels, fields)
        deleted = []
        for item in items:
            md = item["metadata"]
            try:
                await self.delete(rt, version, md.get("namespace", ""), md["name"], options, opts)
            except errors.APIError as exc:
                if exc.code != 404:
                    raise
            deleted.append(objects.for_version(item, rt, version))
        return Result(200, {"kind": f"{rt.kind}List", "apiVersion": rt.api_version(version),
                            "metadata": {"resourceVersion": str(self.store.rv)}, "items": deleted})

    # eviction ------------------------------------------------------------------------------------------------
    async def evict(self, namespace: str, name: str, body: Any, opts: WriteOptions) -> Result:
        pods_rt = self.registry.by_key(PODS_KEY)
        assert pods_rt is not None
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be an Eviction object")
        if (body.get("metadata") or {}).get("name") not in (None, name):
            raise errors.bad_request("name in URL does not match name in Eviction object")
        pod = self.get(pods_rt, namespace, name)
        await self._admit(AdmissionRequest(pods_rt, "v1", "eviction", "CREATE", namespace, name, body, None,
                                           opts.dry_run, opts.user, self._namespace_labels(pods_rt, namespace),
                                           {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}))
        pods = self.store.list(PODS_KEY, namespace)
        pdbs = self.store.list(PDB_KEY, namespace)
        verdict, cause, _ = disruption.eviction_verdict(pod, pdbs, pods, self.scale_of)
        if verdict == "error":
            raise errors.internal(cause)
        if verdict == "deny":
            raise errors.too_many_requests(disruption.MESSAGE, [{"reason": "DisruptionBudget", "message": cause}])
        if not opts.dry_run:
            self.delete_now(pods_rt, "v1", pod, "Background")
            self.refresh_pdbs(namespace)
        return Result(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                            "code": 201})

    def scale_of(self, uid: str) -> int | None:
        """The scale of a pod's controller (replicas; parallelism for Jobs), for expectedPods."""
        found = self.store.by_uid(uid)
        if found is None:
            return None
        spec = found[1].get("spec") or {}
        value = spec.get("parallelism" if found[0] == ("batch", "jobs") else "replicas")
        return int(value) if isinstance(value, int) else (1 if found[0] in (("apps", "replicasets"),
                                                                            ("apps", "deployments"),
                                                                            ("apps", "statefulsets")) else None)

    def refresh_pdbs(self, namespace: str | None = None) -> None:
        """Keep PodDisruptionBudget status current, writing only when it changes (as the controller does)."""
        pdbs = self.store.list(PDB_KEY, namespace)
        if not pdbs:
            return
        pods_by_ns: dict[str, list[dict[str, Any]]] = {}
        for pdb in pdbs:
            ns = pdb["metadata"]["namespace"]
            pods = pods_by_ns.setdefault(ns, self.store.list(PODS_KEY, ns))
            status = disruption.budget(pdb, pods, self.scale_of).status(int(pdb["metadata"].get("generation", 1)))
            merged = {**(pdb.get("status") or {}), **status}
            if merged != pdb.get("status"):
                new = copy.deepcopy(pdb)
                new["status"] = merged
                self.store.put(PDB_KEY, new)
