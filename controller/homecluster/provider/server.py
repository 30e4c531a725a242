"""The gRPC server: CA's CloudProvider service plus the standard gRPC health service.

- Read RPCs answer from memory (views.Views) and make no API call at all.
- Write RPCs go through actions.Scaler, bounded by min(settings.rpc_budget, the call's deadline).
- Nothing is answered before the cache has listed every kind once: read RPCs and Refresh return
  UNAVAILABLE ("cache not synced"), because an answer from a half-loaded cache (target size 0,
  unknown nodes) would make CA scale on fiction. Refresh failing is what stops CA's loop, which is
  exactly what we want then; after the first sync Refresh never fails (a watch reconnect keeps the
  last consistent view).
- Health: NOT_SERVING for "" and for the CloudProvider service until the cache is synced, SERVING
  after, NOT_SERVING again if it ever loses sync and on shutdown.
- Transport: mTLS (server cert + key, client certs required and verified against a client CA) by
  default, re-read from the files when they change (tlsfiles.py: a renewed certificate is served on
  the next connection, no restart); plaintext only when asked explicitly, with a warning.
- Metrics: every CloudProvider call goes through `_call`, which counts it by method and gRPC status
  code and times it (homecluster_provider_rpcs_total, homecluster_provider_rpc_seconds) on the
  Metrics object it is handed -- `homecluster run` hands it the one it serves, so the provider and
  the controller share one registry. Recording is in memory: a read RPC still makes no API call.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from homecluster.metrics import Metrics
from homecluster.provider.actions import ProviderSettings, Scaler, utcnow
from homecluster.kube.cache import Cache
from homecluster.provider.errors import ProviderError, invalid, unavailable
from homecluster.provider.options import group_options
from homecluster.provider.pricing import node_price, pod_price
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster.provider.proto import k8s_core_pb2 as core
from homecluster.provider.tlsfiles import TLSFiles
from homecluster.provider.wirehandlers import add_servicer
from homecluster.provider.wireinput import bounded_message as _bounded_message
from homecluster.provider.wireinput import group_id as _group_id
from homecluster.provider.wireinput import when as _when
from homecluster.provider.views import Views
from homecluster.provider.logic import require_group

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["CloudProvider"].full_name
DEFAULT_ADDRESS = ":50051"


class CloudProviderServicer(pb_grpc.CloudProviderServicer):
    """Thin adapter: request -> views/scaler/pricing -> response; ProviderError -> gRPC status."""

    def __init__(self, cache: Cache, scaler: Scaler, views: Views, settings: ProviderSettings,
                 metrics: Metrics | None = None) -> None:
        self.cache, self.scaler, self.views, self.settings = cache, scaler, views, settings
        self.metrics = metrics if metrics is not None else Metrics()

    # -- helpers ---------------------------------------------------------------------------
    def _ready(self, rpc: str) -> None:
        if not self.cache.synced:
            missing = [k for k, ok in self.cache.synced_kinds().items() if not ok]
            raise unavailable(f"{rpc}: the provider's cache is not synced yet (still listing {', '.join(missing)}); "
                              "retry in a few seconds")

    def _budget(self, context: grpc.aio.ServicerContext) -> float:
        remaining = context.time_remaining()
        budget = self.settings.rpc_budget
        if remaining is not None:
            budget = min(budget, max(0.1, remaining - 0.2))
        return budget

    async def _call(self, rpc: str, context: grpc.aio.ServicerContext, fn: Callable[[], Any], *,
                    needs_sync: bool = True) -> Any:
        """Answer one RPC: refuse while unsynced, map ProviderError to its gRPC status, and record the
        call's status code and latency (whatever the outcome, including a client that went away)."""
        started = time.monotonic()
        code = "OK"
        try:
            if needs_sync:
                self._ready(rpc)
            result = fn()
            if asyncio.iscoroutine(result):
                result = await result
            return result
        except ProviderError as exc:
            code, message = exc.code, _bounded_message(exc.message)
            if exc.code not in ("UNIMPLEMENTED", "UNAVAILABLE", "NOT_FOUND"):
                log.warning("%s refused: %s", rpc, exc.message)
        except asyncio.CancelledError:
            code = "CANCELLED"
            raise
        except Exception:
            code = "INTERNAL"
            log.exception("%s failed unexpectedly", rpc)
            message = f"{rpc}: internal error in the homecluster provider; see the operator's log"
        finally:
            # recorded before the refusal is sent: a client that saw the status sees it counted too
            self.metrics.record_rpc(rpc, code, time.monotonic() - started)
        await context.abort(grpc.StatusCode[code], message)

    # -- cluster-wide ----------------------------------------------------------------------
    async def NodeGroups(self, request, context):
        return await self._call("NodeGroups", context, self.views.node_groups)

    async def NodeGroupForNode(self, request, context):
        node = request.node
        return await self._call("NodeGroupForNode", context, lambda: self.views.for_node(node.providerID, node.name))

    async def PricingNodePrice(self, request, context):
        def answer():
            now = datetime.now(timezone.utc)
            start = _when(request, "start", now)
            end = _when(request, "end", start)
            with self.cache.lock:
                price = node_price(self.cache, request.node.providerID, request.node.name,
                                   dict(request.node.labels), start, end)
            return pb.PricingNodePriceResponse(price=price)
        return await self._call("PricingNodePrice", context, answer)

    async def PricingPodPrice(self, request, context):
        def answer():
            data = request.pod_bytes or request.pod
            if not data:
                raise invalid("PricingPodPrice: the request carries no pod (pod_bytes, field 4, is empty)")
            try:
                pod = core.Pod.FromString(data)
            except DecodeError as exc:
                raise invalid(f"PricingPodPrice: pod_bytes (field 4) is not a serialized v1.Pod: {exc}") from None
            now = datetime.now(timezone.utc)
            start = _when(request, "start", now)
            end = _when(request, "end", start)
            with self.cache.lock:
                return pb.PricingPodPriceResponse(price=pod_price(self.cache, pod, start, end))
        return await self._call("PricingPodPrice", context, answer)

    async def GPULabel(self, request, context):
        return await self._call("GPULabel", context, lambda: pb.GPULabelResponse(label=self.views.gpu_label()))

    async def GetAvailableGPUTypes(self, request, context):
        def answer():
            response = pb.GetAvailableGPUTypesResponse()
            for gpu_type in self.views.gpu_types():
                response.gpuTypes[gpu_type].SetInParent()
            return response
        return await self._call("GetAvailableGPUTypes", context, answer)

    async def Cleanup(self, request, context):
        # nothing to release: claims outlive the autoscaler on purpose; answered even before the sync
        return await self._call("Cleanup", context, pb.CleanupResponse, needs_sync=False)

    async def Refresh(self, request, context):
        return await self._call("Refresh", context, pb.RefreshResponse)

    # -- per group -------------------------------------------------------------------------
    async def NodeGroupTargetSize(self, request, context):
        return await self._call("NodeGroupTargetSize", context,
                                lambda: pb.NodeGroupTargetSizeResponse(
                                    targetSize=self.views.target_size(_group_id(request.id))))

    async def NodeGroupIncreaseSize(self, request, context):
        async def answer():
            await self.scaler.increase(_group_id(request.id), request.delta, self._budget(context))
            return pb.NodeGroupIncreaseSizeResponse()
        return await self._call("NodeGroupIncreaseSize", context, answer)

    async def NodeGroupDeleteNodes(self, request, context):
        async def answer():
            nodes = [(n.providerID, n.name) for n in request.nodes]
            await self.scaler.delete_nodes(_group_id(request.id), nodes, self._budget(context))
            return pb.NodeGroupDeleteNodesResponse()
        return await self._call("NodeGroupDeleteNodes", context, answer)

    async def NodeGroupDecreaseTargetSize(self, request, context):
        async def answer():
            await self.scaler.decrease(_group_id(request.id), request.delta, self._budget(context))
            return pb.NodeGroupDecreaseTargetSizeResponse()
        return await self._call("NodeGroupDecreaseTargetSize", context, answer)

    async def NodeGroupNodes(self, request, context):
        return await self._call("NodeGroupNodes", context, lambda: self.views.nodes(_group_id(request.id)))

    async def NodeGroupTemplateNodeInfo(self, request, context):
        return await self._call("NodeGroupTemplateNodeInfo", context, lambda: self.views.template(_group_id(request.id)))

    async def NodeGroupGetOptions(self, request, context):
        def answer():
            with self.cache.lock:
                group = require_group(self.cache, _group_id(request.id))
                options = group_options(group, request.defaults, self.settings.model)
            return pb.NodeGroupAutoscalingOptionsResponse(nodeGroupAutoscalingOptions=options)
        return await self._call("NodeGroupGetOptions", context, answer)


