"""The four patch formats the API server accepts. Pure functions over JSON-like values.

- JSON merge patch (RFC 7386): kopf's default and kubectl's for custom resources.
- JSON patch (RFC 6902) incl. `test`: kopf guards finalizer and status writes with
  `test /metadata/resourceVersion`; a failed op must surface as 422 (see errors.patch_rejected).
- Strategic merge patch: kubectl's format for built-in kinds (cordon, apply). Lists named in MERGE_KEYS are
  merged element-by-element by key; the `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/` and
  `$setElementOrder/` directives are honoured (order hints are accepted and ignored).
- Server-side apply is treated as a strategic merge (no managedFields ownership tracking).
"""
from __future__ import annotations

import copy
from typing import Any


class PatchError(Exception):
    """The patch cannot be applied to this object (answered as 422)."""


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _resolve(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for t in tokens:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError(f"path not found: {t}")
            cur = cur[t]
        elif isinstance(cur, list):
            try:
                cur = cur[int(t)]
            except (ValueError, IndexError) as exc:
                raise PatchError(f"invalid index {t}") from exc
        else:
            raise PatchError(f"cannot descend into {type(cur).__name__} at {t}")
    return cur


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                idx = int(last)
            except ValueError as exc:
                raise PatchError(f"invalid index {last}") from exc
            if idx < 0 or idx > len(parent):
                raise PatchError(f"index {idx} out of range")
            parent.insert(idx, value)
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"Unable to remove nonexistent key: {last}: missing value")
        return parent.pop(last)
    if isinstance(parent, list):
        try:
            return parent.pop(int(last))
        except (ValueError, IndexError) as exc:
            raise PatchError(f"Unable to remove index {last}") from exc
    raise PatchError("cannot remove from a scalar")


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid operation {op!r}")
        kind, tokens = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            _resolve(doc, tokens)  # must exist
            if not tokens:
                doc = copy.deepcopy(op.get("value"))
            else:
                _remove(doc, tokens)
                doc = _add(doc, tokens, copy.deepcopy(op.get("value")))
        elif kind == "move":
            value = _remove(doc, _pointer(op["from"]))
            doc = _add(doc, tokens, value)
        elif kind == "copy":
            doc = _add(doc, tokens, copy.deepcopy(_resolve(doc, _pointer(op["from"]))))
        elif kind == "test":
            try:
                actual = _resolve(doc, tokens)
            except PatchError as exc:
                raise PatchError(f"testing value {op['path']} failed: {exc}") from exc
            if actual != op.get("value"):
                raise PatchError(f"testing value {op['path']} failed: test failed")
        else:
            raise PatchError(f"unknown operation {kind!r}")
    return doc


# field name -> merge key ("" for lists of primitives merged as sets). Paths where the same field name uses
# another key (Service ports) are special-cased in _merge_key.
MERGE_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
    "env": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath", "ports": "containerPort",
    "conditions": "type", "addresses": "type", "ownerReferences": "uid", "imagePullSecrets": "name",
    "finalizers": "", "hostAliases": "ip", "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name", "podIPs": "ip", "hostIPs": "ip",
    "webhooks": "name",  # Validating/MutatingWebhookConfiguration (patchMergeKey name, as the real one)
}


def _merge_key(name: str, parent_path: tuple[str, ...]) -> str | None:
    if name == "ports" and parent_path[-1:] == ("spec",) and "template" not in parent_path:
        return "port" if "containers" not in parent_path else "containerPort"
    if name == "finalizers" and parent_path != ("metadata",):
        return None
    return MERGE_KEYS.get(name)


def strategic_merge(target: Any, patch: Any, path: tuple[str, ...] = ()) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [x for x in result[field] if x not in (value or [])]
            continue
        if value is None:
            result.pop(key, None)
            continue
        mk = _merge_key(key, path)
        if isinstance(value, list) and mk is not None:
            result[key] = _merge_list(result.get(key), value, mk, path + (key,))
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key), value, path + (key,))
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(current: Any, patch: list[Any], key: str, path: tuple[str, ...]) -> list[Any]:
    items = list(copy.deepcopy(current)) if isinstance(current, list) else []
    if key == "":  # set of primitives
        for v in patch:
            if isinstance(v, dict) and v.get("$patch") == "replace":
                return [x for x in patch if not isinstance(x, dict)]
            if v not in items:
                items.append(copy.deepcopy(v))
        return items
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [copy.deepcopy(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    for element in patch:
        if not isinstance(element, dict) or key not in element:
            items.append(copy.deepcopy(element))
            continue
        idx = next((i for i, x in enumerate(items) if isinstance(x, dict) and x.get(key) == element[key]), None)
        if element.get("$patch") == "delete":
            if idx is not None:
                items.pop(idx)
            continue
        if idx is None:
            items.append(strategic_merge({}, element, path))
        else:
            items[idx] = strategic_merge(items[idx], element, path)
    return items
