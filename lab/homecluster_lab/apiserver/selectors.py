"""Label and field selectors: the query-string grammar and metav1.LabelSelector objects. Pure.

kubectl drain lists pods with `fieldSelector=spec.nodeName=<node>`; if that filter were ignored it would
evict other nodes' pods, so field selectors are evaluated for real, on any dotted path.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from . import errors

Requirement = Callable[[dict[str, str]], bool]


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        raise ValueError(self.op)


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


_SET = re.compile(r"^(?P<key>[^\s!=]+)\s+(?P<op>in|notin)\s*\((?P<vals>[^)]*)\)$")


def parse_label_selector(text: str | None) -> list[LabelRequirement]:
    if not text:
        return []
    reqs = []
    for part in _split_top(text):
        if m := _SET.match(part):
            vals = tuple(v.strip() for v in m["vals"].split(",") if v.strip())
            reqs.append(LabelRequirement(m["key"], m["op"], vals))
        elif part.startswith("!"):
            reqs.append(LabelRequirement(part[1:].strip(), "!exists"))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            reqs.append(LabelRequirement(k.strip(), "!=", (v.strip(),)))
        elif "==" in part:
            k, v = part.split("==", 1)
            reqs.append(LabelRequirement(k.strip(), "=", (v.strip(),)))
        elif "=" in part:
            k, v = part.split("=", 1)
            reqs.append(LabelRequirement(k.strip(), "=", (v.strip(),)))
        elif re.match(r"^[A-Za-z0-9./_-]+$", part):
            reqs.append(LabelRequirement(part, "exists"))
        else:
            raise errors.bad_request(f"unable to parse requirement: found '{part}', expected: identifier")
    return reqs


def labels_match(reqs: list[LabelRequirement], obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    op: str  # "=" or "!="
    value: str

    def matches(self, obj: dict[str, Any]) -> bool:
        actual = field_value(obj, self.path)
        return (actual == self.value) if self.op == "=" else (actual != self.value)


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string a field selector compares: missing fields are "", booleans are "true"/"false"."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text: str | None) -> list[FieldRequirement]:
    if not text:
        return []
    reqs = []
    for part in _split_top(text):
        for op, norm in (("!=", "!="), ("==", "="), ("=", "=")):
            if op in part:
                k, v = part.split(op, 1)
                reqs.append(FieldRequirement(k.strip(), norm, v.strip()))
                break
        else:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
    return reqs


# The field labels kube-apiserver 1.35 indexes, per built-in resource ((group, plural) -> labels besides
# metadata.name and metadata.namespace): anything else is refused with 400 "field label not supported: X".
FIELD_LABELS: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods"): frozenset({"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                             "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
                             "status.nominatedNodeName"}),
    ("", "nodes"): frozenset({"spec.unschedulable"}),
    ("", "events"): frozenset({"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                               "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}),
    ("", "secrets"): frozenset({"type"}),
    ("", "namespaces"): frozenset({"status.phase"}),
    ("batch", "jobs"): frozenset({"status.successful"}),
}
# Built-in resources with only the two metadata labels (the apiserver's default conversion, its own wording).
# Built-ins in neither table are not checked.
METADATA_ONLY: frozenset[tuple[str, str]] = frozenset({("", "configmaps")})


def check_field_labels(key: tuple[str, str], reqs: list[FieldRequirement], *, custom: bool = False,
                       namespaced: bool = True, selectable: tuple[str, ...] = ()) -> None:
    """Refuse, as kube-apiserver does, a field selector on a field the resource does not index. A custom
    resource (`custom`) indexes metadata.name, metadata.namespace when namespaced, and its CRD's
    selectableFields (`selectable`, without the leading dot)."""
    if custom:
        supported = {"metadata.name", *selectable} | ({"metadata.namespace"} if namespaced else set())
        for req in reqs:
            if req.path not in supported:
                raise errors.bad_request(f"field label not supported: {req.path}")
        return
    if key in METADATA_ONLY:
        for req in reqs:
            if req.path not in ("metadata.name", "metadata.namespace"):
                raise errors.bad_request(f'"{req.path}" is not a known field selector: only "metadata.name", '
                                         '"metadata.namespace"')
        return
    supported = FIELD_LABELS.get(key)
    if supported is None:
        return
    for req in reqs:
        if req.path not in supported and req.path not in ("metadata.name", "metadata.namespace"):
            raise errors.bad_request(f"field label not supported: {req.path}")


def fields_match(reqs: list[FieldRequirement], obj: dict[str, Any]) -> bool:
    return all(r.matches(obj) for r in reqs)


def selector_object_matches(selector: dict[str, Any] | None, labels: dict[str, str], *,
                            empty_matches_all: bool = True) -> bool:
    """A metav1.LabelSelector ({matchLabels, matchExpressions}) against a label map."""
    if selector is None:
        return empty_matches_all
    match_labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not match_labels and not exprs:
        return empty_matches_all
    for k, v in match_labels.items():
        if labels.get(k) != v:
            return False
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for e in exprs:
        req = LabelRequirement(e["key"], ops[e["operator"]], tuple(e.get("values") or ()))
        if not req.matches(labels):
            return False
    return True
