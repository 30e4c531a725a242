"""The one error type the provider's pure logic raises, carrying the gRPC status to answer with.

Logic stays free of grpc imports; the server maps `code` (a grpc.StatusCode name) onto the wire.
Every message names the group (or node) and the rule, because CA logs it verbatim and a person
reads it in CA's log or event, far from this code.
"""
from __future__ import annotations


class ProviderError(Exception):
    """A refusal with a gRPC status code name (e.g. "NOT_FOUND") and a message for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"ProviderError({self.code}, {self.message!r})"


def not_found(message: str) -> ProviderError:
    return ProviderError("NOT_FOUND", message)


def invalid(message: str) -> ProviderError:
    return ProviderError("INVALID_ARGUMENT", message)


def precondition(message: str) -> ProviderError:
    return ProviderError("FAILED_PRECONDITION", message)


def unimplemented(message: str) -> ProviderError:
    return ProviderError("UNIMPLEMENTED", message)


def unavailable(message: str) -> ProviderError:
    return ProviderError("UNAVAILABLE", message)
