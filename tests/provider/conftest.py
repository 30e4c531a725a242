"""Fixtures for the provider tests: a running server reached by the generated stub over TCP.

The server is always the real grpc.aio server on 127.0.0.1:<ephemeral>. Only the NodeClaim writes
are doubled (provider_objects.MemoryWriter) where no API server runs.
"""
from __future__ import annotations

from typing import Any

import grpc
import pytest
from provider_objects import start_server

from homecluster.kube.cache import Cache
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster.provider.server import ProviderServer


@pytest.fixture
async def provider():
    """Factory: start a plaintext provider on an ephemeral port; returns (server, stub). Stopped at teardown."""
    started: list[tuple[ProviderServer, grpc.aio.Channel]] = []

    async def make(cache: Cache, writer: Any = None, **kwargs: Any):
        server = await start_server(cache, writer, **kwargs)
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        started.append((server, channel))
        return server, pb_grpc.CloudProviderStub(channel)

    yield make
    for server, channel in started:
        await channel.close()
        await server.stop(0)
