"""API objects as dicts, whether they arrive as dicts (raw API JSON) or typed models.

The builders accept either: the claim controller may hold kopf's dict bodies or the typed models of
homecluster.api. Typed models are dumped with their API field names (camelCase aliases). Fields are then read
with model.objects' accessors, the one reader of every kind.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def as_dict(obj: Any) -> dict[str, Any]:
    """Return the object as a plain dict in API field names; {} for None."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, exclude_none=True, mode="json")
    raise TypeError(f"expected an API object (a mapping or a typed model), got {type(obj).__name__}")
