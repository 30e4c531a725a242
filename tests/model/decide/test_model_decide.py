"""The decision table of the seed, row by row, and properties of decide() over every input."""
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homecluster.model.decide import Action, Decision, decide
from homecluster.model.phases import ClaimPhase, PowerState, SlotPhase

P, ON, OFF = ClaimPhase, PowerState.ON, PowerState.OFF

# One case per row of the seed's table, in its order:
# (row, live/last claim phase, marked for deletion, observed power, usable) -> (slot reports, what runs).
# "--" / "any" cells are pinned to one value here; the exhaustive test below covers the others.
TABLE = [
    (1, None, False, OFF, False, SlotPhase.OFF, Action.NOTHING),
    (2, None, False, ON, True, SlotPhase.DRAINING, Action.SHUTDOWN),
    (3, P.PENDING, False, OFF, False, SlotPhase.PENDING, Action.START),
    (4, P.PENDING, False, ON, True, SlotPhase.BOOTING, Action.MONITOR_BOOT),
    (5, P.BOOTING, False, ON, False, SlotPhase.BOOTING, Action.MONITOR_BOOT),
    (6, P.READY, False, ON, True, SlotPhase.READY, Action.NOTHING),
    (7, P.READY, False, ON, False, SlotPhase.BOOTING, Action.GATE),
    (8, P.READY, False, OFF, False, SlotPhase.BOOTING, Action.AWAIT_MACHINE_GONE),
    (9, P.BOOTING, True, ON, True, SlotPhase.DRAINING, Action.REVERSE),
    (10, P.READY, True, OFF, False, SlotPhase.OFF, Action.COMPLETE),
    (11, P.FAILED, False, ON, True, SlotPhase.DRAINING, Action.SHUTDOWN),
    (12, P.COMPLETED, False, OFF, False, SlotPhase.OFF, Action.NOTHING),
]


@pytest.mark.parametrize("row, claim, deleting, power, usable, phase, action", TABLE, ids=[f"row{r[0]}" for r in TABLE])
def test_table_row(row, claim, deleting, power, usable, phase, action):
    assert decide(claim, power, usable, deleting=deleting) == Decision(phase, action, row)


def test_table_has_twelve_distinct_rows():
    assert sorted(r[0] for r in TABLE) == list(range(1, 13))


# The "--" and "any" cells: the answer must not depend on them.
@pytest.mark.parametrize("claim, deleting, power, row", [
    (None, False, OFF, 1), (None, False, ON, 2), (P.PENDING, False, OFF, 3), (P.PENDING, False, ON, 4),
    (P.BOOTING, False, ON, 5), (P.BOOTING, False, OFF, 5), (P.READY, False, OFF, 8),
    (P.PENDING, True, ON, 9), (P.BOOTING, True, ON, 9), (P.READY, True, ON, 9),
    (P.PENDING, True, OFF, 10), (P.BOOTING, True, OFF, 10), (P.READY, True, OFF, 10),
    (P.FAILED, False, ON, 11), (P.COMPLETED, False, ON, 11), (P.FAILED, False, OFF, 12), (P.COMPLETED, False, OFF, 12),
])
def test_dont_care_cells(claim, deleting, power, row):
    answers = {decide(claim, power, usable, deleting=deleting) for usable in (True, False)}
    assert len(answers) == 1
    assert answers.pop().row == row


@pytest.mark.parametrize("claim", [None, P.FAILED, P.COMPLETED])
@pytest.mark.parametrize("power", [ON, OFF])
def test_deletion_mark_is_ignored_without_a_live_claim(claim, power):
    assert decide(claim, power, True, deleting=True) == decide(claim, power, True, deleting=False)


def test_an_unstamped_claim_is_pending():
    assert decide("", OFF, False) == decide(P.PENDING, OFF, False)
    assert decide("", ON, True).row == 4


def test_raw_api_strings_are_read_like_enums():
    assert decide("failed", "on", False).row == 11
    assert decide("ready", "on", True).row == 6


def test_every_row_is_reachable_and_only_those():
    seen = {decide(c, p, u, deleting=d).row
            for c, p, u, d in itertools.product([None, *P], [ON, OFF], [True, False], [True, False])}
    assert seen == set(range(1, 13))


phases = st.one_of(st.none(), st.sampled_from(list(ClaimPhase)))
powers = st.sampled_from(list(PowerState))


@given(claim=phases, power=powers, usable=st.booleans(), deleting=st.booleans())
def test_total_and_deterministic(claim, power, usable, deleting):
    first = decide(claim, power, usable, deleting=deleting)
    assert isinstance(first, Decision)
    assert isinstance(first.phase, SlotPhase) and isinstance(first.action, Action)
    assert 1 <= first.row <= 12
    assert decide(claim, power, usable, deleting=deleting) == first


@given(claim=phases, power=powers, usable=st.booleans(), deleting=st.booleans())
def test_never_powers_on_without_a_live_claim_nor_for_a_deleted_one(claim, power, usable, deleting):
    action = decide(claim, power, usable, deleting=deleting).action
    if action == Action.START:
        assert claim in (P.PENDING,), "only a live pending claim starts a boot"
        assert not deleting
        assert power == OFF


@given(claim=phases, power=powers, usable=st.booleans(), deleting=st.booleans())
def test_machine_wanted_iff_live_claim(claim, power, usable, deleting):
    """The one rule: an on machine is shut down exactly when no live, undeleted claim wants it."""
    action = decide(claim, power, usable, deleting=deleting).action
    wanted = claim in (P.PENDING, P.BOOTING, P.READY) and not deleting
    if power == ON:
        assert (action in (Action.SHUTDOWN, Action.REVERSE)) == (not wanted)


@given(claim=phases, power=powers, usable=st.booleans(), deleting=st.booleans())
def test_slot_reports_ready_only_for_a_ready_claim_on_a_usable_machine(claim, power, usable, deleting):
    phase = decide(claim, power, usable, deleting=deleting).phase
    assert (phase == SlotPhase.READY) == (claim == P.READY and not deleting and power == ON and usable)
