"""No string from the API can forge a line of the operator's log (issue 23 item 10).

A Group's spec.jobs.image and serviceAccountName get their real grammar in the CRD (an image reference, a
DNS-1123 subdomain), so a newline is not even stored; and the text log escapes every control character of a
message and indents a traceback, so a string stored before (or arriving by another road) stays on its line.
"""
from __future__ import annotations

import copy
import io
import json
import logging
import time
from pathlib import Path

import pydantic
import pytest
import yaml

from homecluster import logging as hclogging
from homecluster.api import Group
from homecluster_lab.crdcheck.openapi import crd_schema, validate

CRD = yaml.safe_load((Path(__file__).resolve().parents[2] / "config/crd/infra.homecluster.dev_groups.yaml").read_text())
SCHEMA = crd_schema(CRD)
FORGED = "evil\n2026-12-03 12:00:00,000 INFO    homecluster.controller: claim=c1 slot=worker-01 attempt=1: ready"
IMAGES = ["busybox", "busybox:1.36", "ghcr.io/homecluster-dev/homecluster-runner:0.1.0", "localhost:5000/a/b_c:v1",
          "registry.lan/runner@sha256:" + "ab" * 32, "r.io/x/y:1.2@sha256:" + "0f" * 32, "a__b/c--d.e"]
BAD_IMAGES = [FORGED, "runner:1\n", "runner 1", "Runner", "runner:", "runner:-x", "/runner", "runner//x", "run\x1bner",
              "runner@sha256:abc", "x" * 513, "{{ lookup('pipe', 'id') }}"]
ACCOUNTS = ["homecluster-job", "a", "robot.pool-a"]
BAD_ACCOUNTS = ["evil\nline", "Robot", "-robot", "robot-", "robot_1", "a" * 254]


SAMPLE = yaml.safe_load((Path(__file__).resolve().parents[2] / "config/samples/infra_v2alpha1_group.yaml").read_text())


def group(**jobs):
    obj = copy.deepcopy(SAMPLE)
    obj["spec"]["jobs"] = jobs
    return obj


GOOD = [("image", v) for v in IMAGES] + [("serviceAccountName", v) for v in ACCOUNTS]
BAD = [("image", v) for v in BAD_IMAGES] + [("serviceAccountName", v) for v in BAD_ACCOUNTS]


@pytest.mark.parametrize("field, value", GOOD)
def test_the_crd_and_the_model_take_image_references_and_service_account_names(field, value):
    assert validate(group(**{field: value}), SCHEMA) == []
    Group.model_validate(group(**{field: value}))


@pytest.mark.parametrize("field, value", BAD)
def test_the_crd_and_the_model_refuse_what_breaks_the_fields_grammar(field, value):
    errors = validate(group(**{field: value}), SCHEMA)
    assert [e for e in errors if f"spec.jobs.{field}" in str(e)], errors
    with pytest.raises(pydantic.ValidationError):
        Group.model_validate(group(**{field: value}))


def test_the_image_pattern_answers_at_once_on_a_long_near_miss():
    started = time.monotonic()  # the bound is the point: a pattern that backtracks would take seconds here
    for text in ("a" + "-" * 500 + "!", "a." * 250 + "-", "a/" * 255 + "A"):
        validate(group(image=text), SCHEMA)
    assert time.monotonic() - started < 1.0


def _ours() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, "_homecluster", False)]


@pytest.fixture
def log_text():
    """What configure()'s handler writes (its stream swapped for one the test reads)."""
    stream = io.StringIO()
    real = hclogging.configure

    def configure(fmt):
        real(fmt)
        for handler in _ours():
            handler.setStream(stream)

    hclogging_configure[0] = configure
    yield stream
    for handler in _ours():
        logging.getLogger().removeHandler(handler)


hclogging_configure = [hclogging.configure]


def configure(fmt: str) -> None:
    hclogging_configure[0](fmt)


def test_a_refusal_that_quotes_a_forged_image_stays_on_its_line(log_text):
    configure("text")
    logging.getLogger("homecluster.controller").warning("refused: spec.jobs.image: Forbidden: image %r", FORGED)
    logging.getLogger("homecluster.controller").warning("refused: spec.jobs.image: Forbidden: image %s", FORGED)
    lines = log_text.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert all(" WARNING homecluster.controller: refused" in line for line in lines)
    assert "image evil\\n2026-12-03 12:00:00,000 INFO" in lines[1]


def test_every_control_character_and_unicode_line_break_is_escaped(log_text):
    configure("text")
    logging.getLogger("kopf.objects").error("x\r\x1b[2K\x85\u2028\u2029\x00y\tz")
    line = log_text.getvalue()
    assert line.count("\n") == 1 and line.endswith("x\\r\\x1b[2K\\x85\\u2028\\u2029\\x00y\tz\n"), repr(line)


def test_a_traceback_is_indented_under_its_line_even_when_its_message_forges_one(log_text):
    configure("text")
    try:
        raise ValueError(FORGED)
    except ValueError:
        logging.getLogger("homecluster.controller").exception("pass failed")
    first, *rest = log_text.getvalue().splitlines()
    assert first.endswith("homecluster.controller: pass failed")
    assert rest and all(line.startswith("    | ") for line in rest), rest


def test_json_lines_stay_one_record_a_line(log_text):
    configure("json")
    logging.getLogger("homecluster.controller").warning("image %s", FORGED + "\u2028")
    lines = log_text.getvalue().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["message"] == "image " + FORGED + "\u2028"
