"""Default, prune and validate a custom resource against its CRD's openAPIV3Schema, as the API server does.

Used by the tests (samples and bad manifests) and by the lab's API server, so that a manifest the
lab accepts is one a real cluster accepts, and a refusal reads the same. It implements the parts of
the apiextensions behaviour our CRDs use:

- ``apply_defaults``: ``default`` of absent properties (recursively, also inside defaulted values);
  a null in a non-nullable field becomes its default, or is dropped.
- ``prune``: unknown fields are dropped, except under ``x-kubernetes-preserve-unknown-fields``;
  apiVersion, kind and metadata always stay.
- ``validate``: type, required, enum, pattern (RE2, as Go's regexp), format date-time, minimum/maximum,
  minLength/maxLength, minItems/maxItems, min/maxProperties, list-map key and set uniqueness,
  int-or-string, and x-kubernetes-validations (CEL) with oldSelf on updates. Like the API server, the
  CEL rules are skipped when a blocking error (wrong type, unsupported value, required, too long, too
  many: the API server's hasBlockingErr) was found, and a note says so.
"""
from __future__ import annotations

import copy
import json
import re
from datetime import datetime
from functools import lru_cache
from typing import Any

import re2

from homecluster_lab.crdcheck import celeval
from homecluster_lab.crdcheck.errors import (
    OMIT, FieldError, aggregate, duplicate, forbidden, invalid, invalid_message, not_supported, required, too_long,
    too_many, type_invalid,
)

__all__ = ["FieldError", "apply_defaults", "prune", "validate", "invalid_message", "aggregate", "crd_schema"]

_ENVELOPE = ("apiVersion", "kind", "metadata")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_BLOCKING = ("FieldValueTypeInvalid", "FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
             "FieldValueTooMany")
_BLOCKED = ("some validation rules were not checked because the object was invalid; "
            "correct the existing errors to complete validation")


