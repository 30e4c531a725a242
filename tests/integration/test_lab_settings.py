"""The lab configs stretch the Job timeouts to the machine's load once, when a test builds its lab (issue 28)."""
from __future__ import annotations

import integration_pool
from integration_pool import SETTINGS, SHORT_SETTINGS, lab_settings, short_lab_config
from support.lab_settings import boot_window


def test_short_lab_config_stretches_the_job_timeouts_and_keeps_a_tests_own(monkeypatch, tmp_path):
    monkeypatch.setattr(integration_pool, "load_factor", lambda: 2.0)
    settings = short_lab_config(tmp_path).settings
    assert (settings["startup_job_timeout"], settings["shutdown_job_timeout"]) == ("50s", "60s")
    assert settings["shutdown_holdoff"] == SHORT_SETTINGS["shutdown_holdoff"]
    assert boot_window(settings) == 61.0  # what the MachineGone test waits out, from these settings
    # a test that sets a Job timeout for its own point gets that figure
    kept = short_lab_config(tmp_path, startup_job_timeout="90s", shutdown_attempt_limit="2").settings
    assert (kept["startup_job_timeout"], kept["shutdown_job_timeout"], kept["shutdown_attempt_limit"]) == \
        ("90s", "60s", "2")


def test_the_settings_users_get_the_same_room(monkeypatch):
    monkeypatch.setattr(integration_pool, "load_factor", lambda: 3.0)
    assert lab_settings()["startup_job_timeout"] == "90s" and lab_settings()["shutdown_job_timeout"] == "90s"
    assert lab_settings(readiness_gate="6s")["readiness_gate"] == "6s"
    assert SETTINGS["startup_job_timeout"] == "30s"  # the quiet figures themselves are left as written
