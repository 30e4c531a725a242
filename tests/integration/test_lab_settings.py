"""The lab configs stretch the Job timeouts to the machine's load once, when a test builds its lab (issue 28)."""
from __future__ import annotations

from datetime import timedelta

import integration_pool
from integration_pool import SETTINGS, SHORT_SETTINGS, claim_budget, lab_settings, short_lab_config
from support.lab_settings import boot_window


def test_short_lab_config_stretches_the_job_timeouts_a_tests_own_too(monkeypatch, tmp_path):
    monkeypatch.setattr(integration_pool, "load_factor", lambda: 2.0)
    settings = short_lab_config(tmp_path).settings
    assert (settings["startup_job_timeout"], settings["shutdown_job_timeout"]) == ("50s", "60s")
    assert settings["shutdown_holdoff"] == SHORT_SETTINGS["shutdown_holdoff"]
    assert boot_window(settings) == 61.0  # what the MachineGone test waits out, from these settings
    # a test that sets a Job timeout for its own point (a 25 s boot inside it) gets it stretched the same way
    own = short_lab_config(tmp_path, startup_job_timeout="90s", shutdown_attempt_limit="2").settings
    assert (own["startup_job_timeout"], own["shutdown_job_timeout"], own["shutdown_attempt_limit"]) == \
        ("180s", "60s", "2")


def test_the_settings_users_get_the_same_room(monkeypatch):
    monkeypatch.setattr(integration_pool, "load_factor", lambda: 3.0)
    assert lab_settings()["startup_job_timeout"] == "90s" and lab_settings()["shutdown_job_timeout"] == "90s"
    assert lab_settings(readiness_gate="6s")["readiness_gate"] == "6s"  # only the Job timeouts
    assert SETTINGS["startup_job_timeout"] == "30s"  # the quiet figures themselves are left as written


def test_a_claims_default_deadline_outlasts_the_labs_boot_window(monkeypatch, tmp_path):
    """test_boot_check's 90 s startup Job at a load factor of 3.4: its boot window (317 s) is longer than the
    5 minutes a claim used to get, and the claim failed DeadlineExceeded before its startup Job could."""
    monkeypatch.setattr(integration_pool, "load_factor", lambda: 3.4)
    settings = short_lab_config(tmp_path, startup_job_timeout="90s").settings
    assert boot_window(settings) == 317.0
    assert claim_budget(settings) == timedelta(seconds=377)
    assert claim_budget(SHORT_SETTINGS) == timedelta(minutes=5)  # a quiet machine's claims as before
