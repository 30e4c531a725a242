"""The cluster-autoscaler "externalgrpc" cloud provider for homecluster pools.

cluster-autoscaler (``--cloud-provider=externalgrpc``) asks this server what the node groups are,
how big they should be, and to grow or shrink them. In the NodeClaim model a group's size is a
count of live NodeClaims, so the provider's only writes are creating and deleting NodeClaims;
everything else is read from memory.

Entry point for the operator (``homecluster run``)::

    from homecluster.provider import Cache, ProviderSettings, TLSFiles, serve

    cache = Cache()                      # feed it: cache.upsert(kind, obj) / cache.delete(kind, name)
                                         # and cache.replace(kind, objs) or cache.set_synced(kind)
                                         # after the initial list of each kind (GROUPS, SLOTS,
                                         # CLAIMS, NODES = corev1 Nodes), e.g. from kopf events
    server = await serve(cache, writer, ProviderSettings(model=settings),
                         address=":50051", tls=TLSFiles(cert, key, client_ca))
    ...
    await server.stop()

``serve(..., tls=None, insecure=True)`` serves plaintext (lab only; it logs a warning).
``writer`` is a ``ClaimWriter`` (the operator's is in operator/providerglue.py). When no operator
runs (the lab, tests), homecluster_lab.provider feeds a cache from its watches and writes claims through
that same ClaimWriter.
The health service (grpc.health.v1) answers NOT_SERVING until every kind has been listed once.

Modules:
- ``proto/``      our .proto files and the committed generated code (``homecluster proto``)
- ``cache``       the thread-safe store and its indexes
- ``logic``       pure decisions: groups, node -> slot, target size, increase/decrease/delete plans, instances
- ``template``    the template Node as Kubernetes protobuf bytes
- ``options``     NodeGroupGetOptions in both duration encodings
- ``pricing``     node and pod prices from power draw and energy price
- ``writer``      the NodeClaim body and the API writes
- ``actions``     the write RPCs under per-group locks and in-memory reservations
- ``views``       memoized read answers
- ``server``      the grpc.aio server, health, TLS
- ``generate``    ``homecluster proto``
"""
from __future__ import annotations

import importlib
from typing import Any

# Lazy exports: `homecluster proto` imports homecluster.provider.generate, and must work even when
# the generated modules are missing or stale, so nothing here imports them eagerly.
_EXPORTS = {
    "ProviderSettings": "homecluster.provider.actions",
    "Cache": "homecluster.kube.cache", "GROUPS": "homecluster.kube.cache",
    "SLOTS": "homecluster.kube.cache", "CLAIMS": "homecluster.kube.cache",
    "NODES": "homecluster.kube.cache",
    "ProviderServer": "homecluster.provider.server", "TLSFiles": "homecluster.provider.tlsfiles",
    "serve": "homecluster.provider.server",
    "ClaimWriter": "homecluster.provider.writer",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'homecluster.provider' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
