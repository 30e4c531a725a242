"""The operator's own small Kubernetes client: explicit verbs, explicit content types, typed errors.

Why our own: every write the controller makes is a deliberate patch whose body we build (a merge
patch carrying the resourceVersion the decision was based on, a strategic merge patch for corev1
Nodes), and the controller must tell "somebody changed it meanwhile" (Conflict: requeue, no harm)
from "it is gone" (NotFound) from "the server refused the value" (Invalid, with the server's words).
A generated client hides all three behind one exception and one content type.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

from homecluster import API_GROUP, API_VERSION
from homecluster.kube.connection import Connection

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON = "application/json"
USER_AGENT = "homecluster-operator"


@dataclass(frozen=True)
class Resource:
    """One API resource: where it lives, whether it is namespaced, and `key`, the short name the operator's store
    and the provider's cache file its objects under ("claims", "slots"; the plural when not given). The Resource
    is the one name of a kind: the client talks to its path, the cache stores under its key."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = False
    key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, name: str | None = None, namespace: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced:
            if not namespace:
                raise ValueError(f"{self.kind} is namespaced: a namespace is required")
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


CLAIMS = Resource(API_GROUP, API_VERSION, "nodeclaims", "NodeClaim", key="claims")
SLOTS = Resource(API_GROUP, API_VERSION, "nodes", "Node", key="slots")
GROUPS = Resource(API_GROUP, API_VERSION, "groups", "Group")
NODES = Resource("", "v1", "nodes", "Node")
JOBS = Resource("batch", "v1", "jobs", "Job", namespaced=True)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace")


class ApiError(Exception):
    """An answer other than 2xx; `message` is the server's own text. `retry_after`: the seconds the server
    asked the client to wait (a 429's or 503's Retry-After), None when it did not say."""

    def __init__(self, status: int, reason: str, message: str, what: str, retry_after: float | None = None) -> None:
        super().__init__(f"{what}: HTTP {status} {reason}: {message}")
        self.status, self.reason, self.message, self.what = status, reason, message, what
        self.retry_after = retry_after


# what a call may raise instead of an answer: the server's error, the network's (a dropped connection is
# aiohttp's ServerDisconnectedError, a ClientError that is no OSError), a time-out
CALL_FAILURES = (ApiError, OSError, asyncio.TimeoutError, aiohttp.ClientError)
# what a read may raise besides: a body that is no JSON object (list) or no UTF-8
READ_FAILURES = (*CALL_FAILURES, ValueError)


class NotFound(ApiError):
    """404: the object (or its kind) does not exist."""


class Conflict(ApiError):
    """409 Conflict: the object changed since the resourceVersion the write was based on."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: a create met an object of the same name."""


class Invalid(ApiError):
    """422: the server refused the value (schema, CEL rule, immutable field)."""


MAX_RETRY_AFTER = 60.0  # a server's Retry-After is honoured up to this (the pass backoff's cap)


def retry_after(status: int, header: str | None) -> float | None:
    """The wait a 429 or 503 asks for in its Retry-After header (delta-seconds), bounded to
    [0, MAX_RETRY_AFTER]; None for other answers and for a value that is no number (an HTTP date)."""
    if status not in (429, 503) or not header:
        return None
    try:
        seconds = float(header.strip())
    except ValueError:
        return None
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _error(status: int, body: Any, what: str, wait: float | None = None) -> ApiError:
    reason = body.get("reason", "") if isinstance(body, Mapping) else ""
    message = body.get("message", "") if isinstance(body, Mapping) else str(body)[:500]
    if status == 404:
        return NotFound(status, reason or "NotFound", message, what)
    if status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
        return cls(status, reason or "Conflict", message, what)
    if status == 422:
        return Invalid(status, reason or "Invalid", message, what)
    return ApiError(status, reason or "Error", message, what, wait)