def crd_schema(crd: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    """The openAPIV3Schema of a CRD's version (the storage version when none is named)."""
    versions = crd["spec"]["versions"]
    for v in versions:
        if (version is None and v.get("storage")) or v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    raise KeyError(f"CRD {crd['metadata']['name']} has no version {version!r}")


# ---------------------------------------------------------------- paths and types

def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _type_ok(value: Any, expected: str) -> bool:
    actual = _json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    return re2.compile(pattern)


def _is_date_time(text: str) -> bool:
    if not _DATE_TIME.match(text):
        return False
    try:
        datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00").replace("t", "T"))
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- defaulting and pruning

def apply_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of obj with the schema's defaults applied (the API server does this on every read and write)."""
    out = copy.deepcopy(obj)
    _default(out, schema)
    return out


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value:
                if "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
            elif value[key] is None and not sub.get("nullable"):
                if "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                else:
                    del value[key]
        for key, item in value.items():
            sub = props.get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                _default(item, sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def prune(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of obj without the fields its schema does not know; apiVersion, kind and metadata are kept."""
    out = _prune(obj, schema)
    for key in _ENVELOPE:
        if key in obj:
            out[key] = copy.deepcopy(obj[key])
    return out


def pruned_paths(before: Any, after: Any, path: str = "") -> list[str]:
    """Field paths present in `before` and absent from `after`: what prune() dropped (what the API
    server reports as unknown fields under fieldValidation=Strict)."""
    found: list[str] = []
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            child = f"{path}.{key}" if path else key
            if key not in after:
                found.append(child)
            else:
                found.extend(pruned_paths(value, after[key], child))
    elif isinstance(before, list) and isinstance(after, list):
        for i, (b, a) in enumerate(zip(before, after)):
            found.extend(pruned_paths(b, a, f"{path}[{i}]"))
    return found


def _prune(value: Any, schema: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep_unknown = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
        embedded = schema.get("x-kubernetes-embedded-resource")
        out = {}
        for key, item in value.items():
            if key in props:
                out[key] = _prune(item, props[key])
            elif isinstance(extra, dict):
                out[key] = _prune(item, extra)
            elif keep_unknown or (embedded and key in _ENVELOPE):
                out[key] = copy.deepcopy(item)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        return [_prune(v, items) if isinstance(items, dict) else copy.deepcopy(v) for v in value]
    return value


# ---------------------------------------------------------------- validation

def validate(obj: dict[str, Any], schema: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """Every problem of obj against schema; old is the stored object on an update (for oldSelf rules)."""
    errors: list[FieldError] = []
    _check(obj, schema, "", errors)
    if not _has_rules(schema):
        return errors  # the API server runs no CEL validator, so it notes nothing either
    if any(e.reason in _BLOCKING for e in errors):
        errors.append(invalid("", None, _BLOCKED))
    else:
        _check_rules(obj, old, schema, "", errors)
    return errors


def _has_rules(schema: Any) -> bool:
    if isinstance(schema, dict):
        return bool(schema.get("x-kubernetes-validations")) or any(_has_rules(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_rules(v) for v in schema)
    return False


def _check(value: Any, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    if value is None:
        if not schema.get("nullable"):
            expected = schema.get("type") or "int-or-string"
            errors.append(type_invalid(path, "null", f'{path} in body must be of type {expected}: "null"'))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if _json_type(value) not in ("integer", "string"):
            errors.append(type_invalid(path, _json_type(value),
                                       f'{path} in body must be of type integer,string: "{_json_type(value)}"'))
            return
    elif schema.get("type") and not _type_ok(value, schema["type"]):
        actual = _json_type(value)
        if schema.get("format") and schema["type"] == "string":
            if isinstance(value, list):
                return  # kube-openapi skips the type check of a formatted string given an array (docs/lab.md)
            # kube-openapi names the format and the Go type it decoded ("int64", "float64"; "" for the rest)
            shown = {"integer": "int64", "number": "float64"}.get(actual, "")
            errors.append(type_invalid(path, shown, f'{path} in body must be of type {schema["format"]}: "{shown}"'))
            return
        errors.append(type_invalid(path, actual, f'{path} in body must be of type {schema["type"]}: "{actual}"'))
        # kube-apiserver runs the enum check too and reports it beside the type (a number or a boolean where an
        # enum of strings is wanted: "Unsupported value: 7: supported values: ..."); other shapes are not tried
        if "enum" in schema and isinstance(value, (int, float)) and value not in schema["enum"]:
            errors.append(not_supported(path, value, schema["enum"]))
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(not_supported(path, value, schema["enum"]))
        return
    if isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(value, schema, path, errors)
    elif isinstance(value, list):
        _check_array(value, schema, path, errors)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors)


def _check_string(value: str, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    # As kube-apiserver: the first of the length and pattern checks that fails is the only one reported (a
    # string too long or too short is not also said to miss the pattern).
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(too_long(path, value, schema["maxLength"]))
    elif "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(invalid(path, value, f"{path} in body should be at least {schema['minLength']} chars long"))
    elif "pattern" in schema and not _regex(schema["pattern"]).search(value):
        errors.append(invalid(path, value, f"{path} in body should match '{schema['pattern']}'"))
    if schema.get("format") == "date-time" and not _is_date_time(value):
        errors.append(type_invalid(path, value, f"{path} in body must be of type date-time: {json.dumps(value)}"))


def _num(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else repr(n)


def _check_number(value: float, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    if "minimum" in schema:
        low, exclusive = schema["minimum"], schema.get("exclusiveMinimum", False)
        if value < low or (exclusive and value == low):
            words = "greater than" if exclusive else "greater than or equal to"
            errors.append(invalid(path, value, f"{path} in body should be {words} {_num(low)}"))
    if "maximum" in schema:
        high, exclusive = schema["maximum"], schema.get("exclusiveMaximum", False)
        if value > high or (exclusive and value == high):
            words = "less than" if exclusive else "less than or equal to"
            errors.append(invalid(path, value, f"{path} in body should be {words} {_num(high)}"))
    step = schema.get("multipleOf")
    if step and (value / step) != int(value / step):
        errors.append(invalid(path, value, f"{path} in body should be a multiple of {_num(step)}"))


def _check_array(value: list[Any], schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(too_many(path, len(value), schema["maxItems"]))
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(invalid(path, len(value), f"{path} in body should have at least {schema['minItems']} items"))
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(item, items, _index(path, i), errors)
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: set[str] = set()
        for i, item in enumerate(value):
            if isinstance(item, dict):
                key = {k: item.get(k) for k in keys}
                token = json.dumps(key, sort_keys=True)
                if token in seen:
                    errors.append(duplicate(_index(path, i), key))
                seen.add(token)
    elif list_type == "set":
        seen_values: list[Any] = []
        for i, item in enumerate(value):
            if item in seen_values:
                errors.append(duplicate(_index(path, i), item))
            seen_values.append(item)


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    for key in schema.get("required") or []:
        if key not in value:
            errors.append(required(_child(path, key)))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(too_many(path, len(value), schema["maxProperties"]))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(invalid(path, len(value),
                              f"{path} in body should have at least {schema['minProperties']} properties"))
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in props:
            _check(item, props[key], _child(path, key), errors)
        elif isinstance(extra, dict):
            _check(item, extra, _child(path, key), errors)


# ---------------------------------------------------------------- CEL rules

def _rule_path(path: str, field_path: str | None) -> str:
    """Append a rule's fieldPath (".a.b" or "['a']") to the path of the value the rule sits on."""
    if not field_path:
        return path
    out = path
    for dotted, quoted in re.findall(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['([^']*)'\]", field_path):
        out = _child(out, dotted or quoted)
    return out


def _rule_error(rule: dict[str, Any], path: str, value: Any, schema_type: str, detail: str) -> FieldError:
    """A failed rule's error: the value itself for a scalar, none shown for an object or array."""
    target = _rule_path(path, rule.get("fieldPath"))
    shown = OMIT if schema_type in ("object", "array") else value
    reason = rule.get("reason")
    if reason == "FieldValueRequired":
        return required(target, detail)
    if reason == "FieldValueForbidden":
        return forbidden(target, detail)
    if reason == "FieldValueDuplicate":
        return duplicate(target, shown)
    return invalid(target, shown, detail)


def _check_rules(value: Any, old: Any, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    if value is None:
        return
    schema_type = schema.get("type") or ("" if not schema.get("x-kubernetes-int-or-string") else "int-or-string")
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule["rule"]
        if celeval.is_transition_rule(text) and old is None:
            continue  # transition rules run on updates, where an old value exists
        try:
            ok = celeval.evaluate(text, value, old)
        except celeval.CelError as exc:
            # kube-apiserver's ruleErrorString: the rule's message when it has one, else the rule
            errors.append(invalid(_rule_path(path, rule.get("fieldPath")), schema_type,
                                  f"{exc} evaluating rule: {(rule.get('message') or text).strip()}"))
            continue
        if not ok:
            errors.append(_rule_error(rule, path, value, schema_type, rule.get("message") or f"failed rule: {text}"))
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None:
                old_item = old.get(key) if isinstance(old, dict) else None
                _check_rules(item, old_item, sub, _child(path, key), errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        keys = schema.get("x-kubernetes-list-map-keys") if schema.get("x-kubernetes-list-type") == "map" else None
        old_by_key = {}
        if keys and isinstance(old, list):
            old_by_key = {json.dumps([o.get(k) for k in keys]): o for o in old if isinstance(o, dict)}
        for i, item in enumerate(value):
            old_item = None  # only map-lists correlate old and new items
            if keys and isinstance(item, dict):
                old_item = old_by_key.get(json.dumps([item.get(k) for k in keys]))
            _check_rules(item, old_item, schema["items"], _index(path, i), errors)
