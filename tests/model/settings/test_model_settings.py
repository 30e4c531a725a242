"""Settings: the seed's defaults, the floor as their sum, and building from strings."""
from datetime import timedelta

import pytest

from homecluster.model.settings import Settings, SettingsError


def test_defaults_are_the_seeds():
    s = Settings()
    assert s.startup_job_timeout == timedelta(minutes=5)
    assert s.job_poll_interval == timedelta(seconds=30)
    assert s.registration_wait == timedelta(seconds=90)
    assert s.readiness_gate == timedelta(minutes=4)
    assert s.uncordon_retry_ceiling == timedelta(seconds=10)
    assert s.slack == timedelta(minutes=1)
    assert (s.attempt_limit, s.shutdown_attempt_limit) == (3, 3)
    assert s.shutdown_holdoff == timedelta(minutes=30)
    assert s.shutdown_job_timeout == timedelta(minutes=10)
    assert s.claim_ttl == timedelta(seconds=600)
    assert s.boot_floor == timedelta(minutes=12, seconds=10)


def test_frozen():
    with pytest.raises(AttributeError):
        Settings().attempt_limit = 5


def test_from_mapping_parses_strings_and_keeps_the_rest():
    s = Settings.from_mapping({"startup_job_timeout": "2s", "readiness-gate": "1m30s", "attempt_limit": "5"})
    assert s.startup_job_timeout == timedelta(seconds=2)
    assert s.readiness_gate == timedelta(seconds=90)
    assert s.attempt_limit == 5
    assert s.registration_wait == timedelta(seconds=90)
    assert s.boot_floor == timedelta(seconds=2 + 30 + 90 + 90 + 10 + 60)


def test_from_mapping_accepts_typed_values():
    s = Settings.from_mapping({"slack": timedelta(seconds=1), "attempt_limit": 2})
    assert (s.slack, s.attempt_limit) == (timedelta(seconds=1), 2)


@pytest.mark.parametrize("values, named", [
    ({"startup_job_timeout": "five minutes"}, "startup_job_timeout"),
    ({"registration_wait": "-5s"}, "registration_wait"),
    ({"attempt_limit": "three"}, "attempt_limit"),
    ({"attempt_limit": "0"}, "attempt_limit"),
    ({"shutdown_attempt_limit": True}, "shutdown_attempt_limit"),
    ({"startup_timeout": "5m"}, "startup_timeout"),
])
def test_bad_input_names_the_setting(values, named):
    with pytest.raises(SettingsError, match=named):
        Settings.from_mapping(values)


def test_unknown_setting_lists_the_known_ones():
    with pytest.raises(SettingsError, match="known settings: startup_job_timeout"):
        Settings.from_mapping({"nope": "1s"})


def test_direct_construction_is_validated():
    with pytest.raises(SettingsError, match="slack"):
        Settings(slack=timedelta(seconds=-1))
    with pytest.raises(SettingsError, match="attempt_limit"):
        Settings(attempt_limit=0)


def test_from_env_reads_only_its_own_variables():
    env = {"HOMECLUSTER_STARTUP_JOB_TIMEOUT": "3s", "HOMECLUSTER_NAMESPACE": "homecluster", "PATH": "/bin"}
    assert Settings.from_env(env).startup_job_timeout == timedelta(seconds=3)
    with pytest.raises(SettingsError, match="slack"):
        Settings.from_env({"HOMECLUSTER_SLACK": "soon"})


def test_as_strings_round_trips():
    s = Settings.from_mapping({"startup_job_timeout": "2s", "claim_ttl": "1h"})
    assert Settings.from_mapping(s.as_strings()) == s
    assert Settings().as_strings()["registration_wait"] == "1m30s"


@pytest.mark.parametrize("field, value", [("attempt_limit", True), ("shutdown_attempt_limit", 2.0),
                                          ("attempt_limit", "3")])
def test_a_bound_built_directly_must_be_a_whole_number(field, value):
    """A bool is no count (True is not 1 attempt), nor a float or a string: only an int >= 1."""
    with pytest.raises(SettingsError, match=f"setting {field}: .* is not a whole number >= 1"):
        Settings(**{field: value})


def test_unknown_setting_lists_every_known_one_comma_separated():
    with pytest.raises(SettingsError) as err:
        Settings.from_mapping({"nope": "1s"})
    assert str(err.value) == "unknown setting 'nope'; known settings: " + ", ".join(Settings.names())


def test_from_mapping_reads_decimal_counts_and_trims_blanks():
    s = Settings.from_mapping({"attempt_limit": " 10 ", "shutdown_attempt_limit": "12", "slack": " 2s "})
    assert (s.attempt_limit, s.shutdown_attempt_limit, s.slack) == (10, 12, timedelta(seconds=2))
