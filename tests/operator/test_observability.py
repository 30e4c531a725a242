"""Logs name claim, slot and attempt (text and JSON); metrics live on a registry of their own."""
from __future__ import annotations

import ast
import json
import logging
from pathlib import Path

from homecluster.logging import JsonFormatter, claim_log, slot_log
from homecluster.metrics import Metrics

CLAIM = {"metadata": {"name": "c1"}, "spec": {"slotRef": "worker-01"}, "status": {"attempt": 2}}


def test_claim_lines_name_claim_slot_attempt(caplog):
    log = logging.getLogger("test.claims")
    with caplog.at_level(logging.INFO, logger="test.claims"):
        claim_log(log, CLAIM).info("booting -> ready")
    record = caplog.records[-1]
    assert record.getMessage() == "claim=c1 slot=worker-01 attempt=2: booting -> ready"
    doc = json.loads(JsonFormatter().format(record))
    assert (doc["claim"], doc["slot"], doc["attempt"]) == ("c1", "worker-01", 2)
    odd = {**CLAIM, "metadata": {"name": "odd%sname"}}
    with caplog.at_level(logging.INFO, logger="test.claims"):
        claim_log(log, odd).info("booting -> %s", "ready")  # the prefix is text, never a format
    assert caplog.records[-1].getMessage() == "claim=odd%sname slot=worker-01 attempt=2: booting -> ready"


def test_slot_lines_name_the_slot_as_a_field_and_once(caplog):
    """A line about a slot alone (a failed pass, a cordon, a removal): `slot "worker-01": ` in text, the slot
    as a field in JSON and not in the message (issue 26: the slot as a field, not repeated in the message)."""
    log = logging.getLogger("test.slots")
    with caplog.at_level(logging.INFO, logger="test.slots"):
        slot_log(log, "worker-01").warning("pass failed (%s); retrying in %.1fs", "HTTP 500", 1.0)
        slot_log(log, "odd%sname").info("removed")  # the prefix is text, never a format (no TypeError)
        slot_log(log, "odd%sname").info("removed %s", "now")
        slot_log(log, "worker-01").debug("not shown at INFO")
    first, second, third = caplog.records[-3:]
    assert first.getMessage() == 'slot "worker-01": pass failed (HTTP 500); retrying in 1.0s'
    doc = json.loads(JsonFormatter().format(first))
    assert doc["slot"] == "worker-01" and doc["message"] == "pass failed (HTTP 500); retrying in 1.0s"
    assert "claim" not in doc and "attempt" not in doc
    assert second.getMessage() == 'slot "odd%sname": removed'
    assert third.getMessage() == 'slot "odd%sname": removed now'


CONTROLLER = Path(__file__).resolve().parents[2] / "controller" / "homecluster"
LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical"}


def test_no_log_line_names_its_slot_inside_the_message_only():
    """Every line about a slot goes through slot_log (or claim_log): a format that starts `slot "%s"` would give
    JSON no slot field."""
    found = []
    for path in sorted(CONTROLLER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOG_METHODS \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                    and node.args[0].value.startswith(('slot "%s"', "slot %s", 'slot "{')):
                found.append(f"{path.relative_to(CONTROLLER)}:{node.lineno}")
    assert found == [], f"use homecluster.logging.slot_log at: {found}"


def test_metrics_are_per_instance_and_count_claims_by_phase():
    a, b = Metrics(), Metrics()
    a.transitions.labels("ready", "").inc()
    a.watch_claims(lambda: [("ready", "workers"), ("ready", "workers"), ("failed", "workers")])
    text = a.render().decode()
    assert 'homecluster_claims{group="workers",phase="ready"} 2.0' in text
    assert 'homecluster_claim_transitions_total{phase="ready",reason=""} 1.0' in text
    assert "homecluster_claim_transitions_total{" not in b.render().decode()


def test_run_flags_fall_back_to_env_and_self_signed_certs_are_generated(tmp_path, monkeypatch):
    import argparse
    import ssl

    from homecluster.operator import main

    monkeypatch.setenv("HOMECLUSTER_STARTUP_JOB_TIMEOUT", "2m")
    monkeypatch.setenv("HOMECLUSTER_WORKERS", "3")
    parser = argparse.ArgumentParser()
    main.add_arguments(parser)
    args = parser.parse_args(["--webhook-self-signed-dir", str(tmp_path / "certs"), "--attempt-limit", "5"])
    settings = main.settings_from(args)
    assert settings.startup_job_timeout.total_seconds() == 120 and settings.attempt_limit == 5
    assert int(args.workers) == 3
    cert, key, ca = main.webhook_files(args)
    ctx = ssl.create_default_context(cafile=ca)  # the serving cert chains to the written CA
    ctx.load_cert_chain(cert, key)
    assert main.webhook_files(args) == (cert, key, ca)  # kept, not regenerated


def test_json_lines_carry_utc_rfc3339_subsecond_times_and_claim_fields_not_repeated(capsys, monkeypatch):
    """`homecluster run --log-format json`, as configure() installs it: one line, time in UTC with
    milliseconds (a log shipper in any zone orders lines within a second), claim and slot as fields."""
    import datetime as dt
    import re
    import time

    from homecluster.logging import configure

    monkeypatch.setenv("TZ", "Asia/Tokyo")  # nine hours from UTC: a local time would show
    time.tzset()
    configure("json", "INFO")
    try:
        claim_log(logging.getLogger("test.json"), CLAIM).info("booting -> %s", "ready")
    finally:
        configure("text", "INFO")
        monkeypatch.undo()
        time.tzset()
    line = capsys.readouterr().err.strip().splitlines()[-1]
    doc = json.loads(line)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", doc["time"]), doc["time"]
    stamped = dt.datetime.fromisoformat(doc["time"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.timezone.utc) - stamped).total_seconds()) < 60  # UTC, not local time
    assert doc["message"] == "booting -> ready"
    assert (doc["claim"], doc["slot"], doc["attempt"]) == ("c1", "worker-01", 2)
