"""x-kubernetes-validations rules, evaluated with cel-python (pure Python CEL).

Covers what our rules need and what the API server offers them: ``self``, ``oldSelf`` on updates
(transition rules run only where an old value exists), has(), comparisons, && and ||, the ternary.
Kubernetes' CEL extension libraries (quantity(), url(), ...) are not available.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import celpy

_OLD_SELF = re.compile(r"\boldSelf\b")


class CelError(Exception):
    """A rule that does not compile or does not evaluate to a bool."""


@lru_cache(maxsize=256)
def _program(rule: str) -> Any:
    env = celpy.Environment()
    try:
        return env.program(env.compile(rule))
    except celpy.CELParseError as exc:
        raise CelError(f"compilation failed: {exc}") from exc


def compile_rule(rule: str) -> None:
    """Raise CelError when a rule does not parse (used by the CRD tests)."""
    _program(rule)


def is_transition_rule(rule: str) -> bool:
    return bool(_OLD_SELF.search(rule))


def evaluate(rule: str, self_value: Any, old_value: Any = None) -> bool:
    """The rule's verdict on a value (and its old value, for transition rules).

    A rule is a pure function of its values, and most writes carry values the rule has judged before (a status
    patch leaves the spec as it was), while cel-python interprets the rule's tree anew at each call: so the
    verdicts on values that JSON can spell are remembered, keyed by the rule and the values' JSON (which tells
    1 from 1.0 and from true, as CEL does). An error is never remembered: it is raised again each time."""
    try:
        key = (rule, json.dumps(self_value, sort_keys=True), json.dumps(old_value, sort_keys=True))
    except (TypeError, ValueError):
        return _evaluate(rule, self_value, old_value)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        verdict = _evaluate(rule, self_value, old_value)
        if len(_VERDICTS) >= _VERDICTS_KEPT:
            _VERDICTS.pop(next(iter(_VERDICTS)))
        _VERDICTS[key] = verdict
    return verdict


_VERDICTS: dict[tuple[str, str, str], bool] = {}
_VERDICTS_KEPT = 4096


def _evaluate(rule: str, self_value: Any, old_value: Any) -> bool:
    activation = {"self": celpy.json_to_cel(self_value)}
    if old_value is not None:
        activation["oldSelf"] = celpy.json_to_cel(old_value)
    try:
        result = _program(rule).evaluate(activation)
    except celpy.CELEvalError as exc:
        raise CelError(_error_text(exc)) from exc
    if isinstance(result, celpy.CELEvalError):
        raise CelError(_error_text(result))
    if not isinstance(result, celpy.celtypes.BoolType):
        raise CelError(f"rule returned {type(result).__name__}, not a bool")
    return bool(result)


def _error_text(exc: Exception) -> str:
    """cel-python's error worded as cel-go's where they differ: a string duration() or timestamp() cannot
    read (or a duration out of range) is cel-python's "return error for overflow" (with the ValueError
    behind it), cel-go's type conversion error -- the words kube-apiserver shows."""
    args = exc.args
    first = str(args[0]) if args else str(exc)
    cause = " ".join(str(a) for a in (args[2] if len(args) > 2 and isinstance(args[2], tuple) else ()))
    if first == "return error for overflow" and cause.startswith(("Invalid duration", "range error")):
        return "type conversion error from 'string' to 'google.protobuf.Duration'"
    if first == "return error for overflow" and cause.startswith("Unable to parse string"):
        return "type conversion error from 'string' to 'google.protobuf.Timestamp'"
    return first
