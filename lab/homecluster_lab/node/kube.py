"""A thin dict-in, dict-out Kubernetes client for the lab's nodes and Job executor, on kubernetes_asyncio's transport.

The lab's kubelets (node/kubelet.py, node/boundpods.py), the runner and the Job executor read and write a
handful of object kinds and need none of the typed models: raw JSON keeps each write's overhead low and never
trips over the typed client's strict model checks. Auth, TLS and the server address come from the kubeconfig,
through kubernetes_asyncio.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

MERGE_PATCH = "application/merge-patch+json"


class KubeError(Exception):
    """A non-2xx answer; `status` is the HTTP code, `body` the server's Status object (if JSON)."""

    def __init__(self, status: int, body: Any, what: str):
        self.status, self.body = status, body
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{what}: HTTP {status}: {message}")


def job_path(namespace: str, name: str = "", sub: str = "") -> str:
    base = f"/apis/batch/v1/namespaces/{quote(namespace)}/jobs"
    return base + (f"/{quote(name)}" if name else "") + (f"/{sub}" if sub else "")


def pod_path(namespace: str, name: str = "", sub: str = "") -> str:
    base = f"/api/v1/namespaces/{quote(namespace)}/pods"
    return base + (f"/{quote(name)}" if name else "") + (f"/{sub}" if sub else "")


def core_path(kind_plural: str, namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace)}/{kind_plural}/{quote(name)}"


class Kube:
    """Async JSON requests against the API server named by a kubeconfig. Use as an async context manager."""

    def __init__(self, kubeconfig_path: str):
        self._kubeconfig_path = kubeconfig_path
        self._api: client.ApiClient | None = None

    async def __aenter__(self) -> "Kube":
        cfg = client.Configuration()
        await config.load_kube_config(config_file=str(self._kubeconfig_path), client_configuration=cfg)
        self._api = client.ApiClient(configuration=cfg)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None

    async def _raw(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                   content_type: str = "application/json", timeout: float | None = 30):
        assert self._api is not None, "use Kube as an async context manager"
        headers = {"Accept": "application/json", "Content-Type": content_type}
        return await self._api.call_api(
            path, method, query_params=list((query or {}).items()), header_params=headers,
            body=body, auth_settings=["BearerToken"], _preload_content=False,
            _request_timeout=timeout,
        )

    async def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                      content_type: str = "application/json") -> dict[str, Any]:
        try:
            resp = await self._raw(method, path, body, query, content_type)
        except ApiException as exc:  # the transport raises on some errors even unbuffered
            raise KubeError(exc.status or 0, exc.body, f"{method} {path}") from None
        try:
            data = await resp.read()
        finally:
            resp.release()
        try:
            decoded = json.loads(data) if data else {}
        except ValueError:
            decoded = data.decode(errors="replace")
        if not 200 <= resp.status <= 299:
            raise KubeError(resp.status, decoded, f"{method} {path}")
        return decoded

    async def get(self, path: str, query: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.request("GET", path, query=query)

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.request("POST", path, body)

    async def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.request("PATCH", path, body, content_type=MERGE_PATCH)

    async def delete(self, path: str, propagation: str | None = "Background") -> dict[str, Any] | None:
        """Delete; None when it was already gone (a delete that finds nothing is not an error)."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation:
            body["propagationPolicy"] = propagation
        try:
            return await self.request("DELETE", path, body)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    async def watch(self, path: str, resource_version: str, timeout_seconds: int = 240,
                    query: dict[str, Any] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Yield watch events ({type, object}) from resource_version until the server ends the stream.
        `query` adds parameters (a fieldSelector: a node's kubelet may watch only the pods bound to it)."""
        query = {**(query or {}), "watch": "true", "resourceVersion": resource_version,
                 "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout_seconds)}
        resp = await self._raw("GET", path, query=query, timeout=timeout_seconds + 30)
        try:
            if not 200 <= resp.status <= 299:
                body = await resp.read()
                try:
                    body = json.loads(body)
                except ValueError:
                    pass
                raise KubeError(resp.status, body, f"WATCH {path}")
            buffer = b""
            async for chunk in resp.content.iter_any():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
            if buffer.strip():
                yield json.loads(buffer)
        finally:
            resp.release()
