"""How a write turns a request body into the object to store: the API server's "strategy" rules. Pure.

Create: identity and timestamps are the server's, not the client's; status is dropped (or reset) for kinds
with a status subresource. Update: identity is kept, `status` is ignored on the main resource and only
`status` is taken from a /status write, generation moves only when the spec does, and no finalizer may be
added to an object that is being deleted.
"""
from __future__ import annotations

import copy
from typing import Any

from . import defaults, errors, meta
from .resources import ResourceType

_IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                   "namespace", "name", "selfLink")


def prepare_create(rt: ResourceType, version: str, namespace: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    obj = copy.deepcopy(body)
    expected = rt.api_version(version)
    if not obj.get("kind"):
        if rt.crd_name:
            raise errors.bad_request(f"Object 'Kind' is missing in '{_short(body)}'")
        obj["kind"] = rt.kind
    if not obj.get("apiVersion"):
        obj["apiVersion"] = expected
    if obj["apiVersion"] != expected:
        raise errors.bad_request(f"the API version in the data ({obj['apiVersion']}) does not match the expected "
                                 f"API version ({expected})")
    if obj["kind"] != rt.kind:
        if rt.crd_name:  # a custom resource is decoded as unstructured; its validation refuses the kind
            name = str((obj.get("metadata") or {}).get("name") or "") if isinstance(obj.get("metadata"), dict) else ""
            raise errors.invalid(obj["kind"], rt.group, name, [{
                "reason": "FieldValueInvalid", "field": "kind",
                "message": f'Invalid value: "{obj["kind"]}": must be {rt.kind}'}])
        raise errors.bad_request(f"the kind in the data ({obj['kind']}) does not match the expected kind ({rt.kind})")
    md = obj.setdefault("metadata", {})
    if not isinstance(md, dict):
        raise errors.bad_request("metadata must be an object")
    if rt.namespaced:
        if md.get("namespace") and md["namespace"] != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on "
                                     "the request")
        md["namespace"] = namespace
    else:
        md.pop("namespace", None)
    if md.get("resourceVersion"):
        raise errors.bad_request("resourceVersion should not be set on objects to be created")
    if not md.get("name") and md.get("generateName"):
        md["name"] = meta.generated_name(md["generateName"])
    causes = meta.name_errors(rt.kind, md.get("name", ""))
    if causes:
        raise errors.invalid(rt.kind, rt.group, md.get("name", ""), causes)
    for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"):
        md.pop(k, None)
    defaults.apply(rt.group, rt.plural, obj)
    defaults.omit_empty(rt.group, rt.plural, obj)
    md["uid"] = meta.new_uid()
    md["creationTimestamp"] = meta.timestamp()
    md["generation"] = 1
    if rt.status_subresource:
        policy = rt.status_on_create
        if isinstance(policy, dict):
            obj["status"] = {**(obj.get("status") or {}), **policy} if rt.key == ("", "namespaces") \
                else copy.deepcopy(policy)
        elif policy == "clear" and rt.crd_name:
            obj.pop("status", None)
        elif policy == "clear":
            obj["status"] = {}  # a built-in's status struct is always serialised, empty after a create
    return obj


def _short(body: Any) -> str:
    text = str(body)
    return text if len(text) < 200 else text[:200] + "..."


def prepare_update(rt: ResourceType, old: dict[str, Any], new: Any, subresource: str) -> dict[str, Any]:
    """The object an update (PUT or a patch's result) would store. Raises 400/409/422 as the server does."""
    name = old["metadata"]["name"]
    if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
        raise errors.bad_request("the body of the request must be a JSON object with an object metadata")
    md = new.setdefault("metadata", {})
    if md.get("name") and md["name"] != name:
        raise errors.bad_request(f"the name of the object ({md['name']}) does not match the name on the URL ({name})")
    if rt.namespaced and md.get("namespace") and md["namespace"] != old["metadata"].get("namespace"):
        raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
    rv = md.get("resourceVersion")
    if rv and str(rv) != old["metadata"]["resourceVersion"]:
        raise errors.conflict(rt.plural, rt.group, name)
    if new.get("kind") and new["kind"] != rt.kind:
        raise errors.bad_request(f"the kind in the data ({new['kind']}) does not match the expected kind ({rt.kind})")
    if subresource == "status":
        result = copy.deepcopy(old)
        if "status" in new:
            result["status"] = copy.deepcopy(new["status"])
        else:
            result.pop("status", None)
        return result
    result = copy.deepcopy(new)
    result["apiVersion"], result["kind"] = old["apiVersion"], old["kind"]
    rmd = result["metadata"]
    for k in _IMMUTABLE_META:
        if k in old["metadata"]:
            rmd[k] = copy.deepcopy(old["metadata"][k])
        else:
            rmd.pop(k, None)
    rmd["resourceVersion"] = old["metadata"]["resourceVersion"]
    rmd.pop("managedFields", None)
    if rt.status_subresource:
        if "status" in old:
            result["status"] = copy.deepcopy(old["status"])
        else:
            result.pop("status", None)
    if old["metadata"].get("deletionTimestamp"):
        added = [f for f in rmd.get("finalizers") or [] if f not in (old["metadata"].get("finalizers") or [])]
        if added:
            shown = ", ".join(f'"{f}"' for f in added)
            raise errors.invalid(rt.kind, rt.group, name, [{
                "reason": "FieldValueForbidden", "field": "metadata.finalizers",
                "message": f"Forbidden: no new finalizers can be added if the object is being deleted, "
                           f"found new finalizers []string{{{shown}}}"}])
    for k in ("finalizers", "labels", "annotations"):  # empty ones are not serialised (omitempty)
        if not rmd.get(k):
            rmd.pop(k, None)
    defaults.omit_empty(rt.group, rt.plural, result)
    if meta.spec_part(result, rt.status_subresource) != meta.spec_part(old, rt.status_subresource):
        rmd["generation"] = int(old["metadata"].get("generation", 1)) + 1
    return result


def unchanged(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return old == new


def for_version(obj: dict[str, Any], rt: ResourceType, version: str) -> dict[str, Any]:
    """The stored object as served at `version` (all versions share one schema in the lab: no conversion)."""
    if obj.get("apiVersion") != rt.api_version(version):
        obj = {**obj, "apiVersion": rt.api_version(version)}
    return obj
