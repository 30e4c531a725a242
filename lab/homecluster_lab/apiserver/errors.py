"""API errors as the real API server words them: a `Status` object (kind Status, apiVersion v1).

Clients key on `reason` and `code` (kopf retries on 409/422, kubectl prints `Error from server (<Reason>)`),
so each constructor mirrors the matching helper of k8s.io/apimachinery/pkg/api/errors.
"""
from __future__ import annotations

from typing import Any


class APIError(Exception):
    """An error answered to the client as a Failure `Status` with an HTTP code."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message}
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(resource: str, group: str, name: str) -> APIError:
    return APIError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                    _details(name, group, resource))


def already_exists(resource: str, group: str, name: str) -> APIError:
    return APIError(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                    _details(name, group, resource))


def conflict(resource: str, group: str, name: str,
             why: str = "the object has been modified; please apply your changes to the latest version and try again"
             ) -> APIError:
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
                    _details(name, group, resource))


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]], message: str | None = None) -> APIError:
    """422 Invalid. `causes` are {reason, message, field}; the message joins them like field.ErrorList."""
    if message is None:
        parts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
        joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        message = f'{_qualified(kind, group)} "{name}" is invalid: {joined}'
    details = _details(name, group, kind)
    details["causes"] = causes
    return APIError(422, "Invalid", message, details)


def patch_rejected() -> APIError:
    """A JSON patch that cannot be applied (including a failed `test` op): 422, as kopf expects."""
    return APIError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> APIError:
    return APIError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(accepted: list[str]) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(accepted))


def forbidden(resource: str, group: str, name: str, why: str, kind: str | None = None) -> APIError:
    target = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return APIError(403, "Forbidden", f"{target} is forbidden: {why}", _details(name, group, kind or resource))


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def too_many_requests(message: str, causes: list[dict[str, str]], retry_after: int = 0) -> APIError:
    details: dict[str, Any] = {"causes": causes}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return APIError(429, "TooManyRequests", message, details)


def gone(message: str) -> APIError:
    return APIError(410, "Expired", message)


def timeout() -> APIError:
    return APIError(504, "Timeout", "Timeout: request did not complete within the allotted timeout",
                    {"causes": [{"reason": "UnexpectedServerResponse", "message": "request timed out"}]})


def status_success(name: str, group: str, resource: str, uid: str | None = None, code: int = 200) -> dict[str, Any]:
    details = _details(name, group, resource)
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
