"""The vocabularies of the model: claim phases, slot phases, power states, reasons.

All are str enums whose values are exactly what the API stores, so `ClaimPhase.READY == "ready"`
and a value can be written into a patch as is.
"""
from __future__ import annotations

from enum import Enum


class ClaimPhase(str, Enum):
    """NodeClaim.status.phase. Only pending is cancelable; failed and completed are terminal."""

    PENDING = "pending"
    BOOTING = "booting"
    READY = "ready"
    COMPLETED = "completed"
    FAILED = "failed"


class SlotPhase(str, Enum):
    """Node.status.phase: derived for display, decides nothing."""

    OFF = "off"
    PENDING = "pending"
    BOOTING = "booting"
    READY = "ready"
    DRAINING = "draining"


class PowerState(str, Enum):
    """Node.status.powerState: an observation (NodeReady=True), never an intent."""

    ON = "on"
    OFF = "off"


class Reason(str, Enum):
    """NodeClaim.status.reason: why a claim failed, or how it completed."""

    SLOT_NOT_FOUND = "SlotNotFound"
    GROUP_NOT_FOUND = "GroupNotFound"
    ATTEMPT_LIMIT_EXCEEDED = "AttemptLimitExceeded"
    SUPERSEDED = "Superseded"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    STARTUP_JOB_FAILED = "StartupJobFailed"
    STARTUP_JOB_TIMED_OUT = "StartupJobTimedOut"
    STARTUP_POD_BLOCKED = "StartupPodBlocked"  # its pod cannot start: a missing Secret, a bad image name
    REGISTRATION_TIMED_OUT = "RegistrationTimedOut"
    READINESS_GATE_TIMED_OUT = "ReadinessGateTimedOut"
    MACHINE_GONE = "MachineGone"
    RELEASED = "Released"
    CANCELED = "Canceled"


TERMINAL_PHASES = frozenset({ClaimPhase.COMPLETED, ClaimPhase.FAILED})
LIVE_PHASES = frozenset(ClaimPhase) - TERMINAL_PHASES


class UnknownPhaseError(ValueError):
    """A status.phase value outside the API's enum."""


def effective_phase(raw: str | ClaimPhase | None) -> ClaimPhase:
    """The phase the model acts on: a claim not yet stamped (None or "") is pending.

    That is what makes a request capacity from the instant the API server accepts it. A value
    outside the enum raises UnknownPhaseError naming the allowed values (the CRD schema refuses
    such values, so this only fires on a hand-built object).
    """
    if raw is None or raw == "":
        return ClaimPhase.PENDING
    try:
        return ClaimPhase(raw)
    except ValueError:
        allowed = ", ".join(p.value for p in ClaimPhase)
        raise UnknownPhaseError(f"status.phase {raw!r} is not a NodeClaim phase; expected one of: {allowed}") from None


def is_terminal(raw: str | ClaimPhase | None) -> bool:
    """failed and completed: the attempt is over and the claim frees its slot."""
    return effective_phase(raw) in TERMINAL_PHASES


def is_live(raw: str | ClaimPhase | None) -> bool:
    """pending (including empty), booting, ready: the claim wants its slot's machine."""
    return not is_terminal(raw)
