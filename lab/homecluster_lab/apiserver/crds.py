"""CustomResourceDefinitions: turn a CRD object into a served resource, and apply its schema to objects.

The schema work (defaulting, pruning, validation with the API server's wording) is the project's own
`homecluster_lab.crdcheck.openapi`, imported lazily so that starting the server does not pay for it until a CRD
with a schema is written to.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from . import errors, meta
from .resources import ResourceType

_SYSTEM_FIELDS = ("apiVersion", "kind", "metadata")


def schema_module() -> ModuleType:
    return importlib.import_module("homecluster_lab.crdcheck.openapi")


def crd_errors(crd: dict[str, Any]) -> list[dict[str, str]]:
    """The few CRD checks clients trip over: the name must be <plural>.<group>, versions must exist."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes = []
    expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
    if crd.get("metadata", {}).get("name") != expected:
        causes.append({"reason": "FieldValueInvalid", "field": "metadata.name",
                       "message": f'Invalid value: "{crd.get("metadata", {}).get("name")}": '
                                  f"must be spec.names.plural+\".\"+spec.group"})
    if not spec.get("versions"):
        causes.append({"reason": "FieldValueRequired", "field": "spec.versions", "message": "Required value"})
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append({"reason": "FieldValueNotSupported", "field": "spec.scope",
                       "message": f'Unsupported value: "{spec.get("scope")}": supported values: '
                                  '"Cluster", "Namespaced"'})
    return causes


def resource_type(crd: dict[str, Any]) -> ResourceType:
    spec = crd["spec"]
    names = spec["names"]
    served = [v for v in spec["versions"] if v.get("served", True)]
    storage = [v["name"] for v in served if v.get("storage")]
    versions = storage + [v["name"] for v in served if v["name"] not in storage]
    return ResourceType(
        group=spec["group"], versions=versions, plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(), kind=names["kind"],
        namespaced=spec["scope"] == "Namespaced", short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        status_subresource=any("status" in (v.get("subresources") or {}) for v in served),
        status_on_create="clear" if any("status" in (v.get("subresources") or {}) for v in served) else "keep",
        strategic_merge=False,
        schemas={v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {} for v in served},
        printer_columns={v["name"]: v.get("additionalPrinterColumns") for v in served
                         if v.get("additionalPrinterColumns") is not None},
        crd_name=crd["metadata"]["name"],
        selectable_fields=tuple(sorted({f["jsonPath"].lstrip(".") for v in served
                                        for f in v.get("selectableFields") or [] if f.get("jsonPath")})),
    )


def established_status(crd: dict[str, Any]) -> dict[str, Any]:
    names = crd["spec"]["names"]
    stamp = meta.timestamp()
    accepted = {k: v for k, v in names.items()}
    accepted.setdefault("singular", names["kind"].lower())
    accepted.setdefault("listKind", names["kind"] + "List")
    return {
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": stamp},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": stamp},
        ],
        "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
    }


def admit_custom(rt: ResourceType, version: str, obj: dict[str, Any], old: dict[str, Any] | None,
                 field_validation: str) -> tuple[dict[str, Any], list[str]]:
    """Default, prune and validate a custom resource; returns (object, warnings) or raises 400/422."""
    schema = rt.schemas.get(version) or {}
    if not schema:
        return obj, []
    mod = schema_module()
    obj = mod.apply_defaults(obj, schema)
    system = {k: obj[k] for k in _SYSTEM_FIELDS if k in obj}
    body = {k: v for k, v in obj.items() if k not in _SYSTEM_FIELDS}
    pruned_body = mod.prune(body, schema)
    dropped = mod.pruned_paths(body, pruned_body)
    warnings: list[str] = []
    if dropped and field_validation == "Strict":
        detail = ", ".join(f'unknown field "{p}"' for p in dropped)
        raise errors.bad_request(f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: '
                                 f"strict decoding error: {detail}")
    if dropped and field_validation == "Warn":
        warnings = [f'unknown field "{p}"' for p in dropped]
    obj = {**system, **pruned_body}
    errs = mod.validate(obj, schema, old)
    if errs:
        name = obj.get("metadata", {}).get("name", "")
        causes = []
        for e in errs:
            text = str(e)
            field = e.path or "<nil>"  # a nil field.Path prints so, in the message and in the cause
            prefix = f"{field}: "
            causes.append({"reason": getattr(e, "reason", "FieldValueInvalid"),
                           "message": text[len(prefix):] if text.startswith(prefix) else text,
                           "field": field})
        raise errors.invalid(rt.kind, rt.group, name, causes, mod.invalid_message(rt.qualified_kind, name, errs))
    return obj, warnings