class KubeClient:
    """Async verbs over one aiohttp session. `on_write(verb, resource, status)` hears every write."""

    def __init__(self, connection: Connection, *, user_agent: str = USER_AGENT, timeout: float = 10.0,
                 on_write: Callable[[str, Resource, int], None] | None = None) -> None:
        self.connection = connection
        self.user_agent = user_agent
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._on_write = on_write
        self.writes = 0  # writes attempted, so a pass can tell whether it changed anything

    async def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.connection.ssl_context())
            headers = {"User-Agent": self.user_agent, "Accept": JSON}
            self._session = aiohttp.ClientSession(connector=connector, headers=headers, timeout=self._timeout)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _call(self, method: str, path: str, what: str, *, body: Any = None, content_type: str = JSON,
                    query: Mapping[str, str] | None = None, write: tuple[str, Resource] | None = None) -> Any:
        session = await self._http()
        url = self.connection.server + path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body)
        if write:
            self.writes += 1
        headers = self.connection.headers()  # per request: an in-cluster token is re-read as it rotates
        if data is not None:
            headers["Content-Type"] = content_type
        status, wait = 0, None
        try:
            async with session.request(method, url, data=data, headers=headers) as response:
                status = response.status
                wait = retry_after(status, response.headers.get("Retry-After"))
                text = await response.text()
        finally:
            if write and self._on_write:
                self._on_write(write[0], write[1], status)
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        if status >= 300:
            raise _error(status, parsed, what, wait)
        return parsed

    @staticmethod
    def _what(verb: str, res: Resource, name: str | None, namespace: str | None) -> str:
        where = f"{namespace}/" if namespace else ""
        return f"{verb} {res.kind} {where}{name}" if name else f"{verb} {res.plural}"

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict:
        return await self._call("GET", res.path(name, namespace), self._what("get", res, name, namespace))

    async def list(self, res: Resource, namespace: str | None = None,
                   label_selector: str | None = None,
                   field_selector: str | None = None) -> tuple[list[dict], str]:
        """All objects of a kind (one page) and the list's resourceVersion. Items get kind/apiVersion."""
        query = {k: v for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector)) if v} or None
        what = self._what("list", res, None, namespace)
        data = await self._call("GET", res.path(None, namespace), what, query=query)
        if not isinstance(data, Mapping):  # a 2xx whose body is no JSON object: a proxy's page, a cut answer
            raise ValueError(f"{what}: the answer is no JSON object")
        items = []
        for item in data.get("items") or []:
            item.setdefault("kind", res.kind)
            item.setdefault("apiVersion", res.api_version)
            items.append(item)
        return items, (data.get("metadata") or {}).get("resourceVersion", "")

    async def discover(self, group: str, version: str) -> dict:
        """The APIResourceList of group/version (NotFound when the server does not serve it)."""
        path = f"/apis/{quote(group, safe='')}/{quote(version, safe='')}" if group else f"/api/{quote(version, safe='')}"
        found = await self._call("GET", path, f"discover {group}/{version}")
        return found if isinstance(found, dict) else {}

    async def create(self, res: Resource, body: Mapping[str, Any], namespace: str | None = None) -> dict:
        name = (body.get("metadata") or {}).get("name") or (body.get("metadata") or {}).get("generateName", "")
        return await self._call("POST", res.path(None, namespace), self._what("create", res, name, namespace),
                                body=body, write=("create", res))

    async def patch(self, res: Resource, name: str, body: Mapping[str, Any], namespace: str | None = None,
                    subresource: str | None = None, content_type: str = MERGE) -> dict:
        """A patch; put metadata.resourceVersion in `body` to make it conditional (409 when stale)."""
        what = self._what("patch", res, name, namespace) + (f" ({subresource})" if subresource else "")
        return await self._call("PATCH", res.path(name, namespace, subresource), what, body=body,
                                content_type=content_type, write=("patch", res))

    async def delete(self, res: Resource, name: str, namespace: str | None = None, *,
                     propagation: str | None = None, resource_version: str | None = None) -> dict | None:
        """Delete; returns the object while finalizers hold it, None once gone. NotFound is raised."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            options["propagationPolicy"] = propagation
        if resource_version:
            options["preconditions"] = {"resourceVersion": resource_version}
        result = await self._call("DELETE", res.path(name, namespace), self._what("delete", res, name, namespace),
                                  body=options, write=("delete", res))
        if isinstance(result, Mapping) and result.get("kind") != "Status" and \
                (result.get("metadata") or {}).get("deletionTimestamp"):
            return dict(result)
        return None


async def with_retries(fn: Callable[[], Any], attempts: int = 3, delay: float = 0.2) -> Any:
    """Retry a call on 5xx and connection errors (not on 4xx: those are answers)."""
    for i in range(attempts):
        try:
            return await fn()
        except (aiohttp.ClientError, asyncio.TimeoutError):
            if i == attempts - 1:
                raise
        except ApiError as exc:
            if exc.status < 500 or i == attempts - 1:
                raise
        await asyncio.sleep(delay * (i + 1))