def _bind_address(address: str) -> str:
    """":50051" -> "[::]:50051" (all interfaces), anything else as given."""
    return f"[::]{address}" if address.startswith(":") else address


class ProviderServer:
    """A running (or runnable) provider: the gRPC server, its health service and its state."""

    def __init__(self, cache: Cache, writer: Any, settings: ProviderSettings | None = None,
                 address: str = DEFAULT_ADDRESS, tls: TLSFiles | None = None, *, insecure: bool = False,
                 clock: Callable[[], datetime] = utcnow, metrics: Metrics | None = None) -> None:
        if tls is None and not insecure:
            raise ValueError("the provider needs TLS files (server cert, key, client CA) or insecure=True "
                             "to serve plaintext; refusing to guess")
        self.cache = cache
        self.settings = settings or ProviderSettings()
        self.metrics = metrics if metrics is not None else Metrics()  # the operator passes the one it serves
        self.address = address
        self.tls = tls
        self.insecure = tls is None
        self.scaler = Scaler(cache, writer, self.settings, clock)
        self.views = Views(cache, self.scaler, self.settings, clock)
        self.health = health.aio.HealthServicer()
        self.port: int | None = None
        self._server: grpc.aio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> int:
        """Bind and start serving; return the bound port (useful with port 0)."""
        self._loop = asyncio.get_running_loop()
        # gRPC binds with SO_REUSEPORT by default: a second operator told the same port would start too and share
        # the autoscaler's connections with this one; without it, the second one's bind fails
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        add_servicer(CloudProviderServicer(self.cache, self.scaler, self.views, self.settings, self.metrics), server,
                     self.metrics.record_rpc)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        await self._set_health(self.cache.synced)
        self.cache.on_synced_change(self._synced_changed)
        bind = _bind_address(self.address)
        if self.tls is not None:
            self.port = server.add_secure_port(bind, self.tls.credentials())
        else:
            log.warning("the autoscaler provider serves PLAINTEXT gRPC on %s: anyone who reaches this port can "
                        "create and delete NodeClaims; use mTLS outside a lab", bind)
            self.port = server.add_insecure_port(bind)
        if not self.port:
            raise OSError(f"the autoscaler provider could not bind {bind!r}; is the port in use?")
        await server.start()
        self._server = server
        await self._set_health(self.cache.synced)  # a sync that landed while binding
        # the port it got (port 0 asks the kernel for one): what a lab or a test reads to reach it
        log.info("autoscaler provider listening on %s:%d (%s)", bind.rsplit(":", 1)[0], self.port,
                 "plaintext" if self.insecure else "mTLS")
        return self.port

    async def stop(self, grace: float | None = 1.0) -> None:
        if self._server is not None:
            await self.health.enter_graceful_shutdown()
            await self._server.stop(grace)
            self._server = None

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()

    async def _set_health(self, synced: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if synced else health_pb2.HealthCheckResponse.NOT_SERVING
        await self.health.set("", status)
        await self.health.set(SERVICE_NAME, status)

    def _synced_changed(self, synced: bool) -> None:
        """Cache listener; may run on any thread, so hop onto the server's loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        def schedule() -> None:
            loop.create_task(self._set_health(synced))
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            schedule()
        else:
            loop.call_soon_threadsafe(schedule)


async def serve(cache: Cache, writer: Any, settings: ProviderSettings | None = None,
                address: str = DEFAULT_ADDRESS, tls: TLSFiles | None = None, *, insecure: bool = False,
                clock: Callable[[], datetime] = utcnow, metrics: Metrics | None = None) -> ProviderServer:
    """Build and start a provider server; `await server.stop()` to end it. Pass `metrics` to record its
    calls on a registry someone serves (homecluster run passes its own)."""
    server = ProviderServer(cache, writer, settings, address, tls, insecure=insecure, clock=clock, metrics=metrics)
    await server.start()
    return server
