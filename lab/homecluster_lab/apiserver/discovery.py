"""Discovery documents: /api, /apis, /api/v1, /apis/<group>/<version>, /version, and OpenAPI v3.

Legacy (unaggregated) discovery only: kubectl 1.32 asks for the aggregated form first and falls back when the
answer's content type is plain application/json. kopf waits for `v1/namespaces` here before watching anything.

OpenAPI v3 is served so that `kubectl apply` (validate=strict by default) finds, per group-version, PATCH
operations that accept `fieldValidation`: kubectl then leaves validation to the server and sends
fieldValidation=Strict instead of validating client-side against a schema. Custom resources' schemas are
included so `kubectl explain` works; built-in kinds carry no schema (kubectl then computes strategic merge
patches from its compiled-in types, as it does against any server that lacks their OpenAPI).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from .resources import Registry, ResourceType

VERSION_INFO = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0-homecluster-lab", "gitCommit": "lab",
    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23",
    "compiler": "gc", "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group(g, vs) for g, vs in sorted(registry.group_versions().items())]}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.group_versions().get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def _resource_entries(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                            "kind": rt.kind, "verbs": list(rt.verbs)}
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    main["storageVersionHash"] = hashlib.sha256(f"{rt.group}/{rt.plural}".encode()).hexdigest()[:12]
    out = [main]
    if rt.status_subresource:
        out.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                    "kind": rt.kind, "verbs": ["get", "patch", "update"]})
    for sub, (kind, group, version) in rt.extra_subresources.items():
        out.append({"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced,
                    "group": group, "version": version, "kind": kind, "verbs": ["create"]})
    return out


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources = [e for rt in sorted(types, key=lambda r: r.plural) for e in _resource_entries(rt)]
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": resources}


# OpenAPI v3 ---------------------------------------------------------------------------------------------------

def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_name(rt: ResourceType, version: str) -> str:
    group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{group}.{version}.{rt.kind}"


def openapi_gv_doc(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rt in types:
        gvk = {"group": rt.group, "version": version, "kind": rt.kind}
        base = rt.path_prefix(version) + ("/namespaces/{namespace}" if rt.namespaced else "") + f"/{rt.plural}"
        params = [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
                  for n in ("dryRun", "fieldManager", "fieldValidation", "force")]

        def op(action: str, p: list[dict] | None = None) -> dict[str, Any]:
            return {"operationId": f"{action}{rt.kind}", "parameters": p or [],
                    "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
                    "responses": {"200": {"description": "OK"}}}
        paths[base] = {"get": op("list"), "post": op("post", params[:3])}
        paths[base + "/{name}"] = {"get": op("get"), "put": op("put", params[:3]), "patch": op("patch", params),
                                   "delete": op("delete", params[:1])}
        if rt.status_subresource:
            paths[base + "/{name}/status"] = {"get": op("get"), "put": op("put", params[:3]),
                                              "patch": op("patch", params)}
        schema = rt.schemas.get(version)
        if schema:
            schemas[_schema_name(rt, version)] = {**schema, "x-kubernetes-group-version-kind": [gvk]}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas}}


def openapi_root(registry: Registry) -> dict[str, Any]:
    gvs = {("", "v1")} | {(rt.group, v) for rt in registry.all() for v in rt.versions}
    paths = {}
    for group, version in sorted(gvs):
        doc = openapi_gv_doc(registry, group, version)
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
