"""LabAPIServer: the in-memory API server's lifecycle and the helpers tests use to reach into it."""
from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import tempfile
import threading
from pathlib import Path
from typing import Any

from aiohttp import web

from .. import yamlfiles
from . import kubeconfig
from .admission import WebhookCaller
from .audit import AuditEntry, AuditLog
from .engine import Engine, Result, WriteOptions
from .faults import Faults
from .gc import USER_AGENT as GC_USER_AGENT
from .gc import Collector
from .http import Handler
from .resources import Registry, ResourceType, builtin_types
from .store import Store

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
HELPER_USER_AGENT = "lab-test-helper"


class LabAPIServer:
    """An in-memory Kubernetes API server on loopback (see the package docstring for what it implements).

    Runs on the caller's event loop (`async with LabAPIServer() as api:`). Code that needs a blocking client
    in the same process (the sync `kubernetes` client, subprocess.run of kubectl) must not block that loop:
    use `BackgroundLabAPIServer`, which runs the server on a thread of its own.
    """

    def __init__(self, *, crd_dir: Path | None = None, host: str = "127.0.0.1", port: int = 0,
                 workdir: Path | None = None, gc_interval: float = 0.2, tls: bool = False,
                 history_limit: int = 10000, bookmark_interval: float = 1.0):
        self.crd_dir, self.host, self.port = crd_dir, host, port
        self.gc_interval, self.tls, self.bookmark_interval = gc_interval, tls, bookmark_interval
        self._workdir_given = workdir
        self.workdir: Path | None = workdir
        self.registry = Registry(builtin_types())
        self.store = Store(history_limit)
        self.audit = AuditLog()
        self.faults = Faults()
        self.webhooks = WebhookCaller(self.faults)
        self.engine = Engine(self.registry, self.store, self.webhooks)
        self.collector = Collector(self.engine, self._record_internal, gc_interval)
        self.url = ""
        self.address = ""
        self.kubeconfig_path = Path()
        self.ca_pem: bytes | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._gc_task: asyncio.Task | None = None

    # lifecycle ---------------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        for ns in INITIAL_NAMESPACES:
            await self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if self.crd_dir is not None:
            for crd in load_crds(Path(self.crd_dir)):
                await self.create(crd)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", Handler(self).__call__)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        ssl_ctx = self._ssl_context() if self.tls else None
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_ctx)
        await site.start()
        sock = site._server.sockets[0]  # type: ignore[union-attr]
        self.port = sock.getsockname()[1]
        self.address = f"{self.host}:{self.port}"
        self.url = f"{'https' if self.tls else 'http'}://{self.address}"
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="homecluster-lab-api-"))
        self.kubeconfig_path = kubeconfig.write(self.workdir / "kubeconfig", self.url, self.ca_pem)
        self._gc_task = asyncio.create_task(self.collector.run(), name="lab-controller-manager")

    def _ssl_context(self) -> ssl.SSLContext:
        from homecluster import tls as certs
        ca = certs.make_ca("homecluster-lab-ca")
        leaf = certs.issue(ca, "lab-apiserver", [self.host, "localhost"])
        tmp = Path(tempfile.mkdtemp(prefix="homecluster-lab-tls-"))
        try:
            cert, key = leaf.write(tmp, "apiserver")
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(cert, key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.ca_pem = ca.cert_pem
        return ctx

    async def stop(self) -> None:
        if self._gc_task is not None:
            self._gc_task.cancel()
            try:
                await self._gc_task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
            self._gc_task = None
        for w in list(self.store.watchers):
            self.store.unsubscribe(w)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.webhooks.close()
        if self._workdir_given is None and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    async def __aenter__(self) -> "LabAPIServer":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # knobs -------------------------------------------------------------------------------------------------
    @property
    def webhook_services(self) -> dict[str, str]:
        """"namespace/name:port" of a webhook's Service -> "host:port" where it really listens."""
        return self.webhooks.service_addresses

    def compact(self) -> None:
        """Forget the watch history, as etcd compaction does: watches from older versions get 410 Gone."""
        self._threadsafe(self.store.compact)

    # store access for tests (run on the server's loop; from another thread use BackgroundLabAPIServer) ------
    def resource(self, resource: str) -> ResourceType:
        """Resolve "pods", "jobs.batch", "nodes.infra.homecluster.dev", a kind or a short name."""
        name, _, group = resource.partition(".")
        candidates = [rt for rt in self.registry.all()
                      if name in (rt.plural, rt.singular, rt.kind, rt.kind.lower()) or name in rt.short_names]
        if group:
            candidates = [rt for rt in candidates if rt.group == group]
        if not candidates:
            raise KeyError(f"no resource {resource!r} is served; check the plural and group (e.g. 'jobs.batch')")
        candidates.sort(key=lambda rt: (rt.group != "", rt.group))
        return candidates[0]

    def get(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        rt = self.resource(resource)
        return self.store.get(rt.key, namespace if rt.namespaced else "", name)

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.store.list(self.resource(resource).key, namespace)

    async def create(self, obj: dict[str, Any], *, keep_status: bool = False) -> dict[str, Any]:
        """Create through the API pipeline (validation, admission). keep_status also writes `status` through
        /status afterwards, as a kubelet or controller would."""
        rt = self.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if rt is None:
            raise KeyError(f"{obj.get('apiVersion')}/{obj.get('kind')} is not served")
        ns = (obj.get("metadata") or {}).get("namespace", "default") if rt.namespaced else ""
        result = await self.engine.create(rt, obj["apiVersion"].rpartition("/")[2], ns, obj, WriteOptions())
        self._record_helper("create", rt, result.body, result)
        if keep_status and "status" in obj and rt.status_subresource:
            return await self.patch(f"{rt.plural}.{rt.group}" if rt.group else rt.plural, result.body["metadata"]
                                    ["name"], {"status": obj["status"]}, namespace=ns, subresource="status")
        return result.body

    async def patch(self, resource: str, name: str, patch: Any, *, namespace: str = "", subresource: str = "",
                    patch_type: str = "application/merge-patch+json") -> dict[str, Any]:
        rt = self.resource(resource)
        result = await self.engine.patch(rt, rt.storage_version, namespace if rt.namespaced else "", name,
                                         patch_type, json.dumps(patch).encode(), WriteOptions(), subresource)
        self._record_helper("patch", rt, result.body, result, subresource)
        return result.body

    async def delete(self, resource: str, name: str, *, namespace: str = "",
                     propagation: str | None = None) -> dict[str, Any]:
        rt = self.resource(resource)
        options = {"propagationPolicy": propagation} if propagation else {}
        obj = self.get(resource, name, namespace)
        result = await self.engine.delete(rt, rt.storage_version, namespace if rt.namespaced else "", name,
                                          options, WriteOptions())
        self._record_helper("delete", rt, obj or result.body, result)
        return result.body

    # request log of internal writes -----------------------------------------------------------------------
    def _record_helper(self, verb: str, rt: ResourceType, obj: dict[str, Any], result: Result,
                       subresource: str = "") -> None:
        md = obj.get("metadata") or {}
        self.audit.record(AuditEntry(verb, rt.plural, rt.group, md.get("namespace", ""), md.get("name", ""),
                                     subresource, HELPER_USER_AGENT, _now(), result.code, result.rv))

    def _record_internal(self, verb: str, rt: ResourceType, obj: dict[str, Any], rv: str) -> None:
        md = obj.get("metadata") or {}
        self.audit.record(AuditEntry(verb, rt.plural, rt.group, md.get("namespace", ""), md.get("name", ""), "",
                                     GC_USER_AGENT, _now(), 200, rv))

    def _threadsafe(self, fn: Any) -> None:
        if self.loop is not None and self.loop.is_running() and not _in_loop(self.loop):
            self.loop.call_soon_threadsafe(fn)
        else:
            fn()


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _now() -> float:
    import time
    return time.time()


def load_crds(directory: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in the YAML files of `directory` (kustomization files are skipped)."""
    if not directory.is_dir():
        return []
    return yamlfiles.custom_resource_definitions(sorted(directory.glob("*.y*ml")))


class BackgroundLabAPIServer:
    """Runs a LabAPIServer on its own thread and loop, for blocking clients and synchronous tests.

        with BackgroundLabAPIServer(crd_dir=...) as bg:
            subprocess.run(["kubectl", "--kubeconfig", bg.server.kubeconfig_path, ...])
            bg.call(bg.server.create(obj))   # run a helper coroutine on the server's loop
    """

    def __init__(self, **kwargs: Any):
        self.server = LabAPIServer(**kwargs)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lab-apiserver", daemon=True)

    def call(self, awaitable: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(awaitable, self._loop).result(timeout)

    def start(self) -> LabAPIServer:
        self._thread.start()
        self.call(self.server.start())
        return self.server

    def stop(self) -> None:
        try:
            self.call(self.server.stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()

    def __enter__(self) -> "BackgroundLabAPIServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
