"""Hypothesis strategies derived from our CRD schemas (config/crd): one field of a known-good object changed
to a value its schema accepts, or to one it refuses (wrong type, out of range, too long or short, outside
the enum, pattern or date-time format, a required field removed). Imported by the tests as `crd_mutations`.

Each mutation carries the field's path as kube-apiserver writes it (spec.template.taints[0].effect), so a
refusal can be checked for naming the field. Values valid by the schema are drawn with hypothesis-jsonschema
from the field's own schema (Kubernetes extensions removed); fields that a CEL rule also constrains get
their valid values from the rule's own bound (durations) or are only mutated into invalid values.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "config" / "crd"
SAMPLES = REPO / "config" / "samples"
PLURAL_OF = {"Group": "groups", "Node": "nodes", "NodeClaim": "nodeclaims"}
SAMPLE_OF = {"Group": "infra_v2alpha1_group.yaml", "Node": "infra_v2alpha1_node_wol.yaml",
             "NodeClaim": "infra_v2alpha1_nodeclaim.yaml"}
# a value of a leaf the schema calls int-or-string or a Kubernetes quantity takes either JSON type
_SCALARS = {"string", "integer", "number", "boolean"}


@dataclass(frozen=True)
class Leaf:
    path: tuple[Any, ...]   # keys and list indexes from the object's root
    schema: dict[str, Any]
    required_by_parent: bool
    has_cel: bool           # a CEL rule on the field or on the object holding it

    @property
    def field(self) -> str:
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out


@dataclass(frozen=True)
class Mutation:
    kind: str
    obj: dict[str, Any]
    field: str
    valid: bool
    how: str


def spec_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRD_DIR / f"infra.homecluster.dev_{PLURAL_OF[kind]}.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def sample(kind: str) -> dict[str, Any]:
    return yaml.safe_load((SAMPLES / SAMPLE_OF[kind]).read_text())


def leaves(kind: str) -> list[Leaf]:
    """The scalar fields the sample object holds, with their schemas (walking the sample and schema together)."""
    out: list[Leaf] = []

    def walk(value: Any, schema: dict[str, Any], path: tuple, required: bool, parent_cel: bool) -> None:
        cel = bool(schema.get("x-kubernetes-validations"))
        if isinstance(value, dict) and "properties" in schema:
            for key, sub in value.items():
                if key in schema["properties"]:
                    walk(sub, schema["properties"][key], path + (key,), key in schema.get("required", ()), cel)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                walk(item, schema["items"], path + (i,), False, False)
        elif schema.get("type") in _SCALARS and not isinstance(value, (dict, list)):
            out.append(Leaf(path, schema, required, cel or parent_cel))

    walk(sample(kind)["spec"], spec_schema(kind), ("spec",), True, False)
    return out


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """The field's schema as plain JSON Schema: Kubernetes extensions and descriptions removed."""
    drop = {"description", "default", "x-kubernetes-validations", "x-kubernetes-int-or-string", "format"}
    return {k: v for k, v in schema.items() if k not in drop and not k.startswith("x-kubernetes-")}


def _set(obj: dict[str, Any], path: tuple, value: Any, delete: bool = False) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    at = out
    for part in path[:-1]:
        at = at[part]
    if delete:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return out


def _durations(limit_hours: int) -> st.SearchStrategy[str]:
    return st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, limit_hours), st.sampled_from(["h"])) | \
        st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, 59), st.sampled_from(["m", "s", "ms"]))


def valid_values(leaf: Leaf) -> st.SearchStrategy[Any] | None:
    rules = " ".join(r["rule"] for r in leaf.schema.get("x-kubernetes-validations", ()))
    bound = re.search(r"duration\('(\d+)h'\)", rules)
    if bound:
        return _durations(int(bound.group(1)))
    if leaf.has_cel or leaf.schema.get("format") or leaf.schema.get("x-kubernetes-int-or-string"):
        return None  # the value also meets a CEL rule or a format the plain schema does not state
    return from_schema(_plain(leaf.schema))


def invalid_values(leaf: Leaf) -> list[tuple[str, Any]]:
    """(how, value) pairs the field's schema refuses."""
    s, out = leaf.schema, []
    kind = s.get("type")
    if not s.get("x-kubernetes-int-or-string"):
        out.append(("wrong type", {"string": 7, "integer": "seven", "number": "seven", "boolean": "yes"}[kind]))
    if kind == "integer":
        out.append(("a fraction", 1.5))
    if "maximum" in s:
        out.append(("over maximum", s["maximum"] + (1 if kind == "integer" else 0.5)))
    if "minimum" in s:
        out.append(("under minimum", s["minimum"] - (1 if kind == "integer" else 0.5)))
    if "maxLength" in s:
        out.append(("too long", "a" * (s["maxLength"] + 1)))
    if s.get("minLength", 0) > 0:
        out.append(("too short", ""))
    if "enum" in s:
        out.append(("outside the enum", f"Not{s['enum'][0]}x"))
    if s.get("format") == "date-time":
        out.append(("not a date-time", "yesterday at noon"))
    if "pattern" in s:
        for candidate in ("", "not valid!", "-", "x" * 3):
            if not re.search(s["pattern"], candidate) and len(candidate) >= s.get("minLength", 0):
                out.append(("against the pattern", candidate))
                break
    return out


def mutations(kind: str) -> Iterator[tuple[Leaf, str, bool, Any]]:
    """Every (leaf, how, valid, value-or-strategy) this kind's sample allows; value None with how 'removed'."""
    for leaf in leaves(kind):
        valid = valid_values(leaf)
        if valid is not None:
            yield leaf, "valid value", True, valid
        for how, value in invalid_values(leaf):
            yield leaf, how, False, st.just(value)
        if leaf.required_by_parent:
            yield leaf, "removed", False, st.just(None)


def mutation(kind: str) -> st.SearchStrategy[Mutation]:
    options = list(mutations(kind))
    base = sample(kind)

    def build(choice: tuple, value: Any) -> Mutation:
        leaf, how, valid, _ = choice
        obj = _set(base, leaf.path, value, delete=(how == "removed"))
        return Mutation(kind, obj, leaf.field, valid, how)

    return st.sampled_from(options).flatmap(lambda choice: choice[3].map(lambda value: build(choice, value)))
