"""Logs name claim, slot and attempt (text and JSON); metrics live on a registry of their own."""
from __future__ import annotations

import json
import logging

from homecluster.logging import JsonFormatter, claim_log
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
