"""The CloudProvider service's method handlers, with request bytes decoded defensively.

The generated `add_CloudProviderServicer_to_server` decodes each request with `FromString` before our
code runs: bytes that are no such message raised DecodeError inside gRPC, which answered UNKNOWN with
a Python exception's text and logged a traceback. Here an undecodable request reaches the servicer as
`Undecodable`, and the wrapper refuses it with INVALID_ARGUMENT naming the RPC and the message it expects.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import grpc
from google.protobuf.message import DecodeError

from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.wireinput import bounded_message

SERVICE = pb.DESCRIPTOR.services_by_name["CloudProvider"]


@dataclass(frozen=True)
class Undecodable:
    """Request bytes that are not a serialized `expected` message."""
    expected: str
    error: str


def decoder(message_cls: Any) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return message_cls.FromString(data)
        except DecodeError as exc:
            return Undecodable(message_cls.__name__, str(exc).rpartition(": ")[2] or "unreadable")
    return decode


def refusal(rpc: str, request: Undecodable) -> str:
    return bounded_message(f"{rpc}: the request is not a serialized {request.expected} ({request.error}); send the "
                           "message the externalgrpc proto defines for this RPC")


def add_servicer(servicer: Any, server: grpc.aio.Server, record: Callable[[str, str, float], None]) -> None:
    """Register every RPC of the service on `server`; `record(rpc, code, seconds)` counts refused garbage."""
    handlers = {}
    for method in SERVICE.methods:
        request_cls = getattr(pb, method.input_type.name)
        response_cls = getattr(pb, method.output_type.name)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            _refusing_undecodable(method.name, getattr(servicer, method.name), record),
            request_deserializer=decoder(request_cls), response_serializer=response_cls.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),))


def _refusing_undecodable(rpc: str, behaviour: Callable, record: Callable[[str, str, float], None]) -> Callable:
    async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, Undecodable):
            record(rpc, "INVALID_ARGUMENT", 0.0)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refusal(rpc, request))
        return await behaviour(request, context)
    return handle
