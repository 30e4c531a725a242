"""Phases, reasons and the live/terminal split."""
import pytest

from homecluster.model.phases import (
    LIVE_PHASES, TERMINAL_PHASES, ClaimPhase, PowerState, Reason, SlotPhase, UnknownPhaseError, effective_phase,
    is_live, is_terminal,
)


def test_values_are_the_api_strings():
    assert [p.value for p in ClaimPhase] == ["pending", "booting", "ready", "completed", "failed"]
    assert [p.value for p in SlotPhase] == ["off", "pending", "booting", "ready", "draining"]
    assert [p.value for p in PowerState] == ["on", "off"]
    assert {r.value for r in Reason} == {
        "SlotNotFound", "GroupNotFound", "AttemptLimitExceeded", "Superseded", "DeadlineExceeded",
        "StartupJobFailed", "StartupJobTimedOut", "StartupPodBlocked", "RegistrationTimedOut", "ReadinessGateTimedOut",
        "MachineGone", "Released", "Canceled"}


@pytest.mark.parametrize("raw", [None, "", "pending", ClaimPhase.PENDING])
def test_empty_phase_reads_as_pending(raw):
    assert effective_phase(raw) is ClaimPhase.PENDING


@pytest.mark.parametrize("raw, live", [
    (None, True), ("", True), ("pending", True), ("booting", True), ("ready", True),
    ("failed", False), ("completed", False),
])
def test_live_and_terminal(raw, live):
    assert is_live(raw) is live
    assert is_terminal(raw) is (not live)


def test_partition():
    assert LIVE_PHASES | TERMINAL_PHASES == set(ClaimPhase) and not LIVE_PHASES & TERMINAL_PHASES


def test_unknown_phase_names_the_allowed_values():
    with pytest.raises(UnknownPhaseError, match="expected one of: pending, booting"):
        effective_phase("Running")
