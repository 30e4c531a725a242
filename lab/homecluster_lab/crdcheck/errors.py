"""Field errors worded exactly as the Kubernetes API server words them (k8s.io/apimachinery field.Error).

The lab's API server returns these in a Status, and kubectl prints them, so a manifest refused in the
lab reads the same as one refused by a real cluster.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from homecluster import API_GROUP

REQUIRED = "Required value"
INVALID = "Invalid value"
NOT_SUPPORTED = "Unsupported value"
FORBIDDEN = "Forbidden"
TOO_LONG = "Too long"
TOO_MANY = "Too many"
DUPLICATE = "Duplicate value"

# Types whose message never shows the offending value (as in field.Error.ErrorBody)
_NO_VALUE = {REQUIRED, FORBIDDEN, TOO_LONG}


class _Omit:
    """field.OmitValueType: the error's message shows no value (a CEL rule failed on an object or array)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT = _Omit()


def go_value(value: object) -> str:
    """A value as Go's field.Error prints it: strings quoted, numbers and booleans bare, nil as null
    (json.Marshal's rendering; the string "null" is quoted like any string)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class FieldError:
    """One problem with one field, as a StatusCause (reason, message, field) of an Invalid response."""

    path: str  # "spec.maxSize", "spec.template.taints[0].effect"
    type: str  # REQUIRED, INVALID, NOT_SUPPORTED, FORBIDDEN, TOO_LONG, TOO_MANY, DUPLICATE
    detail: str = ""
    value: object = None
    reason: str = "FieldValueInvalid"

    def body(self) -> str:
        omit = self.type in _NO_VALUE or self.value is OMIT
        text = self.type if omit else f"{self.type}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.path or '<nil>'}: {self.body()}"


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, REQUIRED, detail, None, "FieldValueRequired")


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, INVALID, detail, value, "FieldValueInvalid")


def type_invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, INVALID, detail, value, "FieldValueTypeInvalid")


def not_supported(path: str, value: object, allowed: list[object]) -> FieldError:
    supported = ", ".join(json.dumps(str(a) if not isinstance(a, str) else a) for a in allowed)
    return FieldError(path, NOT_SUPPORTED, f"supported values: {supported}", value, "FieldValueNotSupported")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, FORBIDDEN, detail, None, "FieldValueForbidden")


def too_long(path: str, value: object, max_length: int) -> FieldError:
    unit = "byte" if max_length == 1 else "bytes"
    return FieldError(path, TOO_LONG, f"may not be more than {max_length} {unit}", value, "FieldValueTooLong")


def too_many(path: str, actual: int, max_items: int) -> FieldError:
    return FieldError(path, TOO_MANY, f"must have at most {max_items} items", actual, "FieldValueTooMany")


def duplicate(path: str, value: object) -> FieldError:
    return FieldError(path, DUPLICATE, "", value, "FieldValueDuplicate")


def aggregate(errors: list[FieldError]) -> str:
    """Errors joined as utilerrors.Aggregate does: one message alone, several as "[a, b]", duplicates once."""
    messages = list(dict.fromkeys(str(e) for e in errors))
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


def invalid_message(kind: str, name: str, errors: list[FieldError]) -> str:
    """The message of a 422 Invalid: 'NodeClaim.infra.homecluster.dev "x" is invalid: spec.slotRef: Required value'.

    A bare kind is taken to be one of ours; pass a qualified one ("Deployment.apps") for other groups.
    """
    qualified = kind if "." in kind else f"{kind}.{API_GROUP}"
    return f'{qualified} "{name}" is invalid: {aggregate(errors)}'
