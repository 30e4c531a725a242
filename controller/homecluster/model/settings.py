"""The durations and bounds the model runs on, with the specification's defaults.

Every duration is a setting so that tests (and impatient labs) can shorten them; the boot floor is
computed from them rather than hard-coded, so the formula "deadline = requestedAt + max(floor,
maxNodeProvisionTime)" stays true whatever the settings are.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from homecluster.durations import DurationError, format_duration, parse_duration


class SettingsError(ValueError):
    """A setting with a bad value or an unknown name; the message names the setting and the fix."""


@dataclass(frozen=True)
class Settings:
    """Durations and bounds of one attempt, one boot and one scale-down.

    The six terms of `boot_floor` are the deadlines one attempt can consume in series, plus one
    sleep at its ceiling and a minute of slack: the clock of spec.deadlineAt starts at requestedAt,
    before the startup Job exists, so a budget shorter than their sum kills a claim inside the boot
    it is still paying for.
    """

    startup_job_timeout: timedelta = timedelta(minutes=5)
    job_poll_interval: timedelta = timedelta(seconds=30)
    registration_wait: timedelta = timedelta(seconds=90)
    readiness_gate: timedelta = timedelta(minutes=4)
    uncordon_retry_ceiling: timedelta = timedelta(seconds=10)
    slack: timedelta = timedelta(minutes=1)
    attempt_limit: int = 3
    shutdown_attempt_limit: int = 3
    shutdown_holdoff: timedelta = timedelta(minutes=30)
    shutdown_job_timeout: timedelta = timedelta(minutes=10)
    # how long a terminal claim is kept when neither the claim nor its Group says
    claim_ttl: timedelta = timedelta(seconds=600)
    # how long a Job's pod must have kept failing to start (a FailedMount repeated over this span, a
    # CreateContainerConfigError on a pod this old) before it is taken as blocked, not as a passing hiccup
    pod_blocked_settle: timedelta = timedelta(seconds=30)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type in ("timedelta", timedelta):
                if not isinstance(value, timedelta) or value < timedelta(0):
                    raise SettingsError(f"setting {f.name}: {value!r} is not a non-negative duration; use e.g. \"90s\"")
            elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingsError(f"setting {f.name}: {value!r} is not a whole number >= 1; use e.g. \"3\"")

    @property
    def boot_floor(self) -> timedelta:
        """The least boot budget of any claim: 12m10s with the defaults."""
        return (
            self.startup_job_timeout
            + self.job_poll_interval
            + self.registration_wait
            + self.readiness_gate
            + self.uncordon_retry_ceiling
            + self.slack
        )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The setting names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Settings":
        """Build settings from strings as a CLI or a config file gives them.

        Durations are Go-style strings ("2s", "12m10s"), or timedeltas; bounds are whole numbers
        or their decimal strings. Names not given keep their defaults. An unknown name or a bad
        value raises SettingsError naming the setting, so a typo never silently falls back to a
        default. A key may use dashes instead of underscores ("startup-job-timeout").
        """
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        parsed: dict[str, Any] = {}
        for raw_key, raw_value in values.items():
            key = str(raw_key).strip().lower().replace("-", "_")
            if key not in kinds:
                raise SettingsError(f"unknown setting {raw_key!r}; known settings: {', '.join(kinds)}")
            if kinds[key] in ("timedelta", timedelta):
                parsed[key] = _duration(key, raw_value)
            else:
                parsed[key] = _count(key, raw_value)
        return cls(**parsed)

    @classmethod
    def from_env(cls, environ: Mapping[str, str], prefix: str = "HOMECLUSTER_") -> "Settings":
        """Build settings from environment variables such as HOMECLUSTER_STARTUP_JOB_TIMEOUT=2s.

        Only variables that name a setting are read (the prefix is shared with other options of
        the operator, so other HOMECLUSTER_* variables are not an error). The environment is passed
        in, never read here.
        """
        wanted = {prefix + name.upper(): name for name in cls.names()}
        return cls.from_mapping({wanted[k]: v for k, v in environ.items() if k in wanted})

    def as_strings(self) -> dict[str, str]:
        """The settings as from_mapping reads them back (for logs and --help defaults)."""
        out = {}
        for name in self.names():
            value = getattr(self, name)
            out[name] = format_duration(value) if isinstance(value, timedelta) else str(value)
        return out


def _duration(name: str, value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    try:
        return parse_duration(str(value).strip() if isinstance(value, str) else value)
    except DurationError as exc:
        raise SettingsError(f"setting {name}: {exc}") from None


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise SettingsError(f"setting {name}: {value!r} is not a whole number; use e.g. \"3\"")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip(), 10)
    except ValueError:
        raise SettingsError(f"setting {name}: {value!r} is not a whole number; use e.g. \"3\"") from None
