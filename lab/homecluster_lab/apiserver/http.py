"""The HTTP layer: route a request, call the engine, answer JSON (or a Table), log it, inject faults."""
from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

import yaml
from aiohttp import web

from . import discovery, errors, objects, protobuf, selectors, tables, watch
from .audit import AuditEntry
from .engine import Result, WriteOptions
from .paths import Target, parse

if TYPE_CHECKING:
    from .server import LabAPIServer

JSON = "application/json"


def _json(body: Any, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    headers = {}
    resp = web.Response(status=status, text=json.dumps(body, separators=(",", ":")), content_type=JSON,
                        headers=headers)
    for w in warnings or []:
        resp.headers.add("Warning", f'299 - "{w}"')
    return resp


def _wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    first = accept.split(",")[0]
    return "as=Table" in first


# The spellings Go's strconv.ParseBool reads as true (kubernetes_asyncio sends watch=True).
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def _verb(request: web.Request, target: Target) -> str:
    m = request.method
    if m == "GET":
        if request.query.get("watch") in _GO_TRUE:
            return "watch"
        return "get" if target.name else "list"
    if m == "POST":
        return "create"
    if m == "PUT":
        return "update"
    if m == "PATCH":
        return "patch"
    if m == "DELETE":
        return "delete" if target.name else "deletecollection"
    return m.lower()


class Disconnect(Exception):
    """An injected fault: close the connection and answer nothing."""


class Handler:
    def __init__(self, server: "LabAPIServer"):
        self.server = server

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        started = time.time()
        path = request.path
        target = parse(path, self.server.registry)
        try:
            if target is None:
                resp = self._discovery(request, path)
                self._log(request, "discovery", None, started, resp.status, "")
                return resp
            verb = _verb(request, target)
            resp, rv, dry = await self._resource(request, target, verb)
            if rv is not None:  # watches are logged when they start (see _resource)
                self._log(request, verb, target, started, resp.status, rv, dry)
            return resp
        except Disconnect:
            self._log(request, _verb(request, target), target, started, 0, "")
            if request.transport is not None:
                request.transport.close()  # the client reads the connection's end, no status line
            raise web.HTTPServiceUnavailable() from None  # never sent: the connection is closed
        except errors.APIError as exc:
            verb = _verb(request, target) if target is not None else "discovery"
            self._log(request, verb, target, started, exc.code, "",
                      "All" in request.query.getall("dryRun", []))
            resp = _json(exc.status(), exc.code)
            retry_after = (exc.details or {}).get("retryAfterSeconds")
            if exc.code == 429 and retry_after:
                resp.headers["Retry-After"] = str(retry_after)  # as kube-apiserver's throttling answers
            return resp

    def _log(self, request: web.Request, verb: str, target: Target | None, started: float, code: int, rv: str,
             dry: bool = False) -> None:
        self.server.audit.record(AuditEntry(
            verb=verb, resource=target.plural if target else "", group=target.group if target else "",
            namespace=(target.namespace or "") if target else "", name=target.name if target else "",
            subresource=target.subresource if target else "", user_agent=request.headers.get("User-Agent", ""),
            time=started, code=code, rv=rv, dry_run=dry,
            field_selector=request.query.get("fieldSelector", "")))

    # discovery ---------------------------------------------------------------------------------------------
    def _discovery(self, request: web.Request, path: str) -> web.Response:
        reg = self.server.registry
        path = path.rstrip("/") or "/"
        if request.method != "GET":
            raise errors.method_not_allowed()
        if path == "/version":
            return _json(discovery.VERSION_INFO)
        if path == "/api":
            return _json(discovery.api_versions(self.server.address))
        if path == "/apis":
            return _json(discovery.api_group_list(reg))
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/openapi/v3":
            return _json(discovery.openapi_root(reg))
        segs = [s for s in path.split("/") if s]
        if segs[:2] == ["openapi", "v3"]:
            rest = segs[2:]
            doc = None
            if rest[:1] == ["api"] and len(rest) == 2:
                doc = discovery.openapi_gv_doc(reg, "", rest[1])
            elif rest[:1] == ["apis"] and len(rest) == 3:
                doc = discovery.openapi_gv_doc(reg, rest[1], rest[2])
            if doc is not None:
                return _json(doc)
        if len(segs) == 2 and segs[0] == "api":
            doc = discovery.api_resource_list(reg, "", segs[1])
            if doc is not None:
                return _json(doc)
        if len(segs) == 2 and segs[0] == "apis":
            doc = discovery.api_group(reg, segs[1])
            if doc is not None:
                return _json(doc)
        if len(segs) == 3 and segs[0] == "apis":
            doc = discovery.api_resource_list(reg, segs[1], segs[2])
            if doc is not None:
                return _json(doc)
        raise errors.APIError(404, "NotFound", "the server could not find the requested resource", {})

    # resources ---------------------------------------------------------------------------------------------
    async def _resource(self, request: web.Request, t: Target, verb: str
                        ) -> tuple[web.StreamResponse, str | None, bool]:
        rt = t.rt
        if rt is None:
            raise errors.APIError(404, "NotFound", "the server could not find the requested resource", {})
        if rt.namespaced and t.namespace is None and verb not in ("list", "watch"):
            if verb != "deletecollection":
                raise errors.APIError(404, "NotFound", "the server could not find the requested resource", {})
        engine, q = self.server.engine, request.query
        dry = "All" in q.getall("dryRun", [])
        opts = WriteOptions(dry_run=dry, field_validation=q.get("fieldValidation", "Strict"))
        ns = t.namespace or ""
        if verb in ("create", "update", "patch", "delete", "deletecollection", "get", "list"):
            await self._fault(t, verb, request.headers.get("User-Agent", ""))  # reads: only a rule naming them
        if verb == "watch":
            labels = selectors.parse_label_selector(q.get("labelSelector"))
            fields = selectors.parse_field_selector(q.get("fieldSelector"))
            selectors.check_field_labels(rt.key, fields, custom=rt.crd_name is not None,
                                         namespaced=rt.namespaced, selectable=rt.selectable_fields)
            if t.name:
                fields = fields + [selectors.FieldRequirement("metadata.name", "=", t.name)]
            as_table = _wants_table(request)
            render = (lambda o: tables.table(rt, t.version, [o], str(self.server.store.rv))) if as_table \
                else (lambda o: o)
            self._log(request, "watch", t, time.time(), 200, str(self.server.store.rv))
            resp = await watch.serve(request, self.server.store, self.server.faults, rt, t.version, t.namespace,
                                     labels, fields, self.server.bookmark_interval, render)
            return resp, None, False
        if verb == "get":
            if t.subresource and t.subresource != "status":
                raise errors.APIError(404, "NotFound", "the server could not find the requested resource", {})
            obj = objects.for_version(engine.get(rt, ns, t.name), rt, t.version)
            if _wants_table(request):
                return _json(tables.table(rt, t.version, [obj], obj["metadata"]["resourceVersion"],
                                          q.get("includeObject", "Metadata"))), "", False
            return _json(obj), "", False
        if verb == "list":
            labels = selectors.parse_label_selector(q.get("labelSelector"))
            fields = selectors.parse_field_selector(q.get("fieldSelector"))
            selectors.check_field_labels(rt.key, fields, custom=rt.crd_name is not None,
                                         namespaced=rt.namespaced, selectable=rt.selectable_fields)
            items, rv = engine.list(rt, t.namespace, labels, fields)
            items = [objects.for_version(o, rt, t.version) for o in items]
            if _wants_table(request):
                return _json(tables.table(rt, t.version, items, rv, q.get("includeObject", "Metadata"))), rv, False
            return _json({"kind": f"{rt.kind}List", "apiVersion": rt.api_version(t.version),
                          "metadata": {"resourceVersion": rv}, "items": items}), rv, False
        result = await self._write(request, t, verb, opts, ns)
        return _json(result.body, result.code, result.warnings), result.rv, dry

    async def _fault(self, t: Target, verb: str, user_agent: str) -> None:
        fault = self.server.faults.take(t.plural, t.group, t.subresource, verb, user_agent)
        if fault is None:
            return
        if fault == "timeout":
            await asyncio.sleep(self.server.faults.timeout_delay)
            raise errors.timeout()
        if fault == "disconnect":
            raise Disconnect()
        if fault == 409:
            raise errors.conflict(t.plural, t.group, t.name or "")
        if fault == 429:
            raise errors.too_many_requests("injected fault: too many requests, please try again later",
                                           [{"message": "injected fault"}], self.server.faults.retry_after)
        raise errors.APIError(int(fault), "InternalError" if fault == 500 else "",
                              "Internal error occurred: injected fault" if fault == 500 else "injected fault",
                              {"causes": [{"message": "injected fault"}]})

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw:
            return None
        ctype = request.headers.get("Content-Type", JSON).split(";")[0].strip()
        if ctype == "application/vnd.kubernetes.protobuf":
            try:
                return protobuf.decode(raw)
            except protobuf.ProtobufError as exc:
                raise errors.APIError(415, "UnsupportedMediaType", str(exc)) from exc
        try:
            if ctype in ("application/yaml", "application/apply-patch+yaml"):
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc

    async def _write(self, request: web.Request, t: Target, verb: str, opts: WriteOptions, ns: str) -> Result:
        rt, engine = t.rt, self.server.engine
        assert rt is not None
        if verb == "create":
            if t.subresource == "eviction" and rt.key == ("", "pods"):
                return await engine.evict(ns, t.name, await self._body(request), opts)
            if t.name:
                raise errors.method_not_allowed()
            return await engine.create(rt, t.version, ns, await self._body(request), opts)
        if verb == "update":
            return await engine.update(rt, t.version, ns, t.name, await self._body(request), opts, t.subresource)
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "")
            engine.check_patch_options(content_type, request.query.get("fieldManager"), request.query.get("force"))
            return await engine.patch(rt, t.version, ns, t.name, content_type, await request.read(), opts,
                                      t.subresource)
        options = await self._body(request) or {}
        q = request.query
        if q.get("propagationPolicy"):
            options["propagationPolicy"] = q["propagationPolicy"]
        if q.get("gracePeriodSeconds"):
            options["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
        if verb == "delete":
            return await engine.delete(rt, t.version, ns, t.name, options, opts)
        labels = selectors.parse_label_selector(q.get("labelSelector"))
        fields = selectors.parse_field_selector(q.get("fieldSelector"))
        return await engine.delete_collection(rt, t.version, t.namespace, labels, fields, options, opts)
