"""Waiting for the lab's servers to be ready: a port that accepts connections, a gRPC health SERVING.

Each wait ends with a LabError that says what did not come up and where its log is.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from homecluster_lab.config import LabError, split_address


async def wait_listening(address: str, timeout: float, what: str, log_path: str) -> None:
    """Until something accepts TCP connections on `address`; `what` names it in the error."""
    host, port = split_address(address)
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection(host, port)
            writer.close()
            await writer.wait_closed()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise LabError(f"{what} at {address} did not listen within {timeout:g}s; see {log_path}") from None
            await asyncio.sleep(0.05)


async def wait_serving(address: str, timeout: float, exited: Callable[[], int | None],
                       log_tail: Callable[[], str], log_path: str, tls: Any = None) -> None:
    """Until the provider's health service at `address` says SERVING (its cache has listed every kind).

    `exited()` is the operator's exit code once it has exited (then `log_tail()` goes into the error)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout
    channel = (grpc.aio.secure_channel(address, tls.channel_credentials(), options=tls.channel_options()) if tls
               else grpc.aio.insecure_channel(address))  # tls: a k8s.provider_tls.ProviderTLS
    async with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            rc = exited()
            if rc is not None:
                raise LabError(f"the operator (homecluster run) exited with code {rc} before serving; "
                               f"its last lines:\n{log_tail()}")
            try:
                answer = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            if time.monotonic() > deadline:
                raise LabError(f"the autoscaler provider at {address} did not report SERVING within "
                               f"{timeout:g}s; see {log_path}")
            await asyncio.sleep(0.1)
