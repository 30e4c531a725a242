"""Structural OpenAPI v3 schemas (apiextensions.k8s.io/v1) from the pydantic models.

Pydantic's own JSON schema is not structural (it uses $ref and anyOf for Optional), so this module
walks the type annotations itself. The output obeys the structural rules the API server enforces:
every node has a type (the int-or-string quantity is the one allowed anyOf), no $ref, no
additionalProperties next to properties, and nothing preserves unknown fields.
"""
from __future__ import annotations

import enum
import inspect
import types
import typing
from datetime import datetime
from typing import Any, Union

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from homecluster.api.types import SchemaExtra

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The object schema of a model: its fields as properties, required ones listed, model-level CEL rules."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        properties[key] = field_schema(field)
        if field.is_required():
            required.append(key)
    out: dict[str, Any] = {"type": "object"}
    doc = _doc(model)
    if doc:
        out["description"] = doc
    out["properties"] = properties
    if required:
        out["required"] = required
    extra = model.model_config.get("json_schema_extra")
    if isinstance(extra, dict):
        out.update(_plain(extra))
    return _ordered(out)


def field_schema(field: FieldInfo) -> dict[str, Any]:
    """The schema of one field: its type's schema plus the field's constraints, default and description."""
    out = type_schema(field.annotation, list(field.metadata))
    if field.description:
        # a scalar type's own words (how to write a duration) follow the field's; a model's docstring
        # is replaced by the field's description
        own = out.get("description") if out.get("type") not in ("object", "array") else None
        out["description"] = field.description + (f" {own}" if own else "")
    default = field.default
    if default is not PydanticUndefined and default is not None and field.default_factory is None:
        out["default"] = _plain(default)
    if isinstance(field.json_schema_extra, dict):
        out.update(_plain(field.json_schema_extra))
    return _ordered(out)


def type_schema(tp: Any, metadata: list[Any] | None = None) -> dict[str, Any]:
    """The schema of a type annotation, with the constraints found in its Annotated metadata."""
    metadata = list(metadata or [])
    tp, metadata = _unwrap(tp, metadata)
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return type_schema(members[0], metadata)
        if set(members) == {int, str}:
            out: dict[str, Any] = {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                   "x-kubernetes-int-or-string": True}
            return _constrain(out, metadata, "string")
        raise TypeError(f"unions other than Optional[X] and int | str are not structural: {tp!r}")
    if origin is typing.Literal:
        values = [_plain(v) for v in typing.get_args(tp)]
        return _constrain({"type": "string", "enum": values}, metadata, "string")
    if origin is list:
        (item,) = typing.get_args(tp)
        return _constrain({"type": "array", "items": type_schema(item)}, metadata, "array")
    if origin is dict:
        key, value = typing.get_args(tp)
        if key is not str:
            raise TypeError(f"map keys must be strings: {tp!r}")
        return _constrain({"type": "object", "additionalProperties": type_schema(value)}, metadata, "object")
    if inspect.isclass(tp) and issubclass(tp, BaseModel):
        return _constrain(model_schema(tp), metadata, "object")
    if inspect.isclass(tp) and issubclass(tp, enum.Enum):
        return _constrain({"type": "string", "enum": [m.value for m in tp]}, metadata, "string")
    if tp is datetime:
        return _constrain({"type": "string", "format": "date-time"}, metadata, "string")
    if tp in _SCALARS:
        return _constrain({"type": _SCALARS[tp]}, metadata, _SCALARS[tp])
    raise TypeError(f"no structural schema for {tp!r}")


def _unwrap(tp: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """Peel Annotated layers (and the FieldInfo objects inside them) into one metadata list."""
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp, inner = args[0], list(args[1:])
        metadata = _expand(inner) + metadata
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1 and typing.get_origin(members[0]) is typing.Annotated:
            return _unwrap(members[0], metadata)
    return tp, _expand(metadata)


def _expand(metadata: list[Any]) -> list[Any]:
    out: list[Any] = []
    for m in metadata:
        if isinstance(m, FieldInfo):
            out.extend(m.metadata)
            if m.description:
                out.append(SchemaExtra(description=m.description))
        else:
            out.append(m)
    return out


def _constrain(out: dict[str, Any], metadata: list[Any], kind: str) -> dict[str, Any]:
    """Translate annotated_types / pydantic constraints and SchemaExtra markers into keywords."""
    length = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems"),
              "object": ("minProperties", "maxProperties")}.get(kind)
    for m in metadata:
        if isinstance(m, SchemaExtra):
            out.update(_plain(m.as_dict()))
        elif isinstance(m, at.Ge):
            out["minimum"] = m.ge
        elif isinstance(m, at.Gt):
            out["minimum"], out["exclusiveMinimum"] = m.gt, True
        elif isinstance(m, at.Le):
            out["maximum"] = m.le
        elif isinstance(m, at.Lt):
            out["maximum"], out["exclusiveMaximum"] = m.lt, True
        elif isinstance(m, at.MinLen) and length:
            out[length[0]] = m.min_length
        elif isinstance(m, at.MaxLen) and length:
            out[length[1]] = m.max_length
        elif getattr(m, "pattern", None):
            out["pattern"] = m.pattern
        # other metadata (validator functions) has no schema counterpart
    return _ordered(out)


_ORDER = ["description", "type", "format", "enum", "default", "minimum", "exclusiveMinimum", "maximum",
          "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "minProperties",
          "maxProperties", "anyOf", "x-kubernetes-int-or-string", "items", "x-kubernetes-list-type",
          "x-kubernetes-list-map-keys", "additionalProperties", "properties", "required",
          "x-kubernetes-validations"]


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    """Keywords in a stable, readable order (description first, validations last)."""
    rank = {k: i for i, k in enumerate(_ORDER)}
    return dict(sorted(schema.items(), key=lambda kv: rank.get(kv[0], len(_ORDER))))


def _doc(model: type[BaseModel]) -> str:
    """The first paragraph of the model's own docstring (never one inherited from a base class)."""
    doc = inspect.cleandoc(model.__dict__.get("__doc__") or "")
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def _plain(value: Any) -> Any:
    """Enums to their values, tuples to lists: only YAML-safe plain data goes into a CRD."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
