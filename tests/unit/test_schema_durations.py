"""The CRD's duration pattern and homecluster.durations.parse_duration accept exactly the same strings.

The API server checks the pattern with Go's regexp (RE2); the validator uses RE2 too (google-re2), so a
disagreement found here is one a real cluster would show: the API server accepting a duration the
controller then cannot parse, or refusing one the docs promise.
"""
from __future__ import annotations

from datetime import timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from homecluster.api.crd import all_crds
from homecluster_lab.crdcheck.openapi import crd_schema, validate
from homecluster.api.types import Duration
from homecluster.durations import DurationError, parse_duration

_SPEC = crd_schema(all_crds()["Group"])["properties"]["spec"]
# The syntax only: the field's maximum (maxLength and the CEL duration rule, homecluster.limits) is
# checked by tests/lab/test_apiserver_limits.py and tests/unit/test_extreme_values.py.
_FIELD = {k: v for k, v in _SPEC["properties"]["maxNodeProvisionTime"].items()
          if k not in ("maxLength", "x-kubernetes-validations")}
_MODEL = TypeAdapter(Duration)


def crd_accepts(text: str) -> bool:
    return validate(text, _FIELD) == []


def parser_accepts(text: str) -> bool:
    try:
        parse_duration(text)
    except DurationError:
        return False
    return True


def model_accepts(text: str) -> bool:
    try:
        _MODEL.validate_python(text)
    except ValidationError:
        return False
    return True


# Strings near the language: digits, dots, unit letters, and a few characters that must be refused.
# A trailing newline is left out here; see test_trailing_newline below.
_near = st.text(alphabet="0123456789.hmsun d-+µ", max_size=12)
_part = st.tuples(st.integers(0, 10_000), st.sampled_from(["", ".5", ".25"]), st.sampled_from(["h", "m", "s", "ms"]))
_valid = st.lists(_part, min_size=1, max_size=4).map(lambda ps: "".join(f"{n}{f}{u}" for n, f, u in ps))


@settings(max_examples=400, deadline=None)
@given(_near)
@example("12m10s")
@example("1h30m")
@example("0s")
@example("1.5s")
@example("")
@example("5")
@example("1.s")
@example(".5s")
@example("1d")
@example("-5s")
@example("5 m")
def test_crd_pattern_and_parser_agree(text):
    assert crd_accepts(text) == parser_accepts(text) == model_accepts(text), repr(text)


@settings(max_examples=200, deadline=None)
@given(_valid)
def test_well_formed_durations_are_accepted_by_all_three(text):
    assert crd_accepts(text) and parser_accepts(text) and model_accepts(text)
    assert parse_duration(text) >= timedelta(0)


def test_the_crd_refusal_names_the_field_and_the_pattern():
    (error,) = validate({"maxSize": 1, "maxNodeProvisionTime": "1d", "template": {"capacity": {
        "cpu": 1, "memory": 1, "pods": 1}}}, _SPEC)
    assert str(error).startswith('maxNodeProvisionTime: Invalid value: "1d": maxNodeProvisionTime in body should match')


def test_trailing_newline():
    assert not crd_accepts("90s\n")
    assert not model_accepts("90s\n")
    assert not parser_accepts("90s\n")
