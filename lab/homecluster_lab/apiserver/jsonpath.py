"""The subset of kubectl JSONPath that CRD printer columns use. Pure.

Supports `.a.b`, `['a.b']`, `[n]`, `[*]` and filters `[?(@.type=="Ready")]` with == and !=.
"""
from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"""\.(?P<field>[A-Za-z0-9_$-]+)|\[(?P<bracket>[^\]]*)\]""")
_FILTER = re.compile(r"""^\?\(@\.(?P<path>[A-Za-z0-9_.-]+)\s*(?P<op>==|!=)\s*(?P<value>'[^']*'|"[^"]*"|[^)\s]+)\)$""")


def _steps(expr: str) -> list[tuple[str, Any]]:
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1]
    if expr.startswith("$"):
        expr = expr[1:]
    if expr and not expr.startswith((".", "[")):
        expr = "." + expr
    steps: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"unsupported JSONPath {expr!r} at {pos}")
        pos = m.end()
        if m["field"] is not None:
            steps.append(("field", m["field"]))
            continue
        inner = m["bracket"].strip()
        if inner == "*":
            steps.append(("all", None))
        elif inner.lstrip("-").isdigit():
            steps.append(("index", int(inner)))
        elif inner[:1] in "'\"":
            steps.append(("field", inner[1:-1]))
        elif fm := _FILTER.match(inner):
            value = fm["value"].strip("'\"")
            steps.append(("filter", (fm["path"].split("."), fm["op"], value)))
        else:
            raise ValueError(f"unsupported JSONPath segment [{inner}]")
    return steps


def _get(obj: Any, parts: list[str]) -> Any:
    for p in parts:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def _as_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def evaluate(obj: Any, expr: str) -> list[Any]:
    """All values the expression selects (empty when nothing matches)."""
    current = [obj]
    for kind, arg in _steps(expr):
        nxt: list[Any] = []
        for value in current:
            if kind == "field" and isinstance(value, dict) and arg in value:
                nxt.append(value[arg])
            elif kind == "index" and isinstance(value, list) and -len(value) <= arg < len(value):
                nxt.append(value[arg])
            elif kind == "all":
                if isinstance(value, list):
                    nxt.extend(value)
                elif isinstance(value, dict):
                    nxt.extend(value.values())
            elif kind == "filter" and isinstance(value, list):
                path, op, want = arg
                for item in value:
                    got = _get(item, path)
                    if got is None:
                        continue
                    if (_as_text(got) == want) == (op == "=="):
                        nxt.append(item)
        current = nxt
    return current
